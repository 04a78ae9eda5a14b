//! The store's schema, as numbered steps. A store records the steps applied in
//! `schema_migrations`; opening it applies the missing ones in order, in one transaction
//! with their records (under an advisory lock on PostgreSQL, so replicas starting together
//! migrate once), so a crash leaves the store at its old version or the new one. Steps are
//! never edited once released: a change is a new step.

/// One schema step: its version, what it does, and its SQL per dialect.
pub struct Migration {
    pub version: i64,
    pub description: &'static str,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// Every step, oldest first. The last one's version is the version this build writes.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "per-person upstream tokens, pending consents, audit log",
        sqlite: "
            CREATE TABLE upstream_tokens (
                sub TEXT NOT NULL, api TEXT NOT NULL, sealed BLOB NOT NULL,
                expires_at INTEGER, scope TEXT NOT NULL DEFAULT '', updated_at INTEGER NOT NULL,
                PRIMARY KEY (sub, api));
            CREATE TABLE pending_consents (
                state TEXT PRIMARY KEY, sub TEXT NOT NULL, api TEXT NOT NULL,
                sealed BLOB NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
            CREATE TABLE audit_log (
                id INTEGER PRIMARY KEY AUTOINCREMENT, at_ms INTEGER NOT NULL,
                sub TEXT NOT NULL, api TEXT NOT NULL, endpoint TEXT NOT NULL,
                status INTEGER NOT NULL, latency_ms INTEGER NOT NULL);",
        postgres: "
            CREATE TABLE upstream_tokens (
                sub TEXT NOT NULL, api TEXT NOT NULL, sealed BYTEA NOT NULL,
                expires_at BIGINT, scope TEXT NOT NULL DEFAULT '', updated_at BIGINT NOT NULL,
                PRIMARY KEY (sub, api));
            CREATE TABLE pending_consents (
                state TEXT PRIMARY KEY, sub TEXT NOT NULL, api TEXT NOT NULL,
                sealed BYTEA NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);
            CREATE TABLE audit_log (
                id BIGSERIAL PRIMARY KEY, at_ms BIGINT NOT NULL,
                sub TEXT NOT NULL, api TEXT NOT NULL, endpoint TEXT NOT NULL,
                status INTEGER NOT NULL, latency_ms INTEGER NOT NULL);",
    },
    Migration {
        version: 2,
        description: "indexes for a person's audit trail and for expiring consents",
        sqlite: "
            CREATE INDEX audit_log_by_sub ON audit_log (sub, at_ms);
            CREATE INDEX pending_consents_by_expiry ON pending_consents (expires_at);",
        postgres: "
            CREATE INDEX audit_log_by_sub ON audit_log (sub, at_ms);
            CREATE INDEX pending_consents_by_expiry ON pending_consents (expires_at);",
    },
    Migration {
        version: 3,
        description: "audit events beside calls, with the client id and a detail; consents by \
                      person with their client; locks that replicas share",
        sqlite: "
            ALTER TABLE audit_log ADD COLUMN event TEXT NOT NULL DEFAULT 'call';
            ALTER TABLE audit_log ADD COLUMN client_id TEXT;
            ALTER TABLE audit_log ADD COLUMN detail TEXT;
            ALTER TABLE pending_consents ADD COLUMN client_id TEXT;
            CREATE INDEX pending_consents_by_sub ON pending_consents (sub, created_at);
            CREATE TABLE store_locks (
                name TEXT PRIMARY KEY, holder TEXT NOT NULL, until_ms INTEGER NOT NULL);",
        postgres: "
            ALTER TABLE audit_log ADD COLUMN event TEXT NOT NULL DEFAULT 'call';
            ALTER TABLE audit_log ADD COLUMN client_id TEXT;
            ALTER TABLE audit_log ADD COLUMN detail TEXT;
            ALTER TABLE pending_consents ADD COLUMN client_id TEXT;
            CREATE INDEX pending_consents_by_sub ON pending_consents (sub, created_at);
            CREATE TABLE store_locks (
                name TEXT PRIMARY KEY, holder TEXT NOT NULL, until_ms BIGINT NOT NULL);",
    },
    Migration {
        version: 4,
        description: "tool definitions of MCP servers, each approved, pending or rejected, by \
                      server, tool and digest",
        sqlite: "
            CREATE TABLE tool_pins (
                server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL,
                definition TEXT NOT NULL, state TEXT NOT NULL, seen_at INTEGER NOT NULL,
                decided_by TEXT, decided_at INTEGER,
                PRIMARY KEY (server, tool, digest));",
        postgres: "
            CREATE TABLE tool_pins (
                server TEXT NOT NULL, tool TEXT NOT NULL, digest TEXT NOT NULL,
                definition TEXT NOT NULL, state TEXT NOT NULL, seen_at BIGINT NOT NULL,
                decided_by TEXT, decided_at BIGINT,
                PRIMARY KEY (server, tool, digest));",
    },
];

/// The version this build writes.
pub fn latest() -> i64 {
    MIGRATIONS.last().map(|m| m.version).unwrap_or(0)
}

/// The refusal for a store at a version this build does not know.
pub fn too_new(found: i64) -> super::StoreError {
    super::StoreError::Incompatible(format!(
        "is at schema version {found}, newer than this shortlist knows ({}): upgrade shortlist",
        latest()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.description);
        }
    }
}
