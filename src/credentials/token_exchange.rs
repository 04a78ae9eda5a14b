//! OAuth 2.0 token exchange (RFC 8693) on behalf of the caller: the person's MCP access
//! token (the subject token) is traded at the organisation's identity provider for a token
//! for one upstream API, with the same person as subject. Tokens are cached per person,
//! OAuth client and scopes of the subject token, and used until shortly before they
//! expire, never beyond the subject token's own expiry.
//!
//! The client and scopes are part of the key because the provider may give a token
//! exchanged from one client's token other rights than one from another's (a client it
//! trusts less, a token with fewer scopes): a token exchanged for a person through one
//! client is never used for their calls through another.
//!
//! Each key has a lock of its own: one person's exchange in flight (or a slow provider)
//! holds up nobody else, while two calls of one person through one client share one
//! exchange.

use super::token_endpoint::{TokenEndpoint, EXPIRY_MARGIN};
use super::{CredentialError, Obtained, Person};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// Tokens kept in memory at most; past it, expired ones are forgotten first, then every
/// one not in the middle of an exchange.
const MAX_CACHED: usize = 10_000;
/// Tokens kept per person at most (one per OAuth client and scope set they call through):
/// a person who makes up clients or scope sets forgets their own tokens, never others'.
const MAX_PER_PERSON: usize = 16;

#[derive(Clone)]
struct Cached {
    token: String,
    good_until: Instant,
}

type Slot = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// Whose exchanged token: the person, the OAuth client their token was issued to, and its
/// scopes.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    sub: String,
    client_id: Option<String>,
    scopes: Vec<String>,
}

impl Key {
    fn of(p: &Person) -> Key {
        Key {
            sub: p.sub.clone(),
            client_id: p.client_id.clone(),
            scopes: p.scopes.iter().cloned().collect(),
        }
    }
}

/// Exchanges people's tokens for one API's.
pub struct TokenExchange {
    endpoint: TokenEndpoint,
    /// The API, as the identity provider names it (`audience`).
    audience: String,
    scope: Option<String>,
    people: Mutex<HashMap<Key, Slot>>,
}

impl std::fmt::Debug for TokenExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenExchange")
            .field("endpoint", &self.endpoint)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl TokenExchange {
    pub fn new(
        token_url: &str,
        client_id: &str,
        client_secret: &str,
        audience: &str,
        scope: Option<&str>,
    ) -> Result<TokenExchange, CredentialError> {
        Ok(TokenExchange {
            endpoint: TokenEndpoint::new(token_url, client_id, client_secret)?,
            audience: audience.into(),
            scope: scope.map(str::to_string),
            people: Mutex::new(HashMap::new()),
        })
    }

    /// Where exchanges are posted.
    pub fn token_url(&self) -> &str {
        self.endpoint.url()
    }

    /// The lock and cache of one key, made on first use.
    fn slot(&self, key: Key) -> Slot {
        let mut people = self.people.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = people.get(&key) {
            return Arc::clone(s);
        }
        if people.keys().filter(|k| k.sub == key.sub).count() >= MAX_PER_PERSON {
            people.retain(|k, s| k.sub != key.sub || s.try_lock().is_err());
        }
        if people.len() >= MAX_CACHED {
            let now = Instant::now();
            // Keep only people in the middle of an exchange or with a token still good.
            people.retain(|_, s| match s.try_lock() {
                Ok(c) => c.as_ref().is_some_and(|c| now < c.good_until),
                Err(_) => true,
            });
            if people.len() >= MAX_CACHED {
                people.retain(|_, s| s.try_lock().is_err());
            }
        }
        Arc::clone(people.entry(key).or_default())
    }

    /// How many tokens are kept (tests: memory stays bounded).
    pub fn cached(&self) -> usize {
        self.people
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The API token of `person`, exchanged for their verified MCP access token.
    pub async fn token_for(&self, person: &Person) -> Result<Obtained, CredentialError> {
        let (subject_token, subject_expires_at) = (&person.subject_token, person.expires_at);
        let slot = self.slot(Key::of(person));
        let mut cached = slot.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.good_until) {
            return Ok(Obtained {
                value: c.token.clone(),
                good_until: c.good_until,
            });
        }
        let mut form = vec![
            ("grant_type", GRANT),
            ("subject_token", subject_token.as_str()),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("requested_token_type", ACCESS_TOKEN_TYPE),
            ("audience", self.audience.as_str()),
        ];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        let (token, lifetime) = self.endpoint.request(&form).await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let subject_left = Duration::from_secs(subject_expires_at.saturating_sub(now));
        let good_for = lifetime.min(subject_left).saturating_sub(EXPIRY_MARGIN);
        let good_until = Instant::now() + good_for;
        *cached = Some(Cached {
            token: token.clone(),
            good_until,
        });
        Ok(Obtained {
            value: token,
            good_until,
        })
    }

    /// Forgets the token exchanged for `person`'s access token (the API refused it).
    pub async fn invalidate(&self, person: &Person) {
        let slot = self
            .people
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&Key::of(person))
            .cloned();
        if let Some(s) = slot {
            *s.lock().await = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(sub: &str, client: usize) -> Key {
        Key {
            sub: sub.into(),
            client_id: Some(format!("client-{client}")),
            scopes: vec!["read".into()],
        }
    }

    /// One person cycling through made-up clients keeps at most their own share of the
    /// cache, and never pushes another person's token out.
    #[test]
    fn one_person_cannot_flush_the_others() {
        let x = TokenExchange::new("http://127.0.0.1:9/token", "c", "s", "api", None).unwrap();
        let alice = x.slot(key("alice", 0));
        *alice.try_lock().unwrap() = Some(Cached {
            token: "alice-token".into(),
            good_until: Instant::now() + Duration::from_secs(600),
        });
        for c in 0..MAX_CACHED + 100 {
            x.slot(key("mallory", c));
        }
        assert!(x.cached() <= MAX_PER_PERSON + 1, "{}", x.cached());
        let again = x.slot(key("alice", 0));
        assert!(Arc::ptr_eq(&alice, &again));
        assert_eq!(
            again.try_lock().unwrap().as_ref().map(|c| c.token.as_str()),
            Some("alice-token")
        );
    }
}
