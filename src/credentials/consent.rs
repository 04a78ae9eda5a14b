//! A person's consent to a third-party API, from the broker's side: the link handed out
//! (a page of this server, which signs the browser in before it goes on), the
//! authorization server's own URL once the right person is at the browser, and the code
//! redeemed for that person only. See `server::signin` for the pages.

use super::authorization_code::AuthorizationCode;
use super::broker::{Broker, Client, Grant, CONSENT_TTL_SECS};
use super::renewal::{fresh, obtained, refresh_once, revoke, upstream_token};
use crate::catalog::AuthConfig;
use crate::store::{ConsentLimits, PendingConsent, Store};

/// A consent completed: whose, for which API, asked by which client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub sub: String,
    pub api: String,
    pub client_id: Option<String>,
}

/// Why a consent did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incomplete {
    /// Nothing was issued (or what was is gone): the reason, for the person.
    Refused(String),
    /// A token was issued but could not be stored: it was revoked (`revoked`), or could
    /// not be (no revocation endpoint, or it failed), which the audit log must hold.
    NotStored {
        sub: String,
        api: String,
        revoked: bool,
        why: String,
    },
}

impl Broker {
    /// The page a person opens to consent: where `link`s point.
    pub fn consent_page(&self, state: &str) -> Option<String> {
        let base = self.server.public_url.as_deref()?;
        let mut url = url::Url::parse(base).ok()?.join("/oauth/consent").ok()?;
        url.query_pairs_mut().append_pair("state", state);
        Some(url.into())
    }

    /// The authorization server's own consent URL for the pending consent `state`, once
    /// the person who opened its page is known to be the one it was made for.
    pub async fn authorization_url(
        &self,
        auth_of: impl Fn(&str) -> Option<AuthConfig>,
        pending: &PendingConsent,
    ) -> Result<String, String> {
        let api = &pending.api;
        let auth =
            auth_of(api).ok_or_else(|| format!("API '{api}' is no longer in the catalog"))?;
        let Client::Consent(ac) = &*self.client(api, &auth).await? else {
            return Err(format!(
                "API '{api}' no longer asks each person for consent (its config changed)"
            ));
        };
        Ok(ac.consent_link(&pending.state, &pending.pkce_verifier))
    }

    /// Finishes the consent named `state` with the `code` the authorization server sent
    /// back, for the browser of `signed_in` (the person the consent page signed in); `iss`
    /// is the `iss` the redirect carried (RFC 9207), required where the API's entry names
    /// its authorization server's issuer.
    pub async fn complete(
        &self,
        auth_of: impl Fn(&str) -> Option<AuthConfig>,
        state: &str,
        code: &str,
        iss: Option<&str>,
        signed_in: &str,
        store: &Store,
    ) -> Result<Completed, Incomplete> {
        let refused = |s: String| Incomplete::Refused(s);
        let pending = store
            .consent(state)
            .await
            .map_err(|e| refused(e.to_string()))?
            .ok_or_else(|| {
                refused(
                    "this consent link has expired or was already used; call the tool again for a new one"
                        .into(),
                )
            })?;
        if pending.sub != signed_in {
            return Err(refused(
                "this consent was started for another person; nothing was stored".into(),
            ));
        }
        let api = pending.api.clone();
        let auth = auth_of(&api)
            .ok_or_else(|| refused(format!("API '{api}' is no longer in the catalog")))?;
        if let AuthConfig::AuthorizationCode {
            issuer: Some(expected),
            ..
        } = &auth
        {
            match iss {
                Some(i) if i.trim_end_matches('/') == expected.trim_end_matches('/') => {}
                Some(_) => {
                    return Err(refused(format!(
                        "the answer came from another authorization server than API '{api}''s (iss); nothing was stored"
                    )))
                }
                None => {
                    return Err(refused(format!(
                        "the answer does not name its authorization server (iss), which API '{api}' requires; nothing was stored"
                    )))
                }
            }
        }
        let client = self.client(&api, &auth).await.map_err(refused)?;
        let Client::Consent(ac) = &*client else {
            return Err(refused(format!(
                "API '{api}' no longer asks each person for consent (its config changed)"
            )));
        };
        let granted = ac.redeem(code, &pending.pkce_verifier).await.map_err(|e| {
            refused(format!(
                "the authorization server did not grant access to API '{api}': {e}"
            ))
        })?;
        let token = upstream_token(granted, None);
        let why = match store.complete_consent(state, &token).await {
            Ok(true) => {
                return Ok(Completed {
                    sub: pending.sub,
                    api,
                    client_id: pending.client_id,
                })
            }
            Ok(false) => "this consent link was used meanwhile".to_string(),
            Err(e) => e.to_string(),
        };
        // Issued and not kept: a token nobody holds must not stay valid upstream.
        let revoked = revoke(ac, &token, &api).await;
        Err(Incomplete::NotStored {
            sub: pending.sub,
            api,
            revoked,
            why,
        })
    }

    /// The person's stored token (refreshed when it is about to expire), or a consent link.
    pub(super) async fn consented(
        &self,
        api: &str,
        ac: &AuthorizationCode,
        sub: &str,
        client_id: Option<&str>,
        store: &Store,
    ) -> Result<Grant, String> {
        let now = crate::store::now();
        if let Some(t) = store.token(sub, api).await.map_err(|e| e.to_string())? {
            if fresh(&t) {
                return Ok(Grant::Token(obtained(&t)));
            }
            if let Some(nt) = refresh_once(ac, sub, api, &t, store).await {
                return Ok(Grant::Token(obtained(&nt)));
            }
            // Expired and not renewable: the person consents again.
            store
                .delete_token(sub, api)
                .await
                .map_err(|e| e.to_string())?;
        }
        if !self.server.signin {
            return Err(format!(
                "API '{api}' asks each person for consent, and this server hands out no consent link until it can check who opens it: add `signin` (an OpenID client of the issuer) to the [auth] table"
            ));
        }
        let challenge = AuthorizationCode::challenge().map_err(|e| e.to_string())?;
        let link = self.consent_page(&challenge.state).ok_or_else(|| {
            format!("API '{api}' asks each person for consent, which needs the server's public address: add an [auth] table (its audience or public_url)")
        })?;
        store
            .put_consent(
                &PendingConsent {
                    state: challenge.state.clone(),
                    sub: sub.into(),
                    api: api.into(),
                    pkce_verifier: challenge.verifier.clone(),
                    created_at: now,
                    expires_at: now + CONSENT_TTL_SECS,
                    client_id: client_id.map(str::to_string),
                },
                ConsentLimits::default(),
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(Grant::Consent {
            link,
            state: challenge.state,
        })
    }
}
