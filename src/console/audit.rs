//! The audit log as the console shows it: the upstream calls the state store recorded
//! (when, who, which API and endpoint, the status, how long), newest first, for one person
//! or everyone. The log holds no body, header or argument, so neither does a page.
//!
//! Reading never fails the console: a server without a store, or a store that went away
//! (PostgreSQL restarted, a cut connection), is an answer that says so, and the catalog's
//! other pages go on working.

use crate::store::{AuditEntry, Store, StoreError};
use serde::Serialize;
use std::time::Duration;

/// Rows when the query names no `limit`.
pub const DEFAULT_LIMIT: u32 = 100;
/// The most rows one answer holds: the log is read newest first and narrowed by person,
/// not paged through.
pub const MAX_LIMIT: u32 = 1000;
/// How long a page waits for the store: a database that hangs gets a readable answer
/// rather than a page that never loads.
pub const WAIT: Duration = Duration::from_secs(5);

/// Which entries a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// One person's calls (`sub` of their access token; `-` for calls made without one).
    pub sub: Option<String>,
    pub limit: u32,
}

impl AuditQuery {
    /// The query from its query-string values (`sub`, `limit`); empty values mean none.
    pub fn parse(sub: Option<&str>, limit: Option<&str>) -> Result<AuditQuery, String> {
        let limit = match limit.map(str::trim).filter(|s| !s.is_empty()) {
            None => DEFAULT_LIMIT,
            Some(l) => match l.parse::<u32>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "limit: '{}' is not a whole number from 1 to {MAX_LIMIT}",
                        crate::text::clip_chars(l, 40)
                    ))
                }
            },
        };
        Ok(AuditQuery {
            sub: sub
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            limit,
        })
    }
}

/// One row as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRow {
    /// When the call started, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The same instant, `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
    pub at: String,
    pub sub: String,
    pub api: String,
    /// The endpoint's tool name.
    pub endpoint: String,
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    pub latency_ms: u32,
}

impl From<AuditEntry> for AuditRow {
    fn from(e: AuditEntry) -> AuditRow {
        AuditRow {
            at: utc(e.at_ms),
            at_ms: e.at_ms,
            sub: e.sub,
            api: e.api,
            endpoint: e.endpoint,
            status: e.status,
            latency_ms: e.latency_ms,
        }
    }
}

/// Why the log cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// The console was started without a state store.
    #[error("no state store: this console was started without one, so there is no audit log to show (`serve --http` keeps one; `shortlist console` reads one with --state, or the default state.sqlite3 in the catalog's data folder when it exists)")]
    NoStore,
    /// The store did not answer, or answered with an error.
    #[error("{0}")]
    Store(String),
}

/// The entries `q` asks for, newest first, read from `store` within `wait`.
pub async fn read(
    store: Option<&Store>,
    q: &AuditQuery,
    wait: Duration,
) -> Result<Vec<AuditRow>, AuditError> {
    let store = store.ok_or(AuditError::NoStore)?;
    let entries = match tokio::time::timeout(wait, store.audit(q.sub.as_deref(), q.limit)).await {
        Ok(r) => r.map_err(|e| AuditError::Store(e.to_string()))?,
        Err(_) => {
            return Err(AuditError::Store(
                StoreError::Unavailable(format!(
                    "{} did not answer within {} s",
                    store.backend().describe(),
                    wait.as_secs()
                ))
                .to_string(),
            ))
        }
    };
    Ok(entries.into_iter().map(AuditRow::from).collect())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a Unix time in milliseconds.
pub fn utc(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days before 1970 do not occur in a log written by this program; clamp, not wrap.
    let date = crate::enrich::date::iso_date(days.max(0) as u64);
    format!(
        "{date}T{:02}:{:02}:{:02}.{milli:03}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Backend, SealedConsent, SealedToken};
    use std::sync::Arc;

    #[test]
    fn queries_parse_and_refuse_nonsense() {
        let q = AuditQuery::parse(Some(" alice "), None).unwrap();
        assert_eq!(q.sub.as_deref(), Some("alice"));
        assert_eq!(q.limit, DEFAULT_LIMIT);
        assert_eq!(AuditQuery::parse(Some(""), Some("5")).unwrap().sub, None);
        for bad in ["0", "-1", "many", "1001"] {
            let e = AuditQuery::parse(None, Some(bad)).unwrap_err();
            assert!(e.starts_with("limit:"), "{e}");
        }
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(1_767_225_599_999), "2025-12-31T23:59:59.999Z");
    }

    /// A store whose database is gone: every operation fails as a cut connection does,
    /// or (`hang`) never answers.
    struct Gone {
        hang: bool,
    }

    #[async_trait::async_trait]
    impl Backend for Gone {
        fn describe(&self) -> String {
            "postgres://shortlist@db.internal/state".into()
        }
        async fn schema_version(&self) -> Result<i64, StoreError> {
            self.fail().await
        }
        async fn put_token(&self, _: SealedToken) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn token(&self, _: &str, _: &str) -> Result<Option<SealedToken>, StoreError> {
            self.fail().await
        }
        async fn delete_token(&self, _: &str, _: &str) -> Result<bool, StoreError> {
            self.fail().await
        }
        async fn token_apis(&self, _: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
            self.fail().await
        }
        async fn put_consent(&self, _: SealedConsent) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn consent(&self, _: &str) -> Result<Option<SealedConsent>, StoreError> {
            self.fail().await
        }
        async fn complete_consent(
            &self,
            _: &str,
            _: i64,
            _: SealedToken,
        ) -> Result<bool, StoreError> {
            self.fail().await
        }
        async fn expire_consents(&self, _: i64) -> Result<u64, StoreError> {
            self.fail().await
        }
        async fn record_call(&self, _: AuditEntry) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn audit(&self, _: Option<&str>, _: u32) -> Result<Vec<AuditEntry>, StoreError> {
            self.fail().await
        }
    }

    impl Gone {
        async fn fail<T>(&self) -> Result<T, StoreError> {
            if self.hang {
                std::future::pending::<()>().await;
            }
            Err(StoreError::Unavailable(
                "connection closed by the server".into(),
            ))
        }
    }

    #[tokio::test]
    async fn a_store_that_went_away_is_a_readable_answer() {
        let q = AuditQuery::parse(None, None).unwrap();
        let store = Store::with_backend(Arc::new(Gone { hang: false }), None);
        let e = read(Some(&store), &q, WAIT).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "the state store is unavailable: connection closed by the server"
        );
        let hung = Store::with_backend(Arc::new(Gone { hang: true }), None);
        let e = read(Some(&hung), &q, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("did not answer within"), "{e}");
        assert_eq!(read(None, &q, WAIT).await.unwrap_err(), AuditError::NoStore);
    }

    #[tokio::test]
    async fn entries_come_back_newest_first_for_one_person() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &crate::store::Location::Sqlite(dir.path().join("s.sqlite3")),
            None,
        )
        .await
        .unwrap();
        for (i, sub) in ["alice", "bob", "alice"].iter().enumerate() {
            store
                .record_call(&AuditEntry {
                    at_ms: 1_000 * (i as i64 + 1),
                    sub: sub.to_string(),
                    api: "tmdb".into(),
                    endpoint: format!("call{i}"),
                    status: 200,
                    latency_ms: 3,
                })
                .await
                .unwrap();
        }
        let q = AuditQuery::parse(Some("alice"), Some("10")).unwrap();
        let rows = read(Some(&store), &q, WAIT).await.unwrap();
        let calls: Vec<&str> = rows.iter().map(|r| r.endpoint.as_str()).collect();
        assert_eq!(calls, ["call2", "call0"]);
        assert_eq!(rows[0].at, "1970-01-01T00:00:03.000Z");
        let q = AuditQuery::parse(None, Some("1")).unwrap();
        assert_eq!(read(Some(&store), &q, WAIT).await.unwrap().len(), 1);
    }
}
