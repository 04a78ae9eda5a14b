//! The issuer's signing keys: found through its discovery document, fetched, cached, and
//! fetched again when a token names a key the cache does not hold (a key rotation).
//!
//! Refetches for unknown `kid`s are rate-limited: otherwise anyone could make the server
//! hit the identity provider once per request by sending tokens with made-up key ids.
//! Tokens with known keys never wait on a fetch longer than [`FETCH_TIMEOUT`], and a hung
//! provider holds no request longer than that either. Keys older than an hour are used
//! while a refetch fails, for one more hour at most: a provider that stays away long
//! enough stops every token rather than trusting keys it may have withdrawn.

use super::discovery::{self, Discovery, FETCH_TIMEOUT};
use jsonwebtoken::jwk::{Jwk, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long a fetched key set is trusted before it is fetched again on the next token.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// How much longer an old key set answers while refetches fail.
const MAX_STALE: Duration = Duration::from_secs(3600);

/// One usable verification key.
#[derive(Clone)]
pub struct Key {
    pub decoding: DecodingKey,
    /// The algorithm the key is published for (`alg`), when the JWK says.
    pub alg: Option<Algorithm>,
}

/// Why no key could be found for a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The key set holds no key with this id (after a refetch, or with one refused by the
    /// rate limit).
    Unknown(String),
    /// The issuer's keys could not be fetched at all: the server cannot check any token.
    Unavailable(String),
}

#[derive(Default)]
struct KeySet {
    by_kid: HashMap<String, Key>,
    /// Keys without a `kid`, usable only by tokens without one.
    anonymous: Vec<Key>,
    fetched_at: Option<Instant>,
}

impl KeySet {
    fn age(&self) -> Option<Duration> {
        self.fetched_at.map(|t| t.elapsed())
    }
}

struct FetchState {
    last_attempt: Option<Instant>,
    fetches: u64,
}

/// The issuer's key cache.
pub struct Jwks {
    discovery: Arc<Discovery>,
    http: reqwest::Client,
    min_refetch: Duration,
    keys: RwLock<Arc<KeySet>>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl Jwks {
    pub fn new(issuer: &str, min_refetch: Duration) -> anyhow::Result<Jwks> {
        Jwks::with_discovery(Arc::new(Discovery::new(issuer)?), min_refetch)
    }

    /// A key cache finding the keys through `discovery` (shared with whoever else reads
    /// the issuer's metadata).
    pub fn with_discovery(
        discovery: Arc<Discovery>,
        min_refetch: Duration,
    ) -> anyhow::Result<Jwks> {
        Ok(Jwks {
            discovery,
            http: discovery::client()?,
            min_refetch,
            keys: RwLock::new(Arc::new(KeySet::default())),
            fetch: tokio::sync::Mutex::new(FetchState {
                last_attempt: None,
                fetches: 0,
            }),
        })
    }

    /// How many times the key set was fetched (tests, diagnostics).
    pub async fn fetch_count(&self) -> u64 {
        self.fetch.lock().await.fetches
    }

    fn snapshot(&self) -> Arc<KeySet> {
        match self.keys.read() {
            Ok(k) => Arc::clone(&k),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn lookup(set: &KeySet, kid: Option<&str>) -> Option<Key> {
        match kid {
            Some(k) => set.by_kid.get(k).cloned(),
            None if set.anonymous.len() + set.by_kid.len() == 1 => set
                .anonymous
                .first()
                .or_else(|| set.by_kid.values().next())
                .cloned(),
            None => None,
        }
    }

    /// A key of `set` that may still be used though the set is old.
    fn usable_stale(set: &KeySet, kid: Option<&str>) -> Option<Key> {
        set.age()
            .filter(|a| *a < MAX_AGE + MAX_STALE)
            .and_then(|_| Self::lookup(set, kid))
    }

    /// The key for a token's `kid`, fetching the key set when it is unknown or old.
    pub async fn key(&self, kid: Option<&str>) -> Result<Key, KeyError> {
        let set = self.snapshot();
        let fresh = set.age().is_some_and(|a| a < MAX_AGE);
        if let (true, Some(k)) = (fresh, Self::lookup(&set, kid)) {
            return Ok(k);
        }
        // A request with a key the old set holds takes the fetch only when nobody else is
        // doing it; others wait for the fetch at most FETCH_TIMEOUT.
        let state = match Self::usable_stale(&set, kid) {
            Some(k) => match self.fetch.try_lock() {
                Ok(state) => state,
                Err(_) => return Ok(k),
            },
            None => match tokio::time::timeout(FETCH_TIMEOUT, self.fetch.lock()).await {
                Ok(state) => state,
                Err(_) => {
                    return Err(KeyError::Unavailable(
                        "the issuer's signing keys are being fetched and the issuer is slow; \
                         try again shortly"
                            .into(),
                    ))
                }
            },
        };
        let mut state = state;
        // Another request may have fetched while this one waited.
        let set = self.snapshot();
        let fresh = set.age().is_some_and(|a| a < MAX_AGE);
        if let (true, Some(k)) = (fresh, Self::lookup(&set, kid)) {
            return Ok(k);
        }
        let limited = state
            .last_attempt
            .is_some_and(|t| t.elapsed() < self.min_refetch);
        if !limited {
            state.last_attempt = Some(Instant::now());
            state.fetches += 1;
            let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch_keys())
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "the issuer did not answer within {} s",
                        FETCH_TIMEOUT.as_secs()
                    ))
                });
            match fetched {
                Ok(new) => {
                    tracing::info!(keys = new.by_kid.len() + new.anonymous.len(), issuer = %self.discovery.issuer(), "fetched the issuer's signing keys");
                    let new = Arc::new(new);
                    match self.keys.write() {
                        Ok(mut k) => *k = Arc::clone(&new),
                        Err(poisoned) => *poisoned.into_inner() = Arc::clone(&new),
                    }
                    return Self::lookup(&new, kid).ok_or_else(|| unknown(kid));
                }
                Err(e) => {
                    tracing::warn!(issuer = %self.discovery.issuer(), error = %e, "cannot fetch the issuer's signing keys");
                    if set.fetched_at.is_none() {
                        return Err(KeyError::Unavailable(e));
                    }
                }
            }
        } else if set.fetched_at.is_none() {
            return Err(KeyError::Unavailable(
                "the issuer's signing keys could not be fetched; retrying shortly".into(),
            ));
        }
        // An old set answers for the keys it holds, for a while, until a fetch succeeds.
        match Self::usable_stale(&set, kid) {
            Some(k) => Ok(k),
            None if Self::lookup(&set, kid).is_some() => Err(KeyError::Unavailable(
                "the issuer's signing keys are too old to trust and could not be fetched again"
                    .into(),
            )),
            None => Err(unknown(kid)),
        }
    }

    async fn fetch_keys(&self) -> Result<KeySet, String> {
        let uri = self.discovery.metadata().await?.jwks_uri;
        let doc = discovery::get_json(&self.http, &uri).await?;
        parse_key_set(&doc).map_err(|e| format!("{uri}: {e}"))
    }
}

#[cfg(test)]
impl Jwks {
    /// Makes the key set look fetched `by` earlier (tests of old keys).
    fn backdate(&self, by: Duration) {
        let mut k = self.keys.write().unwrap();
        let set = KeySet {
            by_kid: k.by_kid.clone(),
            anonymous: k.anonymous.clone(),
            fetched_at: k.fetched_at.and_then(|t| t.checked_sub(by)),
        };
        *k = Arc::new(set);
    }
}

fn unknown(kid: Option<&str>) -> KeyError {
    KeyError::Unknown(kid.unwrap_or("(none)").to_string())
}

/// The signing keys of a JWKS document. Keys that cannot verify signatures here
/// (encryption keys, unknown key types) are skipped, not fatal: identity providers publish
/// such keys beside their signing keys.
fn parse_key_set(doc: &serde_json::Value) -> Result<KeySet, String> {
    let keys = doc
        .get("keys")
        .and_then(|k| k.as_array())
        .ok_or("no 'keys' array")?;
    let mut set = KeySet {
        fetched_at: Some(Instant::now()),
        ..Default::default()
    };
    for raw in keys {
        if raw.get("use").and_then(|u| u.as_str()) == Some("enc") {
            continue;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
            tracing::debug!("skipping a JWK of a kind this server does not verify with");
            continue;
        };
        let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let alg = jwk.common.key_algorithm.and_then(signing_alg);
        let key = Key { decoding, alg };
        match jwk.common.key_id {
            Some(kid) => {
                set.by_kid.insert(kid, key);
            }
            None => set.anonymous.push(key),
        }
    }
    Ok(set)
}

fn signing_alg(a: KeyAlgorithm) -> Option<Algorithm> {
    Some(match a {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::HS384 => Algorithm::HS384,
        KeyAlgorithm::HS512 => Algorithm::HS512,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// An issuer on loopback whose JWKS holds one key under `kid` and counts the fetches.
    async fn issuer(kid: &'static str) -> (String, Arc<AtomicU64>) {
        let (base, hits, _) = issuer_with(kid, Arc::new(AtomicU64::new(0))).await;
        (base, hits)
    }

    /// [`issuer`] whose JWKS answers after `delay` seconds (0: at once; u64::MAX: 500).
    async fn issuer_with(
        kid: &'static str,
        delay: Arc<AtomicU64>,
    ) -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
        let hits = Arc::new(AtomicU64::new(0));
        let slow = Arc::clone(&delay);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (b, h) = (base.clone(), Arc::clone(&hits));
        let app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || {
                    let b = b.clone();
                    async move {
                        axum::Json(serde_json::json!({"issuer": b, "jwks_uri": format!("{b}/jwks")}))
                    }
                }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    h.fetch_add(1, Ordering::SeqCst);
                    let wait = slow.load(Ordering::SeqCst);
                    async move {
                        if wait == u64::MAX {
                            return Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
                        }
                        tokio::time::sleep(Duration::from_secs(wait)).await;
                        // An RSA public key (the RFC 7517 appendix A.1 example), an
                        // encryption key and a key type this server does not know.
                        Ok(axum::Json(serde_json::json!({"keys": [
                            {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "e": "AQAB",
                             "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"},
                            {"kty": "RSA", "kid": "enc-1", "use": "enc", "e": "AQAB", "n": "AQAB"},
                            {"kty": "XYZ", "kid": "odd"}
                        ]})))
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, hits, delay)
    }

    #[tokio::test]
    async fn a_hung_issuer_holds_no_request_longer_than_the_fetch_timeout() {
        let (base, _, _) = issuer_with("k1", Arc::new(AtomicU64::new(30))).await;
        let jwks = Arc::new(Jwks::new(&base, Duration::from_millis(1)).unwrap());
        let started = Instant::now();
        // Three requests at once: none waits much longer than one fetch timeout.
        let waits: Vec<_> = (0..3)
            .map(|_| {
                let j = Arc::clone(&jwks);
                tokio::spawn(async move {
                    let r = j.key(Some("k1")).await;
                    (r.is_err(), started.elapsed())
                })
            })
            .collect();
        for w in waits {
            let (failed, took) = w.await.unwrap();
            assert!(failed, "no key could be had from a hung issuer");
            assert!(
                took < FETCH_TIMEOUT * 2 + Duration::from_millis(500),
                "{took:?}"
            );
        }
    }

    #[tokio::test]
    async fn old_keys_answer_while_fetches_fail_but_not_forever() {
        let delay = Arc::new(AtomicU64::new(0));
        let (base, hits, delay) = issuer_with("k1", delay).await;
        let jwks = Jwks::new(&base, Duration::from_millis(1)).unwrap();
        assert!(jwks.key(Some("k1")).await.is_ok());
        delay.store(u64::MAX, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        jwks.backdate(MAX_AGE + Duration::from_secs(600));
        assert!(
            jwks.key(Some("k1")).await.is_ok(),
            "an old key answers for a while"
        );
        assert!(hits.load(Ordering::SeqCst) >= 2, "a refetch was tried");
        tokio::time::sleep(Duration::from_millis(5)).await;
        jwks.backdate(MAX_STALE);
        assert!(
            matches!(jwks.key(Some("k1")).await, Err(KeyError::Unavailable(_))),
            "keys too old are not trusted"
        );
        delay.store(0, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(
            jwks.key(Some("k1")).await.is_ok(),
            "a fetch that works again restores them"
        );
    }

    #[tokio::test]
    async fn known_keys_are_cached_and_unknown_kids_refetch_at_most_once_per_interval() {
        let (base, hits) = issuer("k1").await;
        let jwks = Jwks::new(&base, Duration::from_millis(300)).unwrap();
        assert!(jwks.key(Some("k1")).await.is_ok());
        assert!(jwks.key(Some("k1")).await.is_ok());
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "a known key is served from the cache"
        );
        assert!(matches!(
            jwks.key(Some("enc-1")).await,
            Err(KeyError::Unknown(_))
        ));
        assert!(matches!(
            jwks.key(Some("odd")).await,
            Err(KeyError::Unknown(_))
        ));
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "refetches within the interval are refused"
        );
        tokio::time::sleep(Duration::from_millis(350)).await;
        assert!(matches!(
            jwks.key(Some("nope")).await,
            Err(KeyError::Unknown(_))
        ));
        assert_eq!(
            hits.load(Ordering::SeqCst),
            2,
            "an unknown kid refetches after the interval"
        );
        assert!(
            jwks.key(None).await.is_ok(),
            "a token without kid uses the only key"
        );
    }

    #[tokio::test]
    async fn an_unreachable_or_mismatched_issuer_is_unavailable() {
        let jwks = Jwks::new("http://127.0.0.1:9", Duration::from_secs(60)).unwrap();
        match jwks.key(Some("k1")).await {
            Err(KeyError::Unavailable(m)) => assert!(m.contains("127.0.0.1:9"), "{m}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        let (base, _) = issuer("k1").await;
        let jwks = Jwks::new(&format!("{base}/other"), Duration::from_secs(60)).unwrap();
        assert!(matches!(
            jwks.key(Some("k1")).await,
            Err(KeyError::Unavailable(_))
        ));
    }
}
