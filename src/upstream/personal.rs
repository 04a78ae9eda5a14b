//! Connections that carry one person's own token: one per server and person, made on the
//! person's first call and kept while they are used.
//!
//! A server whose calls carry each person's token is listed over its shared connection
//! (with `list_token_env`), and called over the caller's own: the server sees every call
//! as its person's, and a session it keeps for one person is never another's. Connections
//! unused for [`IDLE`] are closed, and at most [`MAX`] are kept (the least recently used
//! goes first), so a team's worth of people holds a bounded number of sockets.

use super::Server;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an unused personal connection stays open.
pub const IDLE: Duration = Duration::from_secs(600);
/// The most personal connections kept at once, across servers.
pub const MAX: usize = 1_000;

/// A connection by server id and person, with when it was last used.
type Conns = HashMap<(String, String), (Arc<Server>, Instant)>;

/// Which servers' connections to keep, by server id.
pub type Keep<'a> = &'a dyn Fn(&str, &Server) -> bool;

/// Every personal connection, by server id and person.
#[derive(Default)]
pub struct Personal {
    conns: Mutex<Conns>,
}

impl Personal {
    /// The connection of `sub` to server `id`, made by `make` when there is none; with it,
    /// the connections to close now (idle too long, or beyond [`MAX`]).
    pub fn get(
        &self,
        id: &str,
        sub: &str,
        make: impl FnOnce() -> Arc<Server>,
    ) -> (Arc<Server>, Vec<Arc<Server>>) {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let key = (id.to_string(), sub.to_string());
        let server = match conns.get_mut(&key) {
            Some((s, used)) => {
                *used = now;
                Arc::clone(s)
            }
            None => {
                let s = make();
                conns.insert(key.clone(), (Arc::clone(&s), now));
                s
            }
        };
        let mut stale: Vec<(String, String)> = conns
            .iter()
            .filter(|(k, (_, used))| **k != key && now.duration_since(*used) > IDLE)
            .map(|(k, _)| k.clone())
            .collect();
        if conns.len() - stale.len() > MAX {
            let mut rest: Vec<_> = conns
                .iter()
                .filter(|(k, _)| **k != key && !stale.contains(k))
                .map(|(k, (_, used))| (*used, k.clone()))
                .collect();
            rest.sort();
            let over = conns.len() - stale.len() - MAX;
            stale.extend(rest.into_iter().take(over).map(|(_, k)| k));
        }
        let closed = stale
            .iter()
            .filter_map(|k| conns.remove(k).map(|(s, _)| s))
            .collect();
        (server, closed)
    }

    /// Forgets `sub`'s connection to `id` (its token was refused: the next call opens a
    /// new one with a fresh token); the connection, to close.
    pub fn forget(&self, id: &str, sub: &str) -> Option<Arc<Server>> {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns
            .remove(&(id.to_string(), sub.to_string()))
            .map(|(s, _)| s)
    }

    /// Forgets every connection to a server not in `keep` (or all, with `None`); those
    /// connections, to close.
    pub fn retain(&self, keep: Option<Keep<'_>>) -> Vec<Arc<Server>> {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<_> = conns
            .iter()
            .filter(|((id, _), (s, _))| keep.is_none_or(|k| !k(id, s)))
            .map(|(k, _)| k.clone())
            .collect();
        gone.iter()
            .filter_map(|k| conns.remove(k).map(|(s, _)| s))
            .collect()
    }

    /// How many personal connections are open.
    pub fn len(&self) -> usize {
        self.conns.lock().map(|c| c.len()).unwrap_or(0)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
