//! Progress of a call, relayed from the upstream MCP server to the person's client.
//!
//! A client that asks for progress (a `progressToken` in its request's `_meta`) gets a
//! [`Progress`] sink for its call. The call to the upstream carries the connection's own
//! token (every request on it has one, unique on that connection), and the upstream's
//! `notifications/progress` for it reach the sink: the upstream never learns the client's
//! token, and a notification for a token no call holds (another call's that ended, one
//! nobody asked progress for, or a guess) goes nowhere.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where a call's progress goes: `(progress, total, message)`.
pub type Progress = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

/// The calls of one connection that asked for progress, by the token sent upstream.
#[derive(Clone, Default)]
pub struct Relays {
    sinks: Arc<Mutex<HashMap<String, Progress>>>,
}

impl Relays {
    /// Registers `sink` under `token` (the one the connection put on the call's request).
    pub fn register_as(&self, token: String, sink: Progress) -> Registered {
        if let Ok(mut s) = self.sinks.lock() {
            s.insert(token.clone(), sink);
        }
        Registered {
            relays: self.clone(),
            token,
        }
    }

    /// Relays one notification; `false` when no call holds `token`.
    pub fn relay(
        &self,
        token: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> bool {
        let sink = self.sinks.lock().ok().and_then(|s| s.get(token).cloned());
        match sink {
            Some(f) => {
                f(progress, total, message);
                true
            }
            None => false,
        }
    }
}

/// Unregisters its call's sink when the call ends (or is dropped).
pub struct Registered {
    relays: Relays,
    token: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut s) = self.relays.sinks.lock() {
            s.remove(&self.token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reaches_only_a_live_call() {
        let relays = Relays::default();
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&got);
        let guard = relays.register_as(
            "7".into(),
            Arc::new(move |p, t, m| {
                seen.lock().unwrap().push((p, t, m));
            }),
        );
        assert!(relays.relay("7", 1.0, Some(3.0), Some("one".into())));
        assert!(!relays.relay("8", 1.0, None, None));
        drop(guard);
        assert!(!relays.relay("7", 2.0, Some(3.0), None));
        assert_eq!(
            *got.lock().unwrap(),
            vec![(1.0, Some(3.0), Some("one".to_string()))]
        );
    }
}
