//! What the server serves at one moment: the index with its ranking, the catalog config and
//! the APIs, as one value that a catalog change replaces whole.
//!
//! Requests take the current [`Served`] (an `Arc`) once and use only it, so a request that
//! began before a reload finishes on the catalog it began with, and nothing ever sees half
//! of an old catalog and half of a new one.

use super::apis::ApiDirectory;
use super::meta_tools;
use super::tools::endpoint_tool;
use crate::catalog::{Access, ApiConfig, Catalog, Endpoint};
use crate::shortlist::Shortlister;
use base64::Engine;
use rmcp::model::Tool;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Endpoint tools per `tools/list` page in catalog exposure, by default. Large enough that a
/// catalog of a few thousand endpoints takes a handful of requests, small enough that one
/// page stays a modest answer (250 tools of a few hundred tokens each).
pub const PAGE_SIZE: usize = 250;

/// One catalog as served; see the module documentation.
pub struct Served {
    shortlister: Shortlister,
    catalog: Catalog,
    apis: ApiDirectory,
    /// Each served API's config entry (position in `catalog.config.apis`), by the entry
    /// that loaded its spec. An API of the index missing here has no rule that can be
    /// read, and is served to nobody.
    entries: HashMap<String, usize>,
    /// Whether some API is visible to some callers only, or to nobody.
    limits_callers: bool,
    /// Every endpoint as a tool with its API id, sorted by name (catalog exposure), built on
    /// first use.
    catalog_tools: OnceLock<Vec<(String, Tool)>>,
    /// Counts the catalogs this server has served, from 1.
    generation: u64,
}

/// A page of the catalog's tools.
pub struct Page {
    pub tools: Vec<Tool>,
    /// The cursor of the next page, if any.
    pub next: Option<String>,
}

impl Served {
    /// `catalog` provides API configs (base URLs, auth, read-only) and load problems; the
    /// endpoints served are the index's.
    pub fn new(shortlister: Shortlister, mut catalog: Catalog, generation: u64) -> Served {
        // The index holds the same endpoints; keeping a second copy would double the
        // largest part of the server's memory for nothing.
        catalog.endpoints = Vec::new();
        let tables = shortlister.tables();
        let apis = ApiDirectory::new(tables.api_of.iter().filter_map(|&a| {
            let (id, title) = tables.apis.get(a as usize)?;
            Some((id.as_str(), title.as_str()))
        }));
        register_credentials(&catalog, &shortlister);
        let entries: HashMap<String, usize> = catalog
            .apis
            .iter()
            .filter_map(|a| {
                let i = a.config_index?;
                catalog.config.apis.get(i)?;
                Some((a.id.clone(), i))
            })
            .collect();
        let unresolved: Vec<&str> = apis.ids().filter(|id| !entries.contains_key(*id)).collect();
        if !unresolved.is_empty() {
            tracing::error!(apis = ?unresolved, generation, "APIs hidden from everyone: no catalog config entry loaded them, so no rule can be read for them");
            eprintln!(
                "shortlist: hidden from everyone, since no catalog config entry loaded them (no rule can be read for them): {}",
                unresolved.join(", ")
            );
        }
        let limits_callers = !unresolved.is_empty()
            || entries
                .values()
                .any(|&i| catalog.config.apis[i].visible_to.is_some());
        Served {
            shortlister,
            catalog,
            apis,
            entries,
            limits_callers,
            catalog_tools: OnceLock::new(),
            generation,
        }
    }

    pub fn shortlister(&self) -> &Shortlister {
        &self.shortlister
    }

    /// The catalog as loaded, without its endpoints (the index holds those).
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn apis(&self) -> &ApiDirectory {
        &self.apis
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of endpoints served.
    pub fn len(&self) -> usize {
        self.shortlister.len()
    }

    /// Whether the catalog has no endpoint.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The endpoint with this tool name and its index position.
    pub fn lookup(&self, name: &str) -> Option<(usize, &Endpoint)> {
        let pos = self.shortlister.index().position(name)?;
        Some((pos, self.shortlister.endpoint(pos)?))
    }

    /// The endpoint at an index position.
    pub fn endpoint(&self, pos: usize) -> Option<&Endpoint> {
        self.shortlister.endpoint(pos)
    }

    /// The tool name at an index position.
    pub fn name_of(&self, pos: usize) -> Option<&str> {
        self.shortlister.index().keys().get(pos).map(String::as_str)
    }

    /// The catalog config entry that loaded the API `api`: its `read_only`, `auth` and
    /// `visible_to` (`None`: no entry did; such an API is hidden from everyone).
    pub fn api_config(&self, api: &str) -> Option<&ApiConfig> {
        self.catalog.config.apis.get(*self.entries.get(api)?)
    }

    /// Who may see the API `api`, by the entry that loaded it.
    pub fn access(&self, api: &str) -> Access<'_> {
        match self.api_config(api) {
            None => Access::Unresolved,
            Some(c) => c
                .visible_to
                .as_ref()
                .map_or(Access::Everyone, Access::Limited),
        }
    }

    /// Whether some API is visible to some callers only (`visible_to`), or to nobody (no
    /// rule can be read for it): then lists depend on the authorization a request presents.
    pub fn limits_callers(&self) -> bool {
        self.limits_callers
    }

    /// Every endpoint as a tool, in name order, with its API id.
    fn catalog_tools(&self) -> &[(String, Tool)] {
        self.catalog_tools.get_or_init(|| {
            let mut tools: Vec<(String, Tool)> = (0..self.shortlister.len())
                .filter_map(|i| {
                    let ep = self.shortlister.endpoint(i)?;
                    Some((ep.api.clone(), endpoint_tool(ep)))
                })
                .collect();
            tools.sort_by(|a, b| a.1.name.cmp(&b.1.name));
            tools
        })
    }

    /// The page of the endpoint tools `sight` sees after `cursor` (`None`: the first page).
    /// The cursor names the last tool of the previous page rather than a position, so
    /// paging stays in order even when the catalog changes between two pages. `Err` for a
    /// cursor this server never gave.
    pub fn catalog_page(
        &self,
        cursor: Option<&str>,
        page_size: usize,
        sees: impl Fn(&str) -> bool,
    ) -> Result<Page, String> {
        let all = self.catalog_tools();
        let start = match cursor {
            None => 0,
            Some(c) => {
                let after = decode_cursor(c).ok_or_else(|| "invalid cursor".to_string())?;
                all.partition_point(|(_, t)| t.name.as_ref() <= after.as_str())
            }
        };
        // One past the page tells whether another page follows; only what is read is
        // filtered, so a page costs its own length when the caller sees every API.
        let mut seen = all[start..]
            .iter()
            .filter(|(api, _)| sees(api))
            .map(|(_, t)| t);
        let page: Vec<Tool> = seen.by_ref().take(page_size.max(1)).cloned().collect();
        let next = seen.next().and(page.last()).map(|t| encode_cursor(&t.name));
        Ok(Page { tools: page, next })
    }

    /// The message for a name no endpoint has, with the nearest names as hints.
    pub fn unknown_tool(&self, name: &str) -> String {
        let near = crate::invoke::near::closest(
            name,
            self.shortlister
                .index()
                .keys()
                .iter()
                .map(String::as_str)
                .chain([
                    meta_tools::FIND_TOOLS,
                    meta_tools::DESCRIBE_TOOL,
                    meta_tools::CALL_TOOL,
                ]),
        );
        let name = crate::text::clip_chars(name, 80);
        match near {
            Some(n) => {
                format!("unknown tool '{name}' (did you mean '{n}'?); use find_tools to find tools")
            }
            None => format!("unknown tool '{name}'; use find_tools to find tools"),
        }
    }
}

/// Credentials in base URLs are known from the start, so no log line (of any level, from
/// any crate) shows them, even before the first call.
fn register_credentials(catalog: &Catalog, shortlister: &Shortlister) {
    let mut secrets = crate::invoke::redact::Redactor::default();
    let servers = shortlister.tables().credentialed_servers.iter();
    for raw in catalog
        .config
        .apis
        .iter()
        .filter_map(|a| a.base_url.as_ref())
        .chain(servers)
        .filter(|s| s.contains('@'))
    {
        crate::invoke::request::register_user_info(raw, &mut secrets);
    }
}

/// Cursors are opaque to clients: the tool name, base64url-encoded.
fn encode_cursor(name: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(name.as_bytes())
}

fn decode_cursor(cursor: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor.trim())
        .ok()?;
    String::from_utf8(bytes).ok().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode_cursor("tmdb__get_movie");
        assert_eq!(decode_cursor(&c).as_deref(), Some("tmdb__get_movie"));
        assert_eq!(decode_cursor("%%%"), None);
        assert_eq!(decode_cursor(""), None);
    }
}
