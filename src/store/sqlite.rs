//! The embedded store: one SQLite file (WAL journal), reached through a blocking
//! connection on tokio's blocking pool. One connection per process serialises writes,
//! which SQLite does anyway; replicas use PostgreSQL.

use super::backend::{
    AuditEntry, Backend, ConsentLimits, PinDecision, PinState, SealedConsent, SealedToken,
    SeenTool, ToolPin,
};
use super::migrations::{self, MIGRATIONS};
use super::StoreError;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a write waits for another process's lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub struct SqliteBackend {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

fn failed(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode as C;
    let msg = format!("sqlite:{}: {e}", path.display());
    match e.sqlite_error_code() {
        Some(C::DatabaseBusy | C::DatabaseLocked | C::CannotOpen | C::ReadOnly) => {
            StoreError::Unavailable(msg)
        }
        _ => StoreError::Failed(msg),
    }
}

impl SqliteBackend {
    /// Opens the file (creating it and its folder for their owner alone, see
    /// [`file_modes`](super::file_modes)), migrated to the latest version.
    pub async fn open(path: &Path) -> Result<SqliteBackend, StoreError> {
        SqliteBackend::open_at(path, migrations::latest()).await
    }

    /// Opens the file migrated only up to `version` (tests: a store as an older build
    /// left it).
    #[doc(hidden)]
    pub async fn open_at(path: &Path, version: i64) -> Result<SqliteBackend, StoreError> {
        let p = path.to_path_buf();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, StoreError> {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                super::file_modes::private_folder(dir).map_err(|e| {
                    StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
            super::file_modes::private_file(&p).map_err(|e| {
                StoreError::Unavailable(format!("cannot create {}: {e}", p.display()))
            })?;
            let mut conn = Connection::open(&p).map_err(|e| failed(&p, e))?;
            conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| failed(&p, e))?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| failed(&p, e))?;
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| failed(&p, e))?;
            migrate(&mut conn, version).map_err(|e| match e {
                StoreError::Failed(m) => StoreError::Failed(format!("{}: {m}", p.display())),
                other => other,
            })?;
            Ok(conn)
        })
        .await
        .map_err(|e| StoreError::Failed(format!("the store task failed: {e}")))??;
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection, off the async threads.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = Arc::clone(&self.conn);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let mut c = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut c).map_err(|e| failed(&path, e))
        })
        .await
        .map_err(|e| StoreError::Failed(format!("the store task failed: {e}")))?
    }
}

fn migrate(conn: &mut Connection, upto: i64) -> Result<(), StoreError> {
    let f = |e: rusqlite::Error| StoreError::Failed(e.to_string());
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(f)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .map_err(f)?;
    let found: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(f)?;
    if found > migrations::latest() {
        return Err(migrations::too_new(found));
    }
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > found && m.version <= upto)
    {
        tx.execute_batch(m.sqlite).map_err(f)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?1, ?2, ?3)",
            params![m.version, m.description, super::now()],
        )
        .map_err(f)?;
        tracing::info!(
            version = m.version,
            "state store migrated: {}",
            m.description
        );
    }
    tx.commit().map_err(f)
}

fn token_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SealedToken> {
    Ok(SealedToken {
        sub: r.get(0)?,
        api: r.get(1)?,
        sealed: r.get(2)?,
        expires_at: r.get(3)?,
        scope: r.get(4)?,
        updated_at: r.get(5)?,
    })
}

const UPSERT_TOKEN: &str =
    "INSERT INTO upstream_tokens (sub, api, sealed, expires_at, scope, updated_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6)
    ON CONFLICT (sub, api) DO UPDATE SET sealed = excluded.sealed,
        expires_at = excluded.expires_at, scope = excluded.scope, updated_at = excluded.updated_at";

fn upsert_token(c: &Connection, t: &SealedToken) -> rusqlite::Result<usize> {
    c.execute(
        UPSERT_TOKEN,
        params![t.sub, t.api, t.sealed, t.expires_at, t.scope, t.updated_at],
    )
}

#[async_trait::async_trait]
impl Backend for SqliteBackend {
    fn describe(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    async fn schema_version(&self) -> Result<i64, StoreError> {
        self.with(|c| {
            c.query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
        })
        .await
    }

    async fn put_token(&self, row: SealedToken) -> Result<(), StoreError> {
        self.with(move |c| upsert_token(c, &row).map(|_| ())).await
    }

    async fn reseal_token(&self, was: Vec<u8>, t: SealedToken) -> Result<bool, StoreError> {
        self.with(move |c| {
            c.execute(
                "UPDATE upstream_tokens SET sealed = ?3, expires_at = ?4, scope = ?5,
                     updated_at = ?6
                 WHERE sub = ?1 AND api = ?2 AND sealed = ?7",
                params![
                    t.sub,
                    t.api,
                    t.sealed,
                    t.expires_at,
                    t.scope,
                    t.updated_at,
                    was
                ],
            )
            .map(|n| n > 0)
        })
        .await
    }

    async fn token(&self, sub: &str, api: &str) -> Result<Option<SealedToken>, StoreError> {
        let (sub, api) = (sub.to_string(), api.to_string());
        self.with(move |c| {
            c.query_row(
                "SELECT sub, api, sealed, expires_at, scope, updated_at FROM upstream_tokens
                 WHERE sub = ?1 AND api = ?2",
                params![sub, api],
                token_row,
            )
            .optional()
        })
        .await
    }

    async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError> {
        let (sub, api) = (sub.to_string(), api.to_string());
        self.with(move |c| {
            c.execute(
                "DELETE FROM upstream_tokens WHERE sub = ?1 AND api = ?2",
                params![sub, api],
            )
            .map(|n| n > 0)
        })
        .await
    }

    async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        let sub = sub.to_string();
        self.with(move |c| {
            let mut st = c.prepare(
                "SELECT api, expires_at FROM upstream_tokens WHERE sub = ?1 ORDER BY api",
            )?;
            let rows = st.query_map(params![sub], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .await
    }

    async fn put_consent(
        &self,
        row: SealedConsent,
        limits: ConsentLimits,
    ) -> Result<(), StoreError> {
        let full = self
            .with(move |c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let total: i64 = tx.query_row(
                    "SELECT COUNT(*) FROM pending_consents WHERE expires_at > ?1",
                    params![row.created_at],
                    |r| r.get(0),
                )?;
                if total >= i64::from(limits.total) {
                    return Ok(true);
                }
                // The person's oldest beyond what they may keep make room for this one.
                tx.execute(
                    "DELETE FROM pending_consents WHERE state IN (
                        SELECT state FROM pending_consents WHERE sub = ?1
                        ORDER BY created_at DESC, state LIMIT -1 OFFSET ?2)",
                    params![row.sub, i64::from(limits.per_person.max(1)) - 1],
                )?;
                tx.execute(
                    "INSERT INTO pending_consents
                        (state, sub, api, sealed, created_at, expires_at, client_id)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        row.state,
                        row.sub,
                        row.api,
                        row.sealed,
                        row.created_at,
                        row.expires_at,
                        row.client_id
                    ],
                )?;
                tx.commit()?;
                Ok(false)
            })
            .await?;
        if full {
            return Err(super::consents_full(limits.total));
        }
        Ok(())
    }

    async fn consent(&self, state: &str) -> Result<Option<SealedConsent>, StoreError> {
        let state = state.to_string();
        self.with(move |c| {
            c.query_row(
                "SELECT state, sub, api, sealed, created_at, expires_at, client_id
                 FROM pending_consents WHERE state = ?1",
                params![state],
                |r| {
                    Ok(SealedConsent {
                        state: r.get(0)?,
                        sub: r.get(1)?,
                        api: r.get(2)?,
                        sealed: r.get(3)?,
                        created_at: r.get(4)?,
                        expires_at: r.get(5)?,
                        client_id: r.get(6)?,
                    })
                },
            )
            .optional()
        })
        .await
    }

    async fn complete_consent(
        &self,
        state: &str,
        now: i64,
        token: SealedToken,
    ) -> Result<bool, StoreError> {
        let state = state.to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let gone = tx.execute(
                "DELETE FROM pending_consents
                 WHERE state = ?1 AND sub = ?2 AND api = ?3 AND expires_at > ?4",
                params![state, token.sub, token.api, now],
            )?;
            if gone == 0 {
                return Ok(false);
            }
            upsert_token(&tx, &token)?;
            tx.commit()?;
            Ok(true)
        })
        .await
    }

    async fn expire_consents(&self, now: i64) -> Result<u64, StoreError> {
        self.with(move |c| {
            c.execute(
                "DELETE FROM pending_consents WHERE expires_at <= ?1",
                params![now],
            )
            .map(|n| n as u64)
        })
        .await
    }

    async fn record(&self, e: AuditEntry) -> Result<i64, StoreError> {
        self.with(move |c| {
            c.execute(
                "INSERT INTO audit_log
                    (at_ms, event, sub, client_id, api, endpoint, status, latency_ms, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    e.at_ms,
                    e.event,
                    e.sub,
                    e.client_id,
                    e.api,
                    e.endpoint,
                    e.status,
                    e.latency_ms,
                    e.detail
                ],
            )?;
            Ok(c.last_insert_rowid())
        })
        .await
    }

    async fn finish_call(
        &self,
        id: i64,
        status: u16,
        latency_ms: u32,
        detail: Option<String>,
    ) -> Result<(), StoreError> {
        self.with(move |c| {
            c.execute(
                "UPDATE audit_log SET status = ?2, latency_ms = ?3, detail = COALESCE(?4, detail)
                 WHERE id = ?1",
                params![id, status, latency_ms, detail],
            )
            .map(|_| ())
        })
        .await
    }

    async fn audit(&self, sub: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        let sub = sub.map(str::to_string);
        self.with(move |c| {
            let mut st = c.prepare(
                "SELECT at_ms, event, sub, client_id, api, endpoint, status, latency_ms, detail
                 FROM audit_log WHERE ?1 IS NULL OR sub = ?1
                 ORDER BY at_ms DESC, id DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![sub, limit], |r| {
                Ok(AuditEntry {
                    at_ms: r.get(0)?,
                    event: r.get(1)?,
                    sub: r.get(2)?,
                    client_id: r.get(3)?,
                    api: r.get(4)?,
                    endpoint: r.get(5)?,
                    status: r.get(6)?,
                    latency_ms: r.get(7)?,
                    detail: r.get(8)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    async fn try_lock(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let (name, holder) = (name.to_string(), holder.to_string());
        self.with(move |c| {
            let n = c.execute(
                "INSERT INTO store_locks (name, holder, until_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
                     until_ms = excluded.until_ms
                 WHERE store_locks.until_ms <= ?4 OR store_locks.holder = excluded.holder",
                params![name, holder, now_ms + ttl_ms, now_ms],
            )?;
            Ok(n > 0)
        })
        .await
    }

    async fn unlock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        let (name, holder) = (name.to_string(), holder.to_string());
        self.with(move |c| {
            c.execute(
                "DELETE FROM store_locks WHERE name = ?1 AND holder = ?2",
                params![name, holder],
            )
            .map(|_| ())
        })
        .await
    }

    async fn see_tools(&self, seen: Vec<SeenTool>, now_ms: i64) -> Result<(), StoreError> {
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            for t in &seen {
                let state = if t.approved_by.is_some() {
                    PinState::Approved
                } else {
                    PinState::Pending
                };
                let added = tx.execute(
                    super::pins::insert_sql(false),
                    params![
                        t.server,
                        t.tool,
                        t.digest,
                        t.definition,
                        state.as_str(),
                        now_ms,
                        t.approved_by
                    ],
                )?;
                if added > 0 {
                    tx.execute(
                        super::pins::drop_replaced_sql(false, state == PinState::Approved),
                        params![t.server, t.tool, t.digest],
                    )?;
                }
            }
            tx.commit()
        })
        .await
    }

    async fn tool_pins(
        &self,
        servers: Vec<String>,
        definitions: bool,
    ) -> Result<Vec<ToolPin>, StoreError> {
        self.with(move |c| {
            let mut out = Vec::new();
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {} FROM tool_pins WHERE server = ?1 ORDER BY tool, seen_at",
                super::pins::columns(definitions)
            ))?;
            for server in &servers {
                let rows = stmt.query_map(params![server], pin_row)?;
                for r in rows {
                    out.push(r?);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn decide_tool(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        decision: PinDecision,
        by: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let (server, tool, digest, by) = (
            server.to_string(),
            tool.to_string(),
            digest.to_string(),
            by.to_string(),
        );
        self.with(move |c| {
            let n = c.execute(
                super::pins::decide_sql(false),
                params![
                    server,
                    tool,
                    digest,
                    super::pins::decided_state(decision),
                    by,
                    now_ms
                ],
            )?;
            Ok(n > 0)
        })
        .await
    }
}

fn pin_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ToolPin> {
    Ok(ToolPin {
        server: r.get(0)?,
        tool: r.get(1)?,
        digest: r.get(2)?,
        definition: r.get(3)?,
        state: PinState::parse(&r.get::<_, String>(4)?),
        seen_at: r.get(5)?,
        decided_by: r.get(6)?,
        decided_at: r.get(7)?,
    })
}
