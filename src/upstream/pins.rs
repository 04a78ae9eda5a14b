//! Pinned tool definitions: an MCP server writes what every colleague's agent reads, so
//! on a server that keeps a state store a tool is served only in a definition someone
//! approved. Each listed definition (name, title, description, schemas, annotations) is
//! digested and recorded in the store by server, tool name and digest; a tool listed in a
//! definition that is not approved is held: absent from the catalog, its lists and its
//! calls, until a reviewer approves what the console shows them (the difference from the
//! approved definition included). Replicas whose children list different definitions
//! each serve theirs only if it is approved.
//!
//! - `hold` (the default on a team server, one with an `[auth]` table): new servers, new
//!   tools and changed definitions all wait;
//! - `first_use`: a server's first listing is pinned as it is (trust on first use), and
//!   whatever is new or changed after it waits;
//! - `warn` (the default without `[auth]`: one person's own servers): every definition is
//!   pinned as listed, and a changed one is served with a warning on stderr.
//!
//! A tool renamed is a new tool with no approval: renaming is not a way around a pin. The
//! pins live in the store, so every replica serves the same tools: each records what it
//! lists and reads the approvals back every few seconds. A store that cannot be reached
//! keeps the approvals read last: nothing new is served meanwhile.

use crate::catalog::mcp_config::ToolReview;
use crate::catalog::mcp_tools::{self, Listings, Serving};
use crate::catalog::CatalogConfig;
use crate::store::{Backend, PinDecision, PinState, SeenTool, StoreError, ToolPin};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// The longest definition the store keeps for a reviewer to read: one that is longer is
/// cut there (its digest still covers all of it, and it is refused as too long anyway
/// when its description passes the catalog's bound).
const MAX_DEFINITION_CHARS: usize = 64 * 1024;

/// The approved definitions: server, tool, digest.
type Approved = BTreeSet<(String, String, String)>;

/// The gate between the servers' listings and the catalog.
pub struct Pins {
    backend: Arc<dyn Backend>,
    /// Each server's policy and how it serves (filters, `read_only`), by id; replaced
    /// when the config's MCP entries change.
    servers: std::sync::RwLock<BTreeMap<String, Entry>>,
    approved: Mutex<Approved>,
    /// Held tools already reported, so that each is logged once.
    reported: Mutex<BTreeSet<(String, String, String)>>,
    /// How many tools each server lists that are held, as of the last filtering.
    held: Mutex<BTreeMap<String, usize>>,
}

#[derive(Clone)]
struct Entry {
    review: ToolReview,
    source: crate::catalog::mcp_config::McpSource,
    read_only: bool,
}

impl Pins {
    /// The gate for `config`'s MCP servers, pins kept in `backend` (`hold` is the default
    /// where the config has an `[auth]` table).
    pub fn new(config: &CatalogConfig, backend: Arc<dyn Backend>) -> Pins {
        Pins {
            backend,
            servers: std::sync::RwLock::new(entries(config)),
            approved: Mutex::new(Approved::new()),
            reported: Mutex::new(BTreeSet::new()),
            held: Mutex::new(BTreeMap::new()),
        }
    }

    /// Follows a changed config: its servers, their policies and filters.
    pub fn reconfigure(&self, config: &CatalogConfig) {
        if let Ok(mut s) = self.servers.write() {
            *s = entries(config);
        }
    }

    /// The entries now, by server id.
    fn entries(&self) -> BTreeMap<String, Entry> {
        self.servers.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The servers' ids.
    pub fn servers(&self) -> Vec<String> {
        self.entries().into_keys().collect()
    }

    /// Records what `listings` (unfiltered) hold and reads the approvals back: whether the
    /// approved set changed since the last sync.
    pub async fn sync(&self, listings: &Listings) -> Result<bool, StoreError> {
        let entries = self.entries();
        let ids: Vec<String> = entries.keys().cloned().collect();
        let pins = self.backend.tool_pins(ids.clone(), false).await?;
        let known: BTreeSet<(&str, &str, &str)> = pins
            .iter()
            .map(|p| (p.server.as_str(), p.tool.as_str(), p.digest.as_str()))
            .collect();
        let named: BTreeSet<(&str, &str)> = pins
            .iter()
            .map(|p| (p.server.as_str(), p.tool.as_str()))
            .collect();
        let pinned_servers: BTreeSet<&str> = pins.iter().map(|p| p.server.as_str()).collect();
        let mut new = Vec::new();
        for (id, seen) in self.seen(&entries, listings) {
            let review = entries.get(&id).map(|e| e.review);
            let first_listing = !pinned_servers.contains(id.as_str());
            for mut t in seen {
                if known.contains(&(id.as_str(), t.tool.as_str(), t.digest.as_str())) {
                    continue;
                }
                let changed = named.contains(&(id.as_str(), t.tool.as_str()));
                t.approved_by = match review {
                    Some(ToolReview::Warn) if changed => {
                        tracing::warn!(
                            server = %id,
                            tool = %t.tool,
                            "MCP tool definition changed since it was first listed; served \
                             as it is now (`review = \"hold\"` or \"first_use\" holds changes \
                             for review)"
                        );
                        Some(crate::store::pins::WARNED.to_string())
                    }
                    Some(ToolReview::Warn) => Some(crate::store::pins::FIRST_USE.to_string()),
                    Some(ToolReview::FirstUse) if first_listing => {
                        Some(crate::store::pins::FIRST_USE.to_string())
                    }
                    _ => None,
                };
                new.push(t);
            }
        }
        let pins = if new.is_empty() {
            pins
        } else {
            self.backend.see_tools(new, crate::store::now_ms()).await?;
            self.backend.tool_pins(ids, false).await?
        };
        let approved: Approved = pins
            .into_iter()
            .filter(|p| p.state == PinState::Approved)
            .map(|p| (p.server, p.tool, p.digest))
            .collect();
        let mut slot = self.approved.lock().unwrap_or_else(|p| p.into_inner());
        let changed = *slot != approved;
        *slot = approved;
        Ok(changed)
    }

    /// The definitions each listed server serves, as the store records them.
    fn seen(
        &self,
        entries: &BTreeMap<String, Entry>,
        listings: &Listings,
    ) -> Vec<(String, Vec<SeenTool>)> {
        let mut out = Vec::new();
        for (key, listed) in listings {
            let Ok(listing) = listed else { continue };
            let id = server_of(key);
            let Some(entry) = entries.get(id) else {
                continue;
            };
            let serving = Serving {
                source: &entry.source,
                read_only: entry.read_only,
            };
            let tools = listing
                .tools
                .iter()
                .take(mcp_tools::MAX_TOOLS)
                .filter_map(|t| {
                    let name = mcp_tools::served_name(serving, t)?;
                    Some(SeenTool {
                        server: id.to_string(),
                        tool: name.to_string(),
                        digest: mcp_tools::definition_digest(t),
                        definition: definition_text(t),
                        approved_by: None,
                    })
                })
                .collect();
            out.push((id.to_string(), tools));
        }
        out
    }

    /// `listings` with only the tools served in their approved definition; each tool held
    /// is reported once on stderr.
    pub fn filter(&self, mut listings: Listings) -> Listings {
        let entries = self.entries();
        let mut held = Vec::new();
        for (key, listed) in listings.iter_mut() {
            let Ok(listing) = listed else { continue };
            let id = server_of(key).to_string();
            // A server this gate does not know (yet) serves nothing.
            let Some(entry) = entries.get(&id) else {
                listing.tools.clear();
                continue;
            };
            let serving = Serving {
                source: &entry.source,
                read_only: entry.read_only,
            };
            let mut position = 0;
            listing.tools.retain(|t| {
                position += 1;
                // What the entry does not serve (filtered, or beyond the catalog's bound) is
                // left to the catalog, which leaves it out and reports why.
                let Some(name) =
                    mcp_tools::served_name(serving, t).filter(|_| position <= mcp_tools::MAX_TOOLS)
                else {
                    return true;
                };
                let ok = self.approves(&id, name, t);
                if !ok {
                    held.push((
                        id.clone(),
                        name.to_string(),
                        mcp_tools::definition_digest(t),
                    ));
                }
                ok
            });
        }
        if let Ok(mut counts) = self.held.lock() {
            counts.clear();
            for id in entries.keys() {
                counts.insert(id.clone(), held.iter().filter(|h| h.0 == *id).count());
            }
        }
        if let Ok(mut reported) = self.reported.lock() {
            for h in held {
                if reported.insert(h.clone()) {
                    tracing::warn!(
                        server = %h.0,
                        tool = %h.1,
                        "MCP tool held for review: its definition is new or changed and not \
                         approved (the console's Tools page shows it)"
                    );
                }
            }
        }
        listings
    }

    /// How many tools each server lists that are held, as of the last rebuild.
    pub fn held_counts(&self) -> Vec<(String, usize)> {
        self.held
            .lock()
            .map(|h| h.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default()
    }

    /// Whether `tool` (named `name`) of server `id` is served in this definition.
    pub fn approves(&self, id: &str, name: &str, tool: &Value) -> bool {
        let Ok(approved) = self.approved.lock() else {
            return false;
        };
        approved.contains(&(
            id.to_string(),
            name.to_string(),
            mcp_tools::definition_digest(tool),
        ))
    }

    /// Every pin of the servers, definitions included: what the console shows.
    pub async fn all(&self) -> Result<Vec<ToolPin>, StoreError> {
        self.backend.tool_pins(self.servers(), true).await
    }

    /// A reviewer's decision, applied only while `digest` is the definition listed last.
    pub async fn decide(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        decision: PinDecision,
        by: &str,
    ) -> Result<bool, StoreError> {
        self.backend
            .decide_tool(server, tool, digest, decision, by, crate::store::now_ms())
            .await
    }
}

/// Each MCP entry's review policy and how it serves, by id.
fn entries(config: &CatalogConfig) -> BTreeMap<String, Entry> {
    let team = config.auth.is_some();
    config
        .apis
        .iter()
        .filter_map(|a| {
            let source = a.mcp.clone()?;
            let review = source.review.unwrap_or(if team {
                ToolReview::Hold
            } else {
                ToolReview::Warn
            });
            Some((
                a.id.clone()?,
                Entry {
                    review,
                    source,
                    read_only: a.read_only,
                },
            ))
        })
        .collect()
}

/// The server id a listing is filed under ([`mcp_tools::listing_key`]).
fn server_of(key: &str) -> &str {
    key.split('\t').next().unwrap_or(key)
}

/// A definition as the reviewer reads it: the fields the digest covers, bounded.
fn definition_text(tool: &Value) -> String {
    let mut shown = serde_json::Map::new();
    for key in [
        "name",
        "title",
        "description",
        "inputSchema",
        "outputSchema",
        "annotations",
    ] {
        if let Some(v) = tool.get(key) {
            shown.insert(key.to_string(), v.clone());
        }
    }
    let text = serde_json::to_string_pretty(&Value::Object(shown)).unwrap_or_default();
    if text.chars().count() > MAX_DEFINITION_CHARS {
        format!(
            "{}\n… (cut at {MAX_DEFINITION_CHARS} characters)",
            crate::text::clip_chars(&text, MAX_DEFINITION_CHARS)
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_are_filed_by_server_id() {
        assert_eq!(server_of("fs\tabc"), "fs");
        assert_eq!(server_of("fs"), "fs");
    }

    #[test]
    fn a_long_definition_is_cut_for_reading() {
        let t = serde_json::json!({"name": "x", "description": "d".repeat(100_000), "extra": 1});
        let text = definition_text(&t);
        assert!(text.chars().count() < MAX_DEFINITION_CHARS + 100);
        assert!(text.ends_with("characters)"));
        assert!(!text.contains("extra"));
    }
}
