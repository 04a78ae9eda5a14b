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

/// Who approved a changed definition served under the `warn` policy.
pub const WARNED: &str = "changed, served with a warning";

/// Removes what a new definition of a tool replaces (1 server, 2 tool, 3 the new digest):
/// a new pending one replaces the tool's other pending ones, a new automatic approval
/// (first use, `warn`) the tool's other automatic ones, so a server that changes a tool in
/// a loop leaves one row of each, never one per change. What a reviewer decided stays.
pub fn drop_replaced_sql(postgres: bool, automatic: bool) -> &'static str {
    match (postgres, automatic) {
        (true, false) => {
            "DELETE FROM tool_pins WHERE server = $1 AND tool = $2 AND digest <> $3
                 AND state = 'pending'"
        }
        (false, false) => {
            "DELETE FROM tool_pins WHERE server = ?1 AND tool = ?2 AND digest <> ?3
                 AND state = 'pending'"
        }
        (true, true) => {
            "DELETE FROM tool_pins WHERE server = $1 AND tool = $2 AND digest <> $3
                 AND state = 'approved'
                 AND decided_by IN ('first use', 'changed, served with a warning')"
        }
        (false, true) => {
            "DELETE FROM tool_pins WHERE server = ?1 AND tool = ?2 AND digest <> ?3
                 AND state = 'approved'
                 AND decided_by IN ('first use', 'changed, served with a warning')"
        }
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
