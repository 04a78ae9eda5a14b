//! The state store against real databases: a SQLite file and a throwaway PostgreSQL
//! cluster (Debian's package, started by the test on 127.0.0.1). Both run the same
//! scenario; each also opens a store an older schema left, and shows that a failure in the
//! middle of a two-write operation leaves nothing half-written.

#[path = "support/postgres.rs"]
mod postgres;

use shortlist::store::postgres::PostgresBackend;
use shortlist::store::sqlite::SqliteBackend;
use shortlist::store::{
    AuditEntry, Backend, ConsentLimits, Event, Location, PendingConsent, PinDecision, PinState,
    SealedConsent, SealedToken, Sealer, SeenTool, Store, StoreError, ToolPin, UpstreamToken,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

fn sealer() -> Option<Sealer> {
    Some(Sealer::from_text(KEY).expect("key"))
}

fn token(access: &str) -> UpstreamToken {
    UpstreamToken {
        access_token: access.into(),
        refresh_token: Some(format!("{access}-refresh")),
        expires_at: Some(shortlist::store::now() + 3600),
        scope: "repo read:org".into(),
    }
}

fn consent(state: &str, sub: &str, api: &str, ttl: i64) -> PendingConsent {
    let now = shortlist::store::now();
    PendingConsent {
        state: state.into(),
        sub: sub.into(),
        api: api.into(),
        pkce_verifier: format!("verifier-of-{state}"),
        created_at: now,
        expires_at: now + ttl,
        client_id: Some("claude-code".into()),
    }
}

fn limits() -> ConsentLimits {
    ConsentLimits::default()
}

/// What every backend must do.
async fn exercise(store: &Store) {
    // Tokens: per person and API, sealed at rest, bound to their row.
    store
        .put_token("alice", "gh", &token("alice-at"))
        .await
        .unwrap();
    store
        .put_token("bob", "gh", &token("bob-at"))
        .await
        .unwrap();
    store
        .put_token("alice", "jira", &token("alice-jira"))
        .await
        .unwrap();
    let a = store.token("alice", "gh").await.unwrap().unwrap();
    assert_eq!(a.access_token, "alice-at");
    assert_eq!(a.refresh_token.as_deref(), Some("alice-at-refresh"));
    assert_eq!(a.scope, "repo read:org");
    assert_eq!(
        store
            .token("bob", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "bob-at"
    );
    assert_eq!(store.token("carol", "gh").await.unwrap(), None);
    let raw = store.backend().token("alice", "gh").await.unwrap().unwrap();
    assert!(
        !raw.sealed.windows(8).any(|w| w == b"alice-at"),
        "sealed at rest"
    );
    assert_eq!(
        store
            .token_apis("alice")
            .await
            .unwrap()
            .iter()
            .map(|(a, _)| a.as_str())
            .collect::<Vec<_>>(),
        ["gh", "jira"]
    );
    // Bob's sealed token copied into Alice's row does not open as hers.
    let bobs = store.backend().token("bob", "gh").await.unwrap().unwrap();
    store
        .backend()
        .put_token(SealedToken {
            sub: "alice".into(),
            ..bobs
        })
        .await
        .unwrap();
    // It counts as absent (the person is asked to consent again), and it can be deleted.
    assert_eq!(store.token("alice", "gh").await.unwrap(), None);
    // Replacing and revoking.
    store
        .put_token("alice", "gh", &token("alice-at-2"))
        .await
        .unwrap();
    assert_eq!(
        store
            .token("alice", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "alice-at-2"
    );
    assert!(store.delete_token("alice", "gh").await.unwrap());
    assert!(!store.delete_token("alice", "gh").await.unwrap());
    assert_eq!(store.token("alice", "gh").await.unwrap(), None);

    // Consents: found by state, completed once, expired ones gone.
    store
        .put_consent(&consent("st-1", "alice", "gh", 600), limits())
        .await
        .unwrap();
    let c = store.consent("st-1").await.unwrap().unwrap();
    assert_eq!(
        (
            c.sub.as_str(),
            c.pkce_verifier.as_str(),
            c.client_id.as_deref()
        ),
        ("alice", "verifier-of-st-1", Some("claude-code"))
    );
    assert!(store
        .complete_consent("st-1", &token("from-consent"))
        .await
        .unwrap());
    assert_eq!(store.consent("st-1").await.unwrap(), None);
    assert!(
        !store
            .complete_consent("st-1", &token("again"))
            .await
            .unwrap(),
        "used once"
    );
    assert_eq!(
        store
            .token("alice", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "from-consent"
    );
    store
        .put_consent(&consent("st-old", "bob", "gh", -1), limits())
        .await
        .unwrap();
    assert_eq!(store.consent("st-old").await.unwrap(), None, "expired");
    assert!(!store
        .complete_consent("st-old", &token("late"))
        .await
        .unwrap());
    assert_eq!(store.expire_consents().await.unwrap(), 1);

    // Pending consents are bounded: a person keeps their five newest, and the table
    // refuses more than its ceiling.
    for i in 0..7 {
        let mut c = consent(&format!("carol-{i}"), "carol", "gh", 600);
        c.created_at += i;
        store.put_consent(&c, limits()).await.unwrap();
    }
    let kept: Vec<bool> = futures::future::join_all((0..7).map(|i| async move {
        store
            .consent(&format!("carol-{i}"))
            .await
            .unwrap()
            .is_some()
    }))
    .await;
    assert_eq!(
        kept,
        [false, false, true, true, true, true, true],
        "the oldest made room"
    );
    let full = ConsentLimits {
        per_person: 5,
        total: 5,
    };
    let e = store
        .put_consent(&consent("dave-1", "dave", "gh", 600), full)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Full(_)), "{e}");
    assert_eq!(
        store.consent("dave-1").await.unwrap(),
        None,
        "nothing written"
    );

    // Audit: events beside calls, newest first, per person or all.
    for (i, (sub, status)) in [("alice", 200u16), ("bob", 404), ("alice", 0)]
        .iter()
        .enumerate()
    {
        let mut e = AuditEntry::event(Event::Call, sub, Some("cli"), "gh").on("gh__list_repos");
        e.at_ms = 1_000 + i as i64;
        e.status = *status;
        e.latency_ms = 12 + i as u32;
        store.record(&e).await.unwrap();
    }
    let mine = store.audit(Some("alice"), 10).await.unwrap();
    assert_eq!(mine.iter().map(|e| e.status).collect::<Vec<_>>(), [0, 200]);
    assert_eq!(store.audit(None, 2).await.unwrap().len(), 2);
    assert_eq!(store.audit(None, 10).await.unwrap()[0].latency_ms, 14);
    // A record written before what it records, then finished with its outcome.
    let mut review = AuditEntry::event(Event::Review, "rita", Some("console"), "gh")
        .with_detail(serde_json::json!({"new": "List repositories."}));
    review.at_ms = 2_000;
    let id = store.record(&review).await.unwrap();
    store
        .finish_call(
            id,
            200,
            0,
            Some(serde_json::json!({"old": "x", "new": "List repositories."})),
        )
        .await
        .unwrap();
    let r = &store.audit(Some("rita"), 1).await.unwrap()[0];
    assert_eq!(
        (r.event.as_str(), r.client_id.as_deref(), r.status),
        ("review", Some("console"), 200)
    );
    assert_eq!(
        r.detail.as_deref(),
        Some(r#"{"old":"x","new":"List repositories."}"#)
    );

    // Locks that replicas share: one holder at a time, given back or expired.
    let hour = Duration::from_secs(3600);
    assert!(store.try_lock("refresh-x", "r1", hour).await.unwrap());
    assert!(!store.try_lock("refresh-x", "r2", hour).await.unwrap());
    store.unlock("refresh-x", "r2").await.unwrap();
    assert!(
        !store.try_lock("refresh-x", "r2", hour).await.unwrap(),
        "not r2's to give"
    );
    store.unlock("refresh-x", "r1").await.unwrap();
    assert!(store
        .try_lock("refresh-x", "r2", Duration::ZERO)
        .await
        .unwrap());
    assert!(
        store.try_lock("refresh-x", "r3", hour).await.unwrap(),
        "an expired lock is taken over"
    );

    // Without a key: the audit log works, secrets are refused with the fix.
    let keyless = Store::with_backend(Arc::clone(store.backend()), None);
    let e = keyless
        .put_token("alice", "x", &token("t"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("SHORTLIST_STATE_KEY"), "{e}");
    assert!(keyless.token("bob", "gh").await.is_err());

    // A changed key: rows sealed under the old one count as absent and can be deleted.
    let other = Store::with_backend(Arc::clone(store.backend()), Some(other_key()));
    assert_eq!(other.token("bob", "gh").await.unwrap(), None);
    // A rotation: the new key with the old one listed still opens the row, and seals it
    // again under the new key on use, after which the old key alone no longer opens it.
    let rotated = Store::with_backend(
        Arc::clone(store.backend()),
        Some(other_key().with_previous(sealer().unwrap())),
    );
    let before = store.backend().token("bob", "gh").await.unwrap().unwrap();
    assert_eq!(
        rotated
            .token("bob", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "bob-at"
    );
    let after = store.backend().token("bob", "gh").await.unwrap().unwrap();
    assert_ne!(
        before.sealed, after.sealed,
        "sealed again under the new key"
    );
    assert_eq!(
        store.token("bob", "gh").await.unwrap(),
        None,
        "the old key alone"
    );
    assert_eq!(
        other
            .token("bob", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "bob-at"
    );
    assert!(other.delete_token("bob", "gh").await.unwrap());
    pins(store).await;
}

fn seen(server: &str, tool: &str, digest: &str, approved_by: Option<&str>) -> SeenTool {
    SeenTool {
        server: server.into(),
        tool: tool.into(),
        digest: digest.into(),
        definition: format!("{{\"name\":\"{tool}\",\"v\":\"{digest}\"}}"),
        approved_by: approved_by.map(String::from),
    }
}

/// Tool pins: a definition is approved as seen (first use) or pending; a tool keeps one
/// row per definition, at most one of them pending; a decision names its digest.
async fn pins(store: &Store) {
    let state = |pins: &[ToolPin], tool: &str, digest: &str| {
        pins.iter()
            .find(|p| p.tool == tool && p.digest == digest)
            .map(|p| p.state)
    };
    let fs = || vec!["fs".to_string()];
    store
        .see_tools(vec![
            seen("fs", "read", "d1", Some("first use")),
            seen("fs", "write", "w1", Some("first use")),
        ])
        .await
        .unwrap();
    store
        .see_tools(vec![seen("git", "log", "l1", None)])
        .await
        .unwrap();
    let all = store
        .tool_pins(vec!["fs".into(), "git".into()])
        .await
        .unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(state(&all, "read", "d1"), Some(PinState::Approved));
    let read = all.iter().find(|p| p.tool == "read").unwrap();
    assert_eq!(read.decided_by.as_deref(), Some("first use"));
    assert!(read.definition.contains("d1"));
    assert_eq!(state(&all, "log", "l1"), Some(PinState::Pending));
    assert!(store
        .tool_pins(vec!["other".into()])
        .await
        .unwrap()
        .is_empty());
    let light = store.backend().tool_pins(fs(), false).await.unwrap();
    assert!(light.iter().all(|p| p.definition.is_empty()), "{light:?}");
    assert_eq!(state(&light, "read", "d1"), Some(PinState::Approved));

    // A changed definition: a pending row beside the approved one; a second change
    // replaces the pending one; seeing the approved one again changes nothing.
    store
        .see_tools(vec![seen("fs", "read", "d2", None)])
        .await
        .unwrap();
    store
        .see_tools(vec![
            seen("fs", "read", "d3", None),
            seen("fs", "read", "d1", None),
        ])
        .await
        .unwrap();
    let now = store.tool_pins(fs()).await.unwrap();
    assert_eq!(state(&now, "read", "d1"), Some(PinState::Approved));
    assert_eq!(state(&now, "read", "d2"), None, "{now:?}");
    assert_eq!(state(&now, "read", "d3"), Some(PinState::Pending));

    assert!(!store
        .decide_tool("fs", "read", "d2", PinDecision::Approve, "alice")
        .await
        .unwrap());
    assert!(store
        .decide_tool("fs", "read", "d3", PinDecision::Reject, "alice")
        .await
        .unwrap());
    // A rejected definition is not replaced by the next change, nor pending again.
    store
        .see_tools(vec![
            seen("fs", "read", "d4", None),
            seen("fs", "read", "d3", None),
        ])
        .await
        .unwrap();
    let now = store.tool_pins(fs()).await.unwrap();
    assert_eq!(state(&now, "read", "d3"), Some(PinState::Rejected));
    assert_eq!(state(&now, "read", "d4"), Some(PinState::Pending));
    assert!(store
        .decide_tool("fs", "read", "d4", PinDecision::Approve, "alice")
        .await
        .unwrap());
    let now = store.tool_pins(fs()).await.unwrap();
    let d4 = now.iter().find(|p| p.digest == "d4").unwrap();
    assert_eq!(d4.state, PinState::Approved);
    assert_eq!(d4.decided_by.as_deref(), Some("alice"));
    assert!(store
        .decide_tool("fs", "read", "d4", PinDecision::Revoke, "bob")
        .await
        .unwrap());
    let now = store.tool_pins(fs()).await.unwrap();
    assert_eq!(state(&now, "read", "d4"), Some(PinState::Pending));
    assert!(!store
        .decide_tool("fs", "nothing", "d4", PinDecision::Approve, "bob")
        .await
        .unwrap());

    // Automatic approvals (first use, warn) replace each other; a reviewer's stays.
    let warned = shortlist::store::pins::WARNED;
    for d in ["w2", "w3"] {
        store
            .see_tools(vec![seen("fs", "write", d, Some(warned))])
            .await
            .unwrap();
    }
    let now = store.tool_pins(fs()).await.unwrap();
    let writes: Vec<&str> = now
        .iter()
        .filter(|p| p.tool == "write")
        .map(|p| p.digest.as_str())
        .collect();
    assert_eq!(writes, vec!["w3"], "{now:?}");
    store
        .see_tools(vec![seen("fs", "read", "d5", Some(warned))])
        .await
        .unwrap();
    let now = store.tool_pins(fs()).await.unwrap();
    assert_eq!(state(&now, "read", "d5"), Some(PinState::Approved));
    assert_eq!(
        state(&now, "read", "d4"),
        Some(PinState::Pending),
        "{now:?}"
    );
    assert_eq!(
        state(&now, "read", "d3"),
        Some(PinState::Rejected),
        "{now:?}"
    );
}

fn other_key() -> Sealer {
    Sealer::from_text(&"cd".repeat(32)).unwrap()
}

/// A backend through which another replica's write lands right after a token is read:
/// the refresh another replica made (under the refresh lock) between this replica's read
/// of a row sealed under a previous key and its sealing the row again.
struct RefreshedMeanwhile {
    inner: Arc<dyn Backend>,
    other_replica: Store,
    refreshed: Mutex<Option<UpstreamToken>>,
}

#[async_trait::async_trait]
impl Backend for RefreshedMeanwhile {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn schema_version(&self) -> Result<i64, StoreError> {
        self.inner.schema_version().await
    }
    async fn put_token(&self, row: SealedToken) -> Result<(), StoreError> {
        self.inner.put_token(row).await
    }
    async fn reseal_token(&self, was: Vec<u8>, row: SealedToken) -> Result<bool, StoreError> {
        self.inner.reseal_token(was, row).await
    }
    async fn token(&self, sub: &str, api: &str) -> Result<Option<SealedToken>, StoreError> {
        let row = self.inner.token(sub, api).await?;
        let refreshed = self.refreshed.lock().unwrap().take();
        if let Some(t) = refreshed {
            self.other_replica.put_token(sub, api, &t).await?;
        }
        Ok(row)
    }
    async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError> {
        self.inner.delete_token(sub, api).await
    }
    async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        self.inner.token_apis(sub).await
    }
    async fn put_consent(
        &self,
        row: SealedConsent,
        limits: ConsentLimits,
    ) -> Result<(), StoreError> {
        self.inner.put_consent(row, limits).await
    }
    async fn consent(&self, state: &str) -> Result<Option<SealedConsent>, StoreError> {
        self.inner.consent(state).await
    }
    async fn complete_consent(
        &self,
        state: &str,
        now: i64,
        token: SealedToken,
    ) -> Result<bool, StoreError> {
        self.inner.complete_consent(state, now, token).await
    }
    async fn expire_consents(&self, now: i64) -> Result<u64, StoreError> {
        self.inner.expire_consents(now).await
    }
    async fn record(&self, e: AuditEntry) -> Result<i64, StoreError> {
        self.inner.record(e).await
    }
    async fn finish_call(
        &self,
        id: i64,
        status: u16,
        latency_ms: u32,
        detail: Option<String>,
    ) -> Result<(), StoreError> {
        self.inner.finish_call(id, status, latency_ms, detail).await
    }
    async fn audit(&self, sub: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
        self.inner.audit(sub, limit).await
    }
    async fn try_lock(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        self.inner.try_lock(name, holder, now_ms, ttl_ms).await
    }
    async fn unlock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.inner.unlock(name, holder).await
    }
    async fn see_tools(&self, seen: Vec<SeenTool>, now_ms: i64) -> Result<(), StoreError> {
        self.inner.see_tools(seen, now_ms).await
    }
    async fn tool_pins(
        &self,
        servers: Vec<String>,
        definitions: bool,
    ) -> Result<Vec<ToolPin>, StoreError> {
        self.inner.tool_pins(servers, definitions).await
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
        self.inner
            .decide_tool(server, tool, digest, decision, by, now_ms)
            .await
    }
}

/// After a key rotation a read seals the row again under the new key; if another replica
/// refreshed the token in between (its refresh token spent, a new one stored), sealing
/// again what was read would bring the spent refresh token back and lose the new one. The
/// row is sealed again only if it is still the row that was read.
async fn sealing_again_keeps_a_refresh_made_meanwhile(backend: Arc<dyn Backend>) {
    let rotated = || Some(other_key().with_previous(sealer().unwrap()));
    Store::with_backend(Arc::clone(&backend), sealer())
        .put_token("dave", "gh", &token("dave-old"))
        .await
        .unwrap();
    let this_replica = Store::with_backend(
        Arc::new(RefreshedMeanwhile {
            inner: Arc::clone(&backend),
            other_replica: Store::with_backend(Arc::clone(&backend), rotated()),
            refreshed: Mutex::new(Some(token("dave-new"))),
        }),
        rotated(),
    );
    let read = this_replica.token("dave", "gh").await.unwrap().unwrap();
    assert_eq!(read.access_token, "dave-old", "what it read");
    let stored = Store::with_backend(Arc::clone(&backend), rotated())
        .token("dave", "gh")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            stored.access_token.as_str(),
            stored.refresh_token.as_deref()
        ),
        ("dave-new", Some("dave-new-refresh")),
        "the other replica's refresh is kept"
    );
    // Unchanged since it was read: sealed again under the new key.
    Store::with_backend(Arc::clone(&backend), sealer())
        .put_token("dave", "gh", &token("dave-new"))
        .await
        .unwrap();
    this_replica.token("dave", "gh").await.unwrap().unwrap();
    assert_eq!(
        Store::with_backend(Arc::clone(&backend), Some(other_key()))
            .token("dave", "gh")
            .await
            .unwrap()
            .map(|t| t.access_token),
        Some("dave-new".to_string())
    );
}

#[tokio::test]
async fn sqlite_sealing_again_keeps_a_refresh_made_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(&dir.path().join("state.sqlite3"))
        .await
        .unwrap();
    sealing_again_keeps_a_refresh_made_meanwhile(Arc::new(backend)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sealing_again_keeps_a_refresh_made_meanwhile() {
    let pg = tokio::task::spawn_blocking(postgres::Postgres::start)
        .await
        .unwrap();
    let backend = PostgresBackend::open(&pg.database("reseal")).await.unwrap();
    sealing_again_keeps_a_refresh_made_meanwhile(Arc::new(backend)).await;
}

#[tokio::test]
async fn sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let loc = Location::parse(None, &dir.path().join("data"));
    let store = Store::open(&loc, sealer()).await.unwrap();
    assert_eq!(
        store.backend().schema_version().await.unwrap(),
        shortlist::store::migrations::latest()
    );
    exercise(&store).await;
    drop(store);
    // Reopened: the data is still there.
    let store = Store::open(&loc, sealer()).await.unwrap();
    assert_eq!(
        store
            .token("alice", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "from-consent"
    );
}

/// A store at schema version 1 (`old`, at `location`) gets a token, is closed, and opens
/// again with today's schema: upgraded, the token kept. The upgraded store is returned.
async fn upgrades_keeping_data(old: Store, location: &Location) -> Store {
    assert_eq!(old.backend().schema_version().await.unwrap(), 1);
    old.put_token("alice", "gh", &token("kept")).await.unwrap();
    drop(old);
    let store = Store::open(location, sealer()).await.unwrap();
    assert_eq!(
        store.backend().schema_version().await.unwrap(),
        shortlist::store::migrations::latest()
    );
    let kept = store.token("alice", "gh").await.unwrap().unwrap();
    assert_eq!(kept.access_token, "kept");
    store
}

#[tokio::test]
async fn sqlite_store_written_by_an_older_schema_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let old = Store::with_backend(
        Arc::new(SqliteBackend::open_at(&path, 1).await.unwrap()),
        sealer(),
    );
    let store = upgrades_keeping_data(old, &Location::Sqlite(path.clone())).await;
    drop(store);
    // A store from a newer shortlist is refused, not guessed at.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)", [])
        .unwrap();
    drop(c);
    let e = Store::open(&Location::Sqlite(path), sealer())
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("newer than this shortlist knows"),
        "{e}"
    );
}

#[tokio::test]
async fn sqlite_failure_between_two_writes_leaves_nothing_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite3");
    let store = Store::open(&Location::Sqlite(path.clone()), sealer())
        .await
        .unwrap();
    store
        .put_consent(&consent("st-1", "alice", "gh", 600), limits())
        .await
        .unwrap();
    // The second write of completing a consent (storing the token) fails, as a full disk
    // or an I/O error would make it, after the first (removing the consent) succeeded.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TRIGGER fail_token BEFORE INSERT ON upstream_tokens
         BEGIN SELECT RAISE(ABORT, 'disk I/O error (simulated)'); END;",
    )
    .unwrap();
    let e = store
        .complete_consent("st-1", &token("t"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("disk I/O error (simulated)"), "{e}");
    assert!(
        store.consent("st-1").await.unwrap().is_some(),
        "the consent is still pending"
    );
    assert_eq!(store.token("alice", "gh").await.unwrap(), None);
    c.execute_batch("DROP TRIGGER fail_token").unwrap();
    assert!(
        store.complete_consent("st-1", &token("t")).await.unwrap(),
        "and can complete later"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store() {
    let mut pg = tokio::task::spawn_blocking(postgres::Postgres::start)
        .await
        .unwrap();

    // The shared scenario.
    let url = pg.database("scenario");
    let store = Store::open(&Location::Postgres(url.clone()), sealer())
        .await
        .unwrap();
    assert_eq!(
        store.backend().schema_version().await.unwrap(),
        shortlist::store::migrations::latest()
    );
    assert!(!store.backend().describe().contains("password"));
    exercise(&store).await;

    // Written by an older schema: opens and upgrades, data kept; a newer one is refused.
    let old_url = pg.database("old");
    let old = Store::with_backend(
        Arc::new(PostgresBackend::open_at(&old_url, 1).await.unwrap()),
        sealer(),
    );
    let _upgraded = upgrades_keeping_data(old, &Location::Postgres(old_url.clone())).await;
    let (raw, conn) = tokio_postgres::connect(&old_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    raw.execute(
        "INSERT INTO schema_migrations VALUES (99, 'future', 0)",
        &[],
    )
    .await
    .unwrap();
    let e = Store::open(&Location::Postgres(old_url), sealer())
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("newer than this shortlist knows"),
        "{e}"
    );

    // The database goes away in the middle of completing a consent: after the consent was
    // removed inside the transaction, before the token was stored.
    let url = pg.database("away");
    let store = Arc::new(
        Store::open(&Location::Postgres(url.clone()), sealer())
            .await
            .unwrap(),
    );
    store
        .put_consent(&consent("st-1", "alice", "gh", 600), limits())
        .await
        .unwrap();
    let (locker, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    locker
        .batch_execute("BEGIN; LOCK TABLE upstream_tokens IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let op = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.complete_consent("st-1", &token("t")).await })
    };
    // Wait until the operation is blocked on the token table, i.e. mid-transaction.
    let mut waiting = 0;
    for _ in 0..100 {
        waiting = locker
            .query_one("SELECT count(*) FROM pg_locks WHERE NOT granted", &[])
            .await
            .unwrap()
            .get::<_, i64>(0);
        if waiting > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiting > 0, "the operation never reached its second write");
    tokio::task::block_in_place(|| pg.kill());
    let e = tokio::time::timeout(Duration::from_secs(20), op)
        .await
        .expect("the call fails promptly")
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
    assert!(e.to_string().contains("PostgreSQL"), "readable: {e}");
    // While it is away, calls fail readably.
    let e = store.token("alice", "gh").await.unwrap_err();
    assert!(e.to_string().contains("unavailable"), "{e}");
    // Back: nothing was half-written, and the same store serves again.
    tokio::task::block_in_place(|| pg.resume());
    assert!(
        store.consent("st-1").await.unwrap().is_some(),
        "the consent is still pending"
    );
    assert_eq!(
        store.token("alice", "gh").await.unwrap(),
        None,
        "no token was stored"
    );
    assert!(store.complete_consent("st-1", &token("t")).await.unwrap());
    assert_eq!(
        store
            .token("alice", "gh")
            .await
            .unwrap()
            .unwrap()
            .access_token,
        "t"
    );
}

/// The state file holds people's subjects, their API use and review text: the folder it
/// lives in is created for its owner alone (0700), the file and its journal 0600, and a
/// file another build left readable to others is tightened when the store opens.
#[cfg(unix)]
#[tokio::test]
async fn sqlite_state_is_readable_by_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let loc = Location::parse(None, &data);
    let store = Store::open(&loc, sealer()).await.unwrap();
    store.put_token("alice", "gh", &token("t0")).await.unwrap();
    assert_eq!(mode(&data), 0o700, "data folder");
    for entry in std::fs::read_dir(&data).unwrap() {
        let p = entry.unwrap().path();
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    drop(store);

    // A state file left readable by others is tightened on open; a folder that exists is
    // the operator's (it may be shared on purpose) and left as it is.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = data.join("state.sqlite3");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = Store::open(&loc, sealer()).await.unwrap();
    assert_eq!(mode(&data), 0o755, "an existing folder is not changed");
    assert_eq!(mode(&file), 0o600, "state file tightened");
    drop(store);

    // A new file in a folder that already exists is created 0600 from the start.
    let elsewhere = dir.path().join("shared");
    std::fs::create_dir(&elsewhere).unwrap();
    let file = elsewhere.join("other.sqlite3");
    let store = Store::open(&Location::Sqlite(file.clone()), sealer())
        .await
        .unwrap();
    assert_eq!(mode(&file), 0o600);
    drop(store);
}
