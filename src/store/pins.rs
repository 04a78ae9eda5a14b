//! The SQL of tool pins, shared by both backends: one row per MCP server, tool and
//! definition digest, approved, pending or rejected. Writes are conditional, so replicas
//! listing the same servers and reviewers deciding at once never undo each other: a
//! definition seen again changes nothing, and a decision names the digest it is about.

use super::backend::PinDecision;

/// The columns of a [`ToolPin`](super::backend::ToolPin), in its field order.
const PIN_COLUMNS: &str =
    "server, tool, digest, definition, state, seen_at, decided_by, decided_at";

/// [`PIN_COLUMNS`] without the definitions.
const PIN_COLUMNS_LIGHT: &str = "server, tool, digest, '', state, seen_at, decided_by, decided_at";

/// The columns to read.
pub fn columns(definitions: bool) -> &'static str {
    if definitions {
        PIN_COLUMNS
    } else {
        PIN_COLUMNS_LIGHT
    }
}

/// Who approved a definition trusted on first use.
pub const FIRST_USE: &str = "first use";

/// Inserts a definition not seen before (1 server, 2 tool, 3 digest, 4 definition, 5 state,
/// 6 now, 7 decided by).
pub fn insert_sql(postgres: bool) -> &'static str {
    if postgres {
        "INSERT INTO tool_pins (server, tool, digest, definition, state, seen_at, decided_by,
             decided_at)
         VALUES ($1, $2, $3, $4, $5, $6::BIGINT, $7::TEXT,
             CASE WHEN $7::TEXT IS NULL THEN NULL ELSE $6::BIGINT END)
         ON CONFLICT (server, tool, digest) DO NOTHING"
    } else {
        "INSERT INTO tool_pins (server, tool, digest, definition, state, seen_at, decided_by,
             decided_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?7 IS NULL THEN NULL ELSE ?6 END)
         ON CONFLICT (server, tool, digest) DO NOTHING"
    }
}

/// Removes the tool's other pending definitions once a new one is pending (1 server, 2
/// tool, 3 the new digest).
pub fn drop_older_pending_sql(postgres: bool) -> &'static str {
    if postgres {
        "DELETE FROM tool_pins WHERE server = $1 AND tool = $2 AND digest <> $3
             AND state = 'pending'"
    } else {
        "DELETE FROM tool_pins WHERE server = ?1 AND tool = ?2 AND digest <> ?3
             AND state = 'pending'"
    }
}

/// The update a decision makes (1 server, 2 tool, 3 digest, 4 state, 5 by, 6 now).
pub fn decide_sql(postgres: bool) -> &'static str {
    if postgres {
        "UPDATE tool_pins SET state = $4, decided_by = $5, decided_at = $6
         WHERE server = $1 AND tool = $2 AND digest = $3"
    } else {
        "UPDATE tool_pins SET state = ?4, decided_by = ?5, decided_at = ?6
         WHERE server = ?1 AND tool = ?2 AND digest = ?3"
    }
}

/// The state a decision leaves, as stored.
pub fn decided_state(d: PinDecision) -> &'static str {
    d.state().as_str()
}
