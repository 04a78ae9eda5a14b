//! Which tools a request sees, by what the operator chose and the protocol era it speaks.
//!
//! The two eras allow different things:
//! - up to 2025-11-25 a client holds a session, and its tool list may change as the session
//!   goes on: `find_tools` can add what it shortlists to that client's list (`dynamic`);
//! - from 2026-07-28 there are no sessions, and `tools/list` "MUST NOT vary per-connection
//!   or as a side effect of other requests"; it may vary by deployment and authorization
//!   only. So a stateless request never gets a per-client list: it gets the meta-tools
//!   (`meta`, the server's own progressive discovery) or the whole catalog (`catalog`, for
//!   hosts that search deferred tool definitions themselves).
//!
//! The cache hints of each list (`ttlMs`, `cacheScope`) say the truth about it: a list that
//! changes with every `find_tools` is never cached; a list that depends on the deployment
//! alone is cached for long and may be shared, unless authorization changes it.

use rmcp::model::CacheScope;

/// What the operator asks for with `--expose`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Expose {
    /// `dynamic` for clients with sessions (2025-11-25 and older), `meta` for 2026-07-28.
    #[default]
    Auto,
    /// Only `find_tools`, `describe_tool` and `call_tool`, whatever the client.
    Meta,
    /// The shortlist as tools for clients with sessions; `meta` for 2026-07-28, whose
    /// revision forbids a list that changes as a side effect of a request.
    Dynamic,
    /// Every endpoint as a tool, paginated, beside the meta-tools, whatever the client.
    #[value(alias = "static")]
    Catalog,
}

/// What one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// The meta-tools only.
    Meta,
    /// The meta-tools and this client's shortlist, which `find_tools` grows.
    Dynamic,
    /// The meta-tools and every endpoint.
    Catalog,
}

/// The protocol era of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and older: sessions, notifications on the connection.
    Sessions,
    /// 2026-07-28 and later: stateless, notifications only on `subscriptions/listen`.
    Stateless,
}

/// Session-era clients that receive a changed tool list and do not use it (late 2026):
/// Claude Desktop and claude.ai (`claude-ai`) discard it, Cursor (`cursor-vscode`) waits for
/// a manual refresh, Codex (`codex-mcp-client`) ignores it. A growing list would only cost
/// them context, so `auto` gives them the meta-tools, and `find_tools` tells them to use
/// `call_tool`. Matched on the start of the `clientInfo.name` they send, in any case.
const IGNORE_LIST_CHANGES: [&str; 3] = ["claude-ai", "cursor", "codex"];

/// Whether a client of this `clientInfo.name` is known not to act on `list_changed`.
pub fn ignores_list_changes(client: &str) -> bool {
    let name = client.trim().to_ascii_lowercase();
    IGNORE_LIST_CHANGES.iter().any(|p| name.starts_with(p))
}

impl Expose {
    /// The exposure a request of `era` gets, whoever sends it.
    pub fn for_era(self, era: Era) -> Exposure {
        match (self, era) {
            (Expose::Meta, _) => Exposure::Meta,
            (Expose::Catalog, _) => Exposure::Catalog,
            (Expose::Auto | Expose::Dynamic, Era::Sessions) => Exposure::Dynamic,
            (Expose::Auto | Expose::Dynamic, Era::Stateless) => Exposure::Meta,
        }
    }

    /// The exposure a request of `era` from the client named `client` (its
    /// `clientInfo.name`, known in the session era) gets: as [`Expose::for_era`], except
    /// that `auto` gives the meta-tools to clients known to ignore list changes.
    pub fn for_client(self, era: Era, client: Option<&str>) -> Exposure {
        match self.for_era(era) {
            Exposure::Dynamic
                if self == Expose::Auto && client.is_some_and(ignores_list_changes) =>
            {
                Exposure::Meta
            }
            e => e,
        }
    }

    /// Whether some client's tool list can change while the catalog stays the same.
    pub fn may_grow(self) -> bool {
        matches!(self, Expose::Auto | Expose::Dynamic)
    }
}

/// How long a client may keep a list of the deployment's own (meta-tools): it changes only
/// when the server is upgraded.
pub const META_TTL_MS: u64 = 60 * 60 * 1000;
/// How long a client may keep the catalog as tools: a catalog change is announced on
/// `subscriptions/listen` streams at once; a client without one sees it within this time.
pub const CATALOG_TTL_MS: u64 = 10 * 60 * 1000;

/// `(ttlMs, cacheScope)` of a `tools/list` answer. `by_caller`: whether the list depends on
/// the authorization the request presents (APIs visible to some callers only).
pub fn cache_hints(exposure: Exposure, by_caller: bool) -> (u64, CacheScope) {
    let scope = if by_caller {
        CacheScope::Private
    } else {
        CacheScope::Public
    };
    match exposure {
        // It changes with every find_tools of this client: never cached, never shared.
        Exposure::Dynamic => (0, CacheScope::Private),
        Exposure::Meta => (META_TTL_MS, scope),
        Exposure::Catalog => (CATALOG_TTL_MS, scope),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_request_never_gets_a_dynamic_list() {
        for choice in [Expose::Auto, Expose::Meta, Expose::Dynamic, Expose::Catalog] {
            assert_ne!(
                choice.for_era(Era::Stateless),
                Exposure::Dynamic,
                "{choice:?}"
            );
        }
        assert_eq!(Expose::Auto.for_era(Era::Sessions), Exposure::Dynamic);
        assert_eq!(Expose::Auto.for_era(Era::Stateless), Exposure::Meta);
        assert_eq!(Expose::Catalog.for_era(Era::Sessions), Exposure::Catalog);
        assert_eq!(Expose::Meta.for_era(Era::Sessions), Exposure::Meta);
    }

    #[test]
    fn auto_spares_clients_that_ignore_list_changes() {
        let s = Era::Sessions;
        assert_eq!(
            Expose::Auto.for_client(s, Some("claude-ai")),
            Exposure::Meta
        );
        assert_eq!(
            Expose::Auto.for_client(s, Some("Cursor-VSCode")),
            Exposure::Meta
        );
        assert_eq!(
            Expose::Auto.for_client(s, Some("codex-mcp-client")),
            Exposure::Meta
        );
        assert_eq!(
            Expose::Auto.for_client(s, Some("claude-code")),
            Exposure::Dynamic
        );
        assert_eq!(Expose::Auto.for_client(s, None), Exposure::Dynamic);
        // An explicit choice is the operator's.
        assert_eq!(
            Expose::Dynamic.for_client(s, Some("claude-ai")),
            Exposure::Dynamic
        );
        assert_eq!(
            Expose::Catalog.for_client(s, Some("claude-ai")),
            Exposure::Catalog
        );
    }

    #[test]
    fn cache_hints_tell_the_truth() {
        assert_eq!(
            cache_hints(Exposure::Dynamic, false),
            (0, CacheScope::Private)
        );
        assert_eq!(
            cache_hints(Exposure::Meta, false),
            (META_TTL_MS, CacheScope::Public)
        );
        assert_eq!(
            cache_hints(Exposure::Catalog, true),
            (CATALOG_TTL_MS, CacheScope::Private)
        );
    }

    #[test]
    fn static_is_the_catalog() {
        use clap::ValueEnum;
        assert_eq!(Expose::from_str("static", false), Ok(Expose::Catalog));
        assert_eq!(Expose::from_str("catalog", false), Ok(Expose::Catalog));
    }
}
