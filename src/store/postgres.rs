//! The shared store: PostgreSQL, for replicas. A few connections are kept and used one
//! operation at a time; a connection that breaks (the server restarted, the network
//! dropped) is replaced on the next operation, so the process keeps serving once the
//! database is back.

use super::backend::{
    AuditEntry, Backend, ConsentLimits, PinDecision, SealedConsent, SealedToken, SeenTool, ToolPin,
};
use super::migrations::{self, MIGRATIONS};
use super::StoreError;
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_postgres::{Client, Config, NoTls};

mod pins;

/// Connections kept per process.
const POOL: usize = 4;
/// Time to connect, and time for one operation, before it counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const OP_TIMEOUT: Duration = Duration::from_secs(15);
/// The advisory lock that serialises migrations across replicas.
const MIGRATION_LOCK: i64 = 0x5348_4f52_544c_5354; // "SHORTLST"

pub struct PostgresBackend {
    config: Config,
    describe: String,
    slots: Vec<tokio::sync::Mutex<Option<Client>>>,
    next: AtomicUsize,
}

/// `url` without its password.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => "postgres://(unparsable URL)".into(),
    }
}

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    use tokio_postgres::error::SqlState;
    match e.as_db_error() {
        Some(db) => {
            let code = db.code();
            if code == &SqlState::ADMIN_SHUTDOWN
                || code == &SqlState::CRASH_SHUTDOWN
                || code == &SqlState::CANNOT_CONNECT_NOW
            {
                StoreError::Unavailable(format!("PostgreSQL is shutting down: {}", db.message()))
            } else {
                StoreError::Failed(format!("PostgreSQL: {}", db.message()))
            }
        }
        None => StoreError::Unavailable(format!("PostgreSQL connection lost: {e}")),
    }
}

type Op<'c, T> = BoxFuture<'c, Result<T, tokio_postgres::Error>>;

impl PostgresBackend {
    /// Connects and migrates to the latest version.
    pub async fn open(url: &str) -> Result<PostgresBackend, StoreError> {
        PostgresBackend::open_at(url, migrations::latest()).await
    }

    /// Connects and migrates only up to `version` (tests: a store as an older build left it).
    #[doc(hidden)]
    pub async fn open_at(url: &str, version: i64) -> Result<PostgresBackend, StoreError> {
        let mut config: Config = url.parse().map_err(|e| {
            StoreError::Failed(format!(
                "--state {}: not a PostgreSQL URL: {e}",
                redacted(url)
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives(true);
        let b = PostgresBackend {
            config,
            describe: redacted(url),
            slots: (0..POOL).map(|_| tokio::sync::Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        };
        b.run(move |c| Box::pin(migrate(c, version))).await?;
        b.schema_version().await?;
        Ok(b)
    }

    async fn connect(&self) -> Result<Client, StoreError> {
        let (client, conn) = self.config.connect(NoTls).await.map_err(|e| {
            StoreError::Unavailable(format!("cannot connect to {}: {e}", self.describe))
        })?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "PostgreSQL connection ended");
            }
        });
        Ok(client)
    }

    /// Runs one operation on a pooled connection, reconnecting if the one there broke.
    async fn run<T: Send>(
        &self,
        op: impl for<'c> FnOnce(&'c mut Client) -> Op<'c, T> + Send,
    ) -> Result<T, StoreError> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut slot = None;
        for i in 0..POOL {
            if let Ok(s) = self.slots[(start + i) % POOL].try_lock() {
                slot = Some(s);
                break;
            }
        }
        let mut slot = match slot {
            Some(s) => s,
            None => self.slots[start % POOL].lock().await,
        };
        if slot.as_ref().is_none_or(|c| c.is_closed()) {
            *slot = Some(self.connect().await?);
        }
        let Some(client) = slot.as_mut() else {
            return Err(StoreError::Unavailable("no connection".into()));
        };
        match tokio::time::timeout(OP_TIMEOUT, op(client)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let err = pg_error(e);
                if matches!(err, StoreError::Unavailable(_)) {
                    *slot = None;
                }
                Err(err)
            }
            Err(_) => {
                // The connection's state is unknown: a late answer must not be misread.
                *slot = None;
                Err(StoreError::Unavailable(format!(
                    "{} did not answer within {} s",
                    self.describe,
                    OP_TIMEOUT.as_secs()
                )))
            }
        }
    }
}

async fn migrate(c: &mut Client, upto: i64) -> Result<(), tokio_postgres::Error> {
    let tx = c.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .await?;
    let found: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_migrations",
            &[],
        )
        .await?
        .get(0);
    if found > migrations::latest() {
        // Leave without writing; the caller reads the version again to say why.
        return tx.rollback().await;
    }
    for m in MIGRATIONS
        .iter()
        .filter(|m| m.version > found && m.version <= upto)
    {
        tx.batch_execute(m.postgres).await?;
        tx.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)",
            &[&m.version, &m.description, &super::now()],
        )
        .await?;
        tracing::info!(
            version = m.version,
            "state store migrated: {}",
            m.description
        );
    }
    tx.commit().await
}

fn token_row(r: &tokio_postgres::Row) -> SealedToken {
    SealedToken {
        sub: r.get(0),
        api: r.get(1),
        sealed: r.get(2),
        expires_at: r.get(3),
        scope: r.get(4),
        updated_at: r.get(5),
    }
}

const UPSERT_TOKEN: &str =
    "INSERT INTO upstream_tokens (sub, api, sealed, expires_at, scope, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (sub, api) DO UPDATE SET sealed = excluded.sealed,
        expires_at = excluded.expires_at, scope = excluded.scope, updated_at = excluded.updated_at";

#[async_trait::async_trait]
impl Backend for PostgresBackend {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    async fn schema_version(&self) -> Result<i64, StoreError> {
        let v = self
            .run(|c| {
                Box::pin(async move {
                    let r = c
                        .query_one(
                            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_migrations",
                            &[],
                        )
                        .await?;
                    Ok(r.get::<_, i64>(0))
                })
            })
            .await?;
        if v > migrations::latest() {
            return Err(migrations::too_new(v));
        }
        Ok(v)
    }

    async fn put_token(&self, t: SealedToken) -> Result<(), StoreError> {
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    UPSERT_TOKEN,
                    &[
                        &t.sub,
                        &t.api,
                        &t.sealed,
                        &t.expires_at,
                        &t.scope,
                        &t.updated_at,
                    ],
                )
                .await
                .map(|_| ())
            })
        })
        .await
    }

    async fn reseal_token(&self, was: Vec<u8>, t: SealedToken) -> Result<bool, StoreError> {
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE upstream_tokens SET sealed = $3, expires_at = $4, scope = $5,
                         updated_at = $6
                     WHERE sub = $1 AND api = $2 AND sealed = $7",
                    &[
                        &t.sub,
                        &t.api,
                        &t.sealed,
                        &t.expires_at,
                        &t.scope,
                        &t.updated_at,
                        &was,
                    ],
                )
                .await
                .map(|n| n > 0)
            })
        })
        .await
    }

    async fn token(&self, sub: &str, api: &str) -> Result<Option<SealedToken>, StoreError> {
        let (sub, api) = (sub.to_string(), api.to_string());
        self.run(move |c| {
            Box::pin(async move {
                let r = c
                    .query_opt(
                        "SELECT sub, api, sealed, expires_at, scope, updated_at FROM upstream_tokens
                         WHERE sub = $1 AND api = $2",
                        &[&sub, &api],
                    )
                    .await?;
                Ok(r.as_ref().map(token_row))
            })
        })
        .await
    }

    async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError> {
        let (sub, api) = (sub.to_string(), api.to_string());
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "DELETE FROM upstream_tokens WHERE sub = $1 AND api = $2",
                    &[&sub, &api],
                )
                .await
                .map(|n| n > 0)
            })
        })
        .await
    }

    async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        let sub = sub.to_string();
        self.run(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT api, expires_at FROM upstream_tokens WHERE sub = $1 ORDER BY api",
                        &[&sub],
                    )
                    .await?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            })
        })
        .await
    }

    async fn put_consent(
        &self,
        row: SealedConsent,
        limits: ConsentLimits,
    ) -> Result<(), StoreError> {
        let per_person = i64::from(limits.per_person.max(1)) - 1;
        let total = i64::from(limits.total);
        let full = self
            .run(move |c| {
                Box::pin(async move {
                    let tx = c.transaction().await?;
                    // One writer at a time, so the count and the insert agree.
                    tx.execute(
                        "LOCK TABLE pending_consents IN SHARE ROW EXCLUSIVE MODE",
                        &[],
                    )
                    .await?;
                    let n: i64 = tx
                        .query_one(
                            "SELECT COUNT(*) FROM pending_consents WHERE expires_at > $1",
                            &[&row.created_at],
                        )
                        .await?
                        .get(0);
                    if n >= total {
                        tx.rollback().await?;
                        return Ok(true);
                    }
                    tx.execute(
                        "DELETE FROM pending_consents WHERE state IN (
                            SELECT state FROM pending_consents WHERE sub = $1
                            ORDER BY created_at DESC, state OFFSET $2)",
                        &[&row.sub, &per_person],
                    )
                    .await?;
                    tx.execute(
                        "INSERT INTO pending_consents
                            (state, sub, api, sealed, created_at, expires_at, client_id)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        &[
                            &row.state,
                            &row.sub,
                            &row.api,
                            &row.sealed,
                            &row.created_at,
                            &row.expires_at,
                            &row.client_id,
                        ],
                    )
                    .await?;
                    tx.commit().await?;
                    Ok(false)
                })
            })
            .await?;
        if full {
            return Err(super::consents_full(limits.total));
        }
        Ok(())
    }

    async fn consent(&self, state: &str) -> Result<Option<SealedConsent>, StoreError> {
        let state = state.to_string();
        self.run(move |c| {
            Box::pin(async move {
                let r = c
                    .query_opt(
                        "SELECT state, sub, api, sealed, created_at, expires_at, client_id
                         FROM pending_consents WHERE state = $1",
                        &[&state],
                    )
                    .await?;
                Ok(r.map(|r| SealedConsent {
                    state: r.get(0),
                    sub: r.get(1),
                    api: r.get(2),
                    sealed: r.get(3),
                    created_at: r.get(4),
                    expires_at: r.get(5),
                    client_id: r.get(6),
                }))
            })
        })
        .await
    }

    async fn complete_consent(
        &self,
        state: &str,
        now: i64,
        t: SealedToken,
    ) -> Result<bool, StoreError> {
        let state = state.to_string();
        self.run(move |c| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                let gone = tx
                    .execute(
                        "DELETE FROM pending_consents
                         WHERE state = $1 AND sub = $2 AND api = $3 AND expires_at > $4",
                        &[&state, &t.sub, &t.api, &now],
                    )
                    .await?;
                if gone == 0 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                tx.execute(
                    UPSERT_TOKEN,
                    &[
                        &t.sub,
                        &t.api,
                        &t.sealed,
                        &t.expires_at,
                        &t.scope,
                        &t.updated_at,
                    ],
                )
                .await?;
                tx.commit().await?;
                Ok(true)
            })
        })
        .await
    }

    async fn expire_consents(&self, now: i64) -> Result<u64, StoreError> {
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "DELETE FROM pending_consents WHERE expires_at <= $1",
                    &[&now],
                )
                .await
            })
        })
        .await
    }

    async fn record(&self, e: AuditEntry) -> Result<i64, StoreError> {
        let status = i32::from(e.status);
        let latency = i32::try_from(e.latency_ms).unwrap_or(i32::MAX);
        self.run(move |c| {
            Box::pin(async move {
                let r = c
                    .query_one(
                        "INSERT INTO audit_log
                            (at_ms, event, sub, client_id, api, endpoint, status, latency_ms, detail)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
                        &[
                            &e.at_ms,
                            &e.event,
                            &e.sub,
                            &e.client_id,
                            &e.api,
                            &e.endpoint,
                            &status,
                            &latency,
                            &e.detail,
                        ],
                    )
                    .await?;
                Ok(r.get::<_, i64>(0))
            })
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
        let status = i32::from(status);
        let latency = i32::try_from(latency_ms).unwrap_or(i32::MAX);
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "UPDATE audit_log SET status = $2, latency_ms = $3,
                         detail = COALESCE($4, detail)
                     WHERE id = $1",
                    &[&id, &status, &latency, &detail],
                )
                .await
                .map(|_| ())
            })
        })
        .await
    }

    async fn audit(&self, sub: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        let sub = sub.map(str::to_string);
        let limit = i64::from(limit);
        self.run(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT at_ms, event, sub, client_id, api, endpoint, status, latency_ms,
                                detail
                         FROM audit_log WHERE $1::TEXT IS NULL OR sub = $1
                         ORDER BY at_ms DESC, id DESC LIMIT $2",
                        &[&sub, &limit],
                    )
                    .await?;
                Ok(rows
                    .iter()
                    .map(|r| AuditEntry {
                        at_ms: r.get(0),
                        event: r.get(1),
                        sub: r.get(2),
                        client_id: r.get(3),
                        api: r.get(4),
                        endpoint: r.get(5),
                        status: u16::try_from(r.get::<_, i32>(6)).unwrap_or(0),
                        latency_ms: u32::try_from(r.get::<_, i32>(7)).unwrap_or(0),
                        detail: r.get(8),
                    })
                    .collect())
            })
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
        let until = now_ms + ttl_ms;
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "INSERT INTO store_locks (name, holder, until_ms) VALUES ($1, $2, $3)
                     ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
                         until_ms = excluded.until_ms
                     WHERE store_locks.until_ms <= $4 OR store_locks.holder = excluded.holder",
                    &[&name, &holder, &until, &now_ms],
                )
                .await
                .map(|n| n > 0)
            })
        })
        .await
    }

    async fn unlock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        let (name, holder) = (name.to_string(), holder.to_string());
        self.run(move |c| {
            Box::pin(async move {
                c.execute(
                    "DELETE FROM store_locks WHERE name = $1 AND holder = $2",
                    &[&name, &holder],
                )
                .await
                .map(|_| ())
            })
        })
        .await
    }

    async fn see_tools(&self, seen: Vec<SeenTool>, now_ms: i64) -> Result<(), StoreError> {
        self.see_pinned(seen, now_ms).await
    }

    async fn tool_pins(
        &self,
        servers: Vec<String>,
        definitions: bool,
    ) -> Result<Vec<ToolPin>, StoreError> {
        self.pinned(servers, definitions).await
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
        self.decide_pinned(server, tool, digest, decision, by, now_ms)
            .await
    }
}
