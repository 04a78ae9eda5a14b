//! A person's stored token over its life: whether it may still be used, its renewal
//! (once across every replica sharing the store, so a rotating refresh token is never
//! spent twice), and its revocation.

use super::authorization_code::AuthorizationCode;
use super::token_endpoint::{Granted, EXPIRY_MARGIN};
use super::Obtained;
use crate::store::{Store, UpstreamToken};
use std::time::{Duration, Instant};

/// How long one replica may hold a person's refresh before others take over.
const REFRESH_LOCK: Duration = Duration::from_secs(15);
/// How long a call waits for another replica's refresh of the same token.
const REFRESH_WAIT: Duration = Duration::from_secs(10);

/// Whether a stored token may still be used.
pub fn fresh(t: &UpstreamToken) -> bool {
    let now = crate::store::now();
    t.expires_at
        .is_none_or(|at| at - now > EXPIRY_MARGIN.as_secs() as i64)
}

/// A stored token as a grant: good until its expiry (less the margin), or an hour when
/// the server never said.
pub fn obtained(t: &UpstreamToken) -> Obtained {
    let left = t
        .expires_at
        .map(|at| (at - crate::store::now() - EXPIRY_MARGIN.as_secs() as i64).max(0) as u64)
        .unwrap_or(3600);
    Obtained {
        value: t.access_token.clone(),
        good_until: Instant::now() + Duration::from_secs(left),
    }
}

/// Refreshes `sub`'s token for `api`, once across every replica sharing the store: the
/// one holding the store's lock refreshes and stores, the others wait for the token it
/// stored rather than spending the (possibly rotating) refresh token a second time.
/// `None` when the token cannot be renewed (the person consents again).
pub async fn refresh_once(
    ac: &AuthorizationCode,
    sub: &str,
    api: &str,
    seen: &UpstreamToken,
    store: &Store,
) -> Option<UpstreamToken> {
    seen.refresh_token.as_ref()?;
    // Named by a digest: no person's name in the lock table, and no byte PostgreSQL's
    // text refuses.
    let lock = {
        use sha2::Digest;
        let d = sha2::Sha256::digest(format!("refresh\0{sub}\0{api}"));
        format!("refresh:{}", hex::encode(&d[..16]))
    };
    // Per attempt, so two calls of one replica also refresh once.
    let holder = uuid::Uuid::new_v4().simple().to_string();
    let deadline = Instant::now() + REFRESH_WAIT;
    // Renewed by another holder of the lock meanwhile, and still usable: the margin that
    // makes a token due for renewal does not apply to one renewed a moment ago.
    let renewed_elsewhere = |c: &UpstreamToken| {
        c.access_token != seen.access_token
            && c.expires_at.is_none_or(|at| at > crate::store::now())
    };
    loop {
        match store.try_lock(&lock, &holder, REFRESH_LOCK).await {
            Ok(true) => {
                // The token may have been renewed between our read and the lock.
                let current = store.token(sub, api).await.ok().flatten();
                let result = match current {
                    Some(c) if renewed_elsewhere(&c) => Some(c),
                    Some(c) => match &c.refresh_token {
                        Some(rt) => match refreshed(ac, rt).await {
                            Some(nt) => match store.put_token(sub, api, &nt).await {
                                Ok(()) => Some(nt),
                                Err(e) => {
                                    tracing::error!(api, error = %e, "a refreshed token could not be stored");
                                    Some(nt)
                                }
                            },
                            None => None,
                        },
                        None => None,
                    },
                    None => None,
                };
                if let Err(e) = store.unlock(&lock, &holder).await {
                    tracing::warn!(api, error = %e, "a refresh lock could not be given back; it expires by itself");
                }
                return result;
            }
            Ok(false) => {
                if Instant::now() > deadline {
                    tracing::warn!(api, "another replica's refresh took too long; the person will be asked to consent again");
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let Ok(Some(c)) = store.token(sub, api).await {
                    if renewed_elsewhere(&c) {
                        return Some(c);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(api, error = %e, "the refresh lock cannot be taken");
                return None;
            }
        }
    }
}

/// A refreshed token, keeping the old refresh token when the server sends no new one;
/// `None` when the server refuses (the person consents again).
async fn refreshed(ac: &AuthorizationCode, refresh_token: &str) -> Option<UpstreamToken> {
    match ac.refresh(refresh_token).await {
        Ok(g) => Some(upstream_token(g, Some(refresh_token))),
        Err(e) => {
            tracing::info!(error = %e, "a refresh token was refused; the person will be asked to consent again");
            None
        }
    }
}

/// Revokes `t` (its refresh token, which takes the access token with it, else the access
/// token); whether the authorization server confirmed it.
pub async fn revoke(ac: &AuthorizationCode, t: &UpstreamToken, api: &str) -> bool {
    let (value, hint) = match &t.refresh_token {
        Some(rt) => (rt.as_str(), "refresh_token"),
        None => (t.access_token.as_str(), "access_token"),
    };
    match ac.revoke(value, hint).await {
        Ok(asked) => asked,
        Err(e) => {
            tracing::warn!(api, error = %e, "the authorization server did not confirm the revocation");
            false
        }
    }
}

pub fn upstream_token(g: Granted, old_refresh: Option<&str>) -> UpstreamToken {
    UpstreamToken {
        access_token: g.access_token,
        refresh_token: g.refresh_token.or_else(|| old_refresh.map(str::to_string)),
        expires_at: g
            .lifetime_announced
            .then(|| crate::store::now() + g.lifetime.as_secs() as i64),
        scope: g.scope.unwrap_or_default(),
    }
}
