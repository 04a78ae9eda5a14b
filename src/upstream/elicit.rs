//! An upstream's elicitation, passed to the person whose call it belongs to.
//!
//! An upstream MCP server may ask its client for input during a call
//! (`elicitation/create`). Shortlist's connection to it is shared by everyone's calls, and
//! the protocol does not say which call a request belongs to, so an elicitation reaches a
//! person only when theirs is the one call in flight on that server and their client can
//! answer one (a session-era client that declared elicitation, of the kind asked, or a
//! 2026-07-28 client asked through its call's result: `server::parked`); in any other case
//! it is declined, never answered on anyone's behalf. The person's client shows
//! the request with the server's id in front of its message, so it is never taken for
//! shortlist's own question.

// Sampling is deprecated in the newest revision; upstreams on older ones still ask for it.
#![allow(deprecated)]

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Asks the person behind a call: the client's answer, or why it could not be had.
pub type Asker = Arc<
    dyn Fn(ElicitRequestParams) -> futures::future::BoxFuture<'static, Result<ElicitResult, String>>
        + Send
        + Sync,
>;

/// Has the person behind a call's client sample its model: the client's answer, or why it
/// could not be had.
pub type Sampler = Arc<
    dyn Fn(
            CreateMessageRequestParams,
        ) -> futures::future::BoxFuture<'static, Result<CreateMessageResult, String>>
        + Send
        + Sync,
>;

/// Who can be asked on behalf of one call.
#[derive(Clone, Default)]
pub struct Askers {
    pub ask: Option<Asker>,
    pub sample: Option<Sampler>,
}

/// The calls in flight on one server, each with the person to ask, if they can be asked.
#[derive(Clone, Default)]
pub struct InFlight {
    calls: Arc<Mutex<BTreeMap<u64, Askers>>>,
    next: Arc<AtomicU64>,
}

impl InFlight {
    /// Counts a call in flight until the guard is dropped.
    pub fn enter(&self, askers: Askers) -> Entered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut c) = self.calls.lock() {
            c.insert(id, askers);
        }
        Entered {
            flight: self.clone(),
            id,
        }
    }

    /// Who may be asked now: those of the one call in flight.
    fn sole(&self) -> Askers {
        let Ok(calls) = self.calls.lock() else {
            return Askers::default();
        };
        match calls.len() {
            1 => calls.values().next().cloned().unwrap_or_default(),
            _ => Askers::default(),
        }
    }

    /// Who an elicitation now goes to: the asker of the one call in flight, if it has one.
    pub fn sole_asker(&self) -> Option<Asker> {
        self.sole().ask
    }

    /// Whose model a sampling request now goes to, likewise.
    pub fn sole_sampler(&self) -> Option<Sampler> {
        self.sole().sample
    }
}

/// A call in flight; leaves when dropped.
pub struct Entered {
    flight: InFlight,
    id: u64,
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Ok(mut c) = self.flight.calls.lock() {
            c.remove(&self.id);
        }
    }
}

/// The answer when nobody can be asked.
pub fn declined() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// The request as the person sees it: the server's id before its message.
pub fn labelled(server: &str, mut params: ElicitRequestParams) -> ElicitRequestParams {
    match &mut params {
        ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } => {
            *message = format!("[MCP server '{server}'] {message}");
        }
        _ => {}
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asker() -> Asker {
        Arc::new(|_| Box::pin(async { Ok(ElicitResult::new(ElicitationAction::Accept)) }))
    }

    #[test]
    fn only_the_one_call_in_flight_is_asked() {
        let f = InFlight::default();
        assert!(f.sole_asker().is_none());
        let a = f.enter(Askers {
            ask: Some(asker()),
            sample: None,
        });
        assert!(f.sole_asker().is_some());
        // A second call, of someone who cannot be asked: the request is nobody's now.
        let b = f.enter(Askers::default());
        assert!(f.sole_asker().is_none());
        drop(a);
        assert!(f.sole_asker().is_none(), "the remaining call has no asker");
        drop(b);
        let _c = f.enter(Askers {
            ask: Some(asker()),
            sample: None,
        });
        assert!(f.sole_asker().is_some());
    }
}
