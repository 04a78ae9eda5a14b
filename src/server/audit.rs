//! Writing the audit log from the server: every upstream call and the events around it
//! (refusals, consents, withdrawals, token failures), each a row of the state store.
//!
//! A record waits at most [`WAIT`] for the store. By default (`audit = "best_effort"` in
//! `[auth]`) a record that cannot be written is logged and what it records stands; with
//! `audit = "required"` a call is recorded before it is made, and not made when that
//! fails, so no upstream call happens that the log does not hold.

use crate::store::{AuditEntry, Store};
use std::time::Duration;

/// How long a request waits for its audit record.
pub const WAIT: Duration = Duration::from_secs(2);

/// Writes `entry`, best effort: a store that is away or slow is logged, never the
/// request's failure. Whether it was written.
pub async fn record(store: Option<&Store>, entry: AuditEntry) -> bool {
    let Some(store) = store else {
        return false;
    };
    match tokio::time::timeout(WAIT, store.record(&entry)).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            crate::telemetry::metrics::store_error("audit");
            tracing::error!(error = %e, event = %entry.event, api = %entry.api, endpoint = %entry.endpoint, "audit: the event could not be recorded");
            false
        }
        Err(_) => {
            crate::telemetry::metrics::store_error("audit");
            tracing::error!(event = %entry.event, api = %entry.api, endpoint = %entry.endpoint, "audit: the state store did not answer within 2 s; the event is not recorded");
            false
        }
    }
}

/// Records a call before it is made (`audit = "required"`): its row id, or the message
/// of the refusal when it cannot be written.
pub async fn begin(store: Option<&Store>, entry: AuditEntry) -> Result<i64, String> {
    let refusal = |why: String| {
        tracing::error!(api = %entry.api, endpoint = %entry.endpoint, reason = %why, "audit: a call was refused because it could not be recorded first");
        format!(
            "refused: this server records every call before making it (audit = \"required\"), \
             and the record could not be written ({why}); nothing was sent to API '{}'",
            entry.api
        )
    };
    let Some(store) = store else {
        return Err(refusal("the server keeps no state store".into()));
    };
    match tokio::time::timeout(WAIT, store.record(&entry)).await {
        Ok(Ok(id)) => Ok(id),
        Ok(Err(e)) => {
            crate::telemetry::metrics::store_error("audit");
            Err(refusal(e.to_string()))
        }
        Err(_) => {
            crate::telemetry::metrics::store_error("audit");
            Err(refusal("the state store did not answer within 2 s".into()))
        }
    }
}

/// Sets the outcome of what [`begin`] recorded (and its detail, when given); a failure is
/// logged (what was recorded happened, and its row says so with status 0).
pub async fn finish(
    store: Option<&Store>,
    id: i64,
    status: u16,
    latency_ms: u32,
    detail: Option<serde_json::Value>,
) {
    let Some(store) = store else {
        return;
    };
    match tokio::time::timeout(WAIT, store.finish_call(id, status, latency_ms, detail)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::error!(error = %e, id, "audit: the outcome of a recorded call could not be written")
        }
        Err(_) => tracing::error!(id, "audit: the state store did not answer within 2 s"),
    }
}
