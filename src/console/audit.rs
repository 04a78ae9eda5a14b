//! The audit log as the console shows it: the upstream calls and the other events the
//! state store recorded (when, what, who and through which client, which API and
//! endpoint, the status, how long, and what the event was about), newest first, for one
//! person or everyone. The log holds no body, header, argument or token, so neither does a
//! page. Reviews of generated text are recorded here too, before they are written.
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
    /// When it happened (a call: when it started), milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The same instant, `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
    pub at: String,
    /// What happened: `call`, `refused`, `consent_asked`, `consent_given`,
    /// `consent_refused`, `withdrawn`, `review`, `token_failed`, `token_orphaned`.
    pub event: String,
    pub sub: String,
    /// The OAuth client the person came through, when known.
    pub client_id: Option<String>,
    pub api: String,
    /// The endpoint's tool name.
    pub endpoint: String,
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    pub latency_ms: u32,
    /// What the event was about (a review's old and new text, a refusal's reason).
    pub detail: Option<serde_json::Value>,
}

impl From<AuditEntry> for AuditRow {
    fn from(e: AuditEntry) -> AuditRow {
        AuditRow {
            at: utc(e.at_ms),
            at_ms: e.at_ms,
            event: e.event,
            sub: e.sub,
            client_id: e.client_id,
            api: e.api,
            endpoint: e.endpoint,
            status: e.status,
            latency_ms: e.latency_ms,
            detail: e
                .detail
                .as_deref()
                .map(|d| serde_json::from_str(d).unwrap_or(serde_json::Value::String(d.into()))),
        }
    }
}

/// What a review record says: who asked for what verdict on which value, and (once
/// written) the value as it was and as it is.
pub fn review_detail(
    r: &super::review_write::Review,
    saved: Option<&super::review_write::Saved>,
) -> serde_json::Value {
    let mut d = serde_json::json!({
        "action": format!("{:?}", r.action).to_lowercase(),
        "method": r.method,
        "path": r.path,
        "field": r.field,
        "param": r.param,
        "new": r.value,
    });
    if let Some(s) = saved {
        d["old"] = s.previous.clone();
        d["new"] = s.value.clone();
        d["file"] = serde_json::Value::String(s.file.clone());
    }
    d
}

/// Records a review before it is written. `Ok(None)` without a store (a local console
/// keeps no log); with one, the review is made only once recorded: `Err` is the refusal.
pub async fn begin_review(
    store: Option<&Store>,
    viewer: &super::viewer::Viewer,
    r: &super::review_write::Review,
) -> Result<Option<i64>, String> {
    let Some(store) = store else {
        tracing::info!(viewer = %viewer.describe(), api = %r.api, "console: review written (no state store to record it in)");
        return Ok(None);
    };
    let entry = AuditEntry::event(
        crate::store::Event::Review,
        viewer.audit_sub(),
        viewer.client_id(),
        &r.api,
    )
    .on(&format!("{} {}", r.method.to_uppercase(), r.path))
    .with_detail(review_detail(r, None));
    begin_write(Some(store), &entry, "the review was not written").await
}

/// Records a console write (a review, a decision on a tool definition) before it is made:
/// its row id, `Ok(None)` without a store, or why it is not made (`refused` in front).
pub async fn begin_write(
    store: Option<&Store>,
    entry: &AuditEntry,
    refused: &str,
) -> Result<Option<i64>, String> {
    let Some(store) = store else {
        return Ok(None);
    };
    match tokio::time::timeout(WAIT, store.record(entry)).await {
        Ok(Ok(id)) => Ok(Some(id)),
        Ok(Err(e)) => Err(format!(
            "{refused}: it could not be recorded in the audit log ({e})"
        )),
        Err(_) => Err(format!(
            "{refused}: the audit log's store did not answer in time"
        )),
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
        async fn reseal_token(&self, _: Vec<u8>, _: SealedToken) -> Result<bool, StoreError> {
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
        async fn put_consent(
            &self,
            _: SealedConsent,
            _: crate::store::ConsentLimits,
        ) -> Result<(), StoreError> {
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
        async fn record(&self, _: AuditEntry) -> Result<i64, StoreError> {
            self.fail().await
        }
        async fn finish_call(
            &self,
            _: i64,
            _: u16,
            _: u32,
            _: Option<String>,
        ) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn audit(&self, _: Option<&str>, _: u32) -> Result<Vec<AuditEntry>, StoreError> {
            self.fail().await
        }
        async fn try_lock(&self, _: &str, _: &str, _: i64, _: i64) -> Result<bool, StoreError> {
            self.fail().await
        }
        async fn unlock(&self, _: &str, _: &str) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn see_tools(
            &self,
            _: Vec<crate::store::SeenTool>,
            _: i64,
        ) -> Result<(), StoreError> {
            self.fail().await
        }
        async fn tool_pins(
            &self,
            _: Vec<String>,
            _: bool,
        ) -> Result<Vec<crate::store::ToolPin>, StoreError> {
            self.fail().await
        }
        async fn decide_tool(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: crate::store::PinDecision,
            _: &str,
            _: i64,
        ) -> Result<bool, StoreError> {
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
            let mut e = AuditEntry::event(crate::store::Event::Call, sub, None, "tmdb")
                .on(&format!("call{i}"));
            e.at_ms = 1_000 * (i as i64 + 1);
            e.status = 200;
            e.latency_ms = 3;
            store.record(&e).await.unwrap();
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
