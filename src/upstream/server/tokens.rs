//! A server's credentials: the machine token its shared connection carries, what a
//! refused one says, and the settings read from its protected-resource metadata.

use super::Server;
use crate::catalog::config::{ApiConfig, AuthConfig};
use crate::credentials::Grant;

impl Server {
    /// Puts a fresh machine token in the slot, for an entry with the client credentials
    /// grant (the broker keeps it cached until it is due for renewal).
    pub(super) async fn renew(&self) -> Result<(), String> {
        let (Some(broker), Some(auth)) = (&self.machine, &self.entry.auth) else {
            return Ok(());
        };
        if self.personal || !matches!(auth, AuthConfig::ClientCredentials { .. }) {
            return Ok(());
        }
        match broker.grant(&self.id, auth, None, None, None).await {
            Ok(Grant::Token(t)) => {
                self.slot.set(Some(t.value));
                Ok(())
            }
            Ok(Grant::Consent { .. }) => Err("its credentials ask for consent".into()),
            Err(e) => Err(format!("no token for it: {e}")),
        }
    }

    /// After a failure: a machine token the server refused is forgotten, so the next
    /// attempt fetches a new one.
    pub(super) async fn forget_refused(&self) {
        if let (Some(broker), Some(auth), true) =
            (&self.machine, &self.entry.auth, self.slot.refused())
        {
            broker.refused(&self.id, auth, None, None).await;
        }
    }

    /// The entry this server is made from.
    pub fn entry(&self) -> &ApiConfig {
        &self.entry
    }

    /// `auth` with what it left out read from this server's protected-resource metadata
    /// and its authorization server's ([`crate::upstream::protected`]), within the start timeout.
    pub async fn discover(
        &self,
        auth: &AuthConfig,
        issuer: Option<&str>,
    ) -> Result<AuthConfig, String> {
        use crate::upstream::protected;
        let read = async {
            let (client, url) =
                crate::upstream::http::metadata_client(&self.entry, self.source(), self.reach())
                    .await?;
            let meta = protected::resource_metadata(&client, &url).await?;
            let server = match protected::chosen_server(auth, &meta, issuer)? {
                Some(s) => Some(protected::server_metadata(&client, &s).await?),
                None => None,
            };
            protected::filled(auth, &meta, server.as_ref())
        };
        tokio::time::timeout(self.start_timeout(), read)
            .await
            .map_err(|_| "its metadata was not read in time".to_string())?
    }

    /// Whether this server's token is a machine token from the broker.
    pub(super) fn machine_tokens(&self) -> bool {
        self.machine.is_some()
            && matches!(self.entry.auth, Some(AuthConfig::ClientCredentials { .. }))
    }

    /// A listing that failed for want of a token says where one goes.
    pub(super) fn refusal_hint(&self, reason: String) -> String {
        let per_person = self
            .entry
            .auth
            .as_ref()
            .is_some_and(AuthConfig::is_per_person);
        let unlisted = self.source().list_token_env.is_none();
        if self.slot.refused() && per_person && unlisted {
            format!("{reason} (its calls carry each person's own token; set `list_token_env` in its `mcp` table to the variable holding a token its tools are listed with)")
        } else {
            reason
        }
    }
}
