//! Which endpoints each client sees as tools, and how to tell that client when it changes.
//!
//! The state lives here, outside any handler, because a handler does not live as long as a
//! client: rmcp 3.9 builds a fresh handler for every 2026-07-28 HTTP request (the protocol is
//! stateless there) and one per session for the 2025-11-25 era. A [`ClientKey`] names the
//! client across all of them: the stdio connection, the legacy SSE connection, the HTTP
//! session id, or (stateless) a hash of the credential the client sends.
//!
//! Each client's set is capped: exposing a new endpoint past the cap drops the least recently
//! used one (a shortlist that grows without bound would recreate the very problem this server
//! solves). Clients idle for longer than the expiry lose their set, so memory returns to
//! baseline after clients go away even when they never say goodbye; a client with an open
//! `subscriptions/listen` stream is not idle.

use rmcp::service::{Peer, SubscriptionSink};
use rmcp::RoleServer;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Who a set of exposed tools belongs to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ClientKey(String);

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientKey({self})")
    }
}

impl ClientKey {
    /// The one client of a stdio connection.
    pub fn stdio() -> ClientKey {
        ClientKey("stdio".into())
    }

    /// A legacy (2024-11-05) HTTP+SSE connection.
    pub fn sse(connection: &str) -> ClientKey {
        ClientKey(format!("sse:{connection}"))
    }

    /// A streamable HTTP session (protocol 2025-11-25 and older).
    pub fn session(id: &str) -> ClientKey {
        ClientKey(format!("session:{id}"))
    }

    /// A stateless (2026-07-28) HTTP client, known only by the credential it presents. The
    /// credential is hashed at once so the secret never sits in a map key, a log line or a
    /// debug dump. Clients without one share the anonymous set.
    pub fn credential(authorization: Option<&[u8]>) -> ClientKey {
        match authorization.filter(|a| !a.is_empty()) {
            Some(a) => {
                let digest = Sha256::digest(a);
                ClientKey(format!("credential:{}", &hex::encode(digest)[..16]))
            }
            None => ClientKey("anonymous".into()),
        }
    }
}

/// Logs name a client by kind and a short digest: a session id is a bearer capability for
/// that session, so it is never printed as such.
impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.split_once(':') {
            Some((kind @ ("session" | "sse"), id)) => {
                let digest = hex::encode(Sha256::digest(id.as_bytes()));
                write!(f, "{kind}#{}", &digest[..8])
            }
            _ => f.write_str(&self.0),
        }
    }
}

/// What one `expose` call changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Positions that joined the set.
    pub added: Vec<usize>,
    /// Positions that left it (least recently used first).
    pub removed: Vec<usize>,
}

impl Change {
    /// Whether the set of tools differs, i.e. whether the client must be told.
    pub fn is_change(&self) -> bool {
        !self.added.is_empty() || !self.removed.is_empty()
    }
}

/// One client's state.
#[derive(Default)]
struct Entry {
    /// Exposed endpoint positions, least recently used first.
    exposed: Vec<usize>,
    last_seen: Option<Instant>,
    /// Open `subscriptions/listen` streams that asked for tool list changes.
    listeners: Vec<(u64, SubscriptionSink)>,
}

/// Every client's exposed set; see the module documentation.
pub struct ClientRegistry {
    entries: Mutex<HashMap<ClientKey, Entry>>,
    /// Session-era connections, told on their own channel when the catalog changes.
    peers: Mutex<HashMap<u64, Peer<RoleServer>>>,
    cap: usize,
    idle: Duration,
    next_listener: std::sync::atomic::AtomicU64,
}

impl ClientRegistry {
    /// A registry whose sets hold at most `cap` tools and whose clients are forgotten after
    /// `idle` without a request.
    pub fn new(cap: usize, idle: Duration) -> ClientRegistry {
        ClientRegistry {
            entries: Mutex::new(HashMap::new()),
            peers: Mutex::new(HashMap::new()),
            cap: cap.max(1),
            idle,
            next_listener: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// The most tools one client sees at once.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// A poisoned lock only means another request panicked mid-update; the map itself is
    /// still a valid map, so keep serving rather than failing every later request.
    fn lock(&self) -> MutexGuard<'_, HashMap<ClientKey, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client's exposed positions, least recently used first; marks it as seen.
    pub fn exposed(&self, key: &ClientKey) -> Vec<usize> {
        let mut map = self.lock();
        match map.get_mut(key) {
            Some(e) => {
                e.last_seen = Some(Instant::now());
                e.exposed.clone()
            }
            None => Vec::new(),
        }
    }

    /// Adds `ranked` (best first) to the client's set. The best one becomes the most recently
    /// used, so a later eviction takes the weakest candidates first; whatever exceeds the cap
    /// leaves, least recently used first.
    pub fn expose(&self, key: &ClientKey, ranked: &[usize]) -> Change {
        let mut map = self.lock();
        let entry = map.entry(key.clone()).or_default();
        entry.last_seen = Some(Instant::now());
        let mut change = Change::default();
        for &pos in ranked.iter().take(self.cap).rev() {
            if let Some(i) = entry.exposed.iter().position(|&p| p == pos) {
                entry.exposed.remove(i);
            } else {
                change.added.push(pos);
            }
            entry.exposed.push(pos);
        }
        while entry.exposed.len() > self.cap {
            let gone = entry.exposed.remove(0);
            // A tool added and evicted in the same call never reached the client.
            if let Some(i) = change.added.iter().position(|&p| p == gone) {
                change.added.remove(i);
            } else {
                change.removed.push(gone);
            }
        }
        change.added.reverse();
        change
    }

    /// Marks an exposed tool as just used (a direct call), so it is evicted last.
    pub fn touch(&self, key: &ClientKey, pos: usize) {
        let mut map = self.lock();
        if let Some(e) = map.get_mut(key) {
            e.last_seen = Some(Instant::now());
            if let Some(i) = e.exposed.iter().position(|&p| p == pos) {
                let p = e.exposed.remove(i);
                e.exposed.push(p);
            }
        }
    }

    /// Registers an open listen stream; returns the id to unregister it with.
    pub fn add_listener(&self, key: &ClientKey, sink: SubscriptionSink) -> u64 {
        let id = self
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.lock();
        let entry = map.entry(key.clone()).or_default();
        entry.last_seen = Some(Instant::now());
        entry.listeners.push((id, sink));
        id
    }

    /// Unregisters a listen stream that ended.
    pub fn remove_listener(&self, key: &ClientKey, id: u64) {
        let mut map = self.lock();
        if let Some(e) = map.get_mut(key) {
            e.listeners.retain(|(i, _)| *i != id);
            e.last_seen = Some(Instant::now());
        }
    }

    /// The client's open listen streams.
    pub fn listeners(&self, key: &ClientKey) -> Vec<SubscriptionSink> {
        self.lock()
            .get(key)
            .map(|e| e.listeners.iter().map(|(_, s)| s.clone()).collect())
            .unwrap_or_default()
    }

    /// Every open listen stream, of every client (a catalog change concerns them all).
    pub fn all_listeners(&self) -> Vec<SubscriptionSink> {
        self.lock()
            .values()
            .flat_map(|e| e.listeners.iter().map(|(_, s)| s.clone()))
            .collect()
    }

    /// Registers a session-era connection to tell of catalog changes; returns the id to
    /// unregister it with when the connection ends.
    pub fn add_peer(&self, peer: Peer<RoleServer>) -> u64 {
        let id = self
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, peer);
        id
    }

    /// Unregisters a connection that ended.
    pub fn remove_peer(&self, id: u64) {
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    /// The open session-era connections.
    pub fn peers(&self) -> Vec<Peer<RoleServer>> {
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// Maps every exposed position through `f` (a new catalog's position of the same tool),
    /// dropping the tools `f` does not find. Order (recency) is kept.
    pub fn remap(&self, mut f: impl FnMut(usize) -> Option<usize>) {
        for e in self.lock().values_mut() {
            e.exposed = e.exposed.iter().filter_map(|&p| f(p)).collect();
        }
    }

    /// Forgets a client whose connection or session ended.
    pub fn remove(&self, key: &ClientKey) {
        self.lock().remove(key);
    }

    /// Forgets clients idle for longer than the expiry that have no open listen stream.
    /// Returns how many were forgotten.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, e| {
            !e.listeners.is_empty()
                || e.last_seen
                    .is_some_and(|t| now.saturating_duration_since(t) < self.idle)
        });
        before - map.len()
    }

    /// Number of clients with state.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no client has state.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(cap: usize) -> ClientRegistry {
        ClientRegistry::new(cap, Duration::from_secs(60))
    }

    #[test]
    fn exposes_best_last_and_reports_changes() {
        let r = reg(5);
        let k = ClientKey::stdio();
        let c = r.expose(&k, &[7, 3, 9]);
        assert_eq!(c.added, vec![7, 3, 9]);
        assert!(c.removed.is_empty());
        // Best hit is the most recently used.
        assert_eq!(r.exposed(&k), vec![9, 3, 7]);
        // The same shortlist again changes nothing.
        assert!(!r.expose(&k, &[7, 3, 9]).is_change());
    }

    #[test]
    fn evicts_least_recently_used_past_the_cap() {
        let r = reg(3);
        let k = ClientKey::stdio();
        r.expose(&k, &[1, 2, 3]); // order: 3 2 1
        r.touch(&k, 3); // order: 2 1 3
        let c = r.expose(&k, &[4]);
        assert_eq!(c.added, vec![4]);
        assert_eq!(c.removed, vec![2]);
        assert_eq!(r.exposed(&k), vec![1, 3, 4]);
    }

    #[test]
    fn more_hits_than_the_cap_keep_the_best() {
        let r = reg(2);
        let k = ClientKey::stdio();
        let c = r.expose(&k, &[10, 11, 12, 13]);
        assert_eq!(c.added, vec![10, 11]);
        assert_eq!(r.exposed(&k).len(), 2);
    }

    #[test]
    fn clients_are_separate() {
        let r = reg(5);
        r.expose(&ClientKey::session("a"), &[1]);
        r.expose(&ClientKey::session("b"), &[2]);
        assert_eq!(r.exposed(&ClientKey::session("a")), vec![1]);
        assert_eq!(r.exposed(&ClientKey::session("b")), vec![2]);
        assert!(r.exposed(&ClientKey::stdio()).is_empty());
    }

    #[test]
    fn idle_clients_are_swept() {
        let r = ClientRegistry::new(5, Duration::from_millis(10));
        r.expose(&ClientKey::session("a"), &[1]);
        assert_eq!(r.sweep(Instant::now()), 0);
        assert_eq!(r.sweep(Instant::now() + Duration::from_secs(1)), 1);
        assert!(r.is_empty());
    }

    #[test]
    fn remap_keeps_found_tools_in_order() {
        let r = reg(5);
        let k = ClientKey::stdio();
        r.expose(&k, &[1, 2, 3]); // order: 3 2 1
        r.remap(|p| (p != 2).then_some(p * 10));
        assert_eq!(r.exposed(&k), vec![30, 10]);
    }

    #[test]
    fn credentials_are_hashed() {
        let k = ClientKey::credential(Some(b"Bearer s3cret"));
        assert!(!k.to_string().contains("s3cret"));
        assert_eq!(k, ClientKey::credential(Some(b"Bearer s3cret")));
        assert_ne!(k, ClientKey::credential(Some(b"Bearer other")));
        assert_eq!(ClientKey::credential(None).to_string(), "anonymous");
        let session = ClientKey::session("0123-secret-session");
        assert!(!session.to_string().contains("secret"));
        assert!(session.to_string().starts_with("session#"));
    }
}
