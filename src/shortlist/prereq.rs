//! Prerequisites: which identifiers an endpoint needs and which endpoints produce them.
//!
//! "Who directed The Dark Knight?" needs `GET /movie/{movie_id}/credits`, but nobody knows
//! the movie id: an agent must first call `GET /search/movie`, whose text shares little
//! with the question. RestBench gold paths are full of such pairs, and retrieval that only
//! matches the question misses the lookup step (BM25 finds `/search/*` for 8 of 76 TMDB
//! gold occurrences in its top 10). This module reads the dependencies off the spec, once
//! per index; [`super::expand`] uses them per query.
//!
//! Everything here comes from the spec's structure, never from endpoint names:
//! - a **need** is a path parameter, or a required query / body field, whose name ends in an
//!   identifier word (`movie_id`, `{id}`, `ids`, `uris`), unless its schema is an enum (its
//!   values are then known up front), or a required body array of objects that carry one
//!   (`"tracks": [{"uri": ...}]`). Its **noun** is the rest of the name (`movie`), or,
//!   for a bare `id`, the path segment it qualifies (`/albums/{id}` -> `album`).
//! - a removal from a collection (`DELETE /playlists/{id}/tracks`) picks what it removes
//!   from that collection's own listing (`GET /playlists/{id}/tracks`) when there is one.
//! - **producers** of a need (never, for an addition to a collection, the listing of that
//!   same collection), by strength of evidence (the first non-empty tier is used):
//!   0. endpoints the description names (`call GET /me first to get the user_id`);
//!   1. endpoints of the same API whose response carries identifiers and which are *about*
//!      the noun: it is a literal path segment, a one-word response field (Spotify's
//!      `/search` returns `albums`, `artists`), or a response field `<noun>_id`; a path noun
//!      yields to another path noun that the response is a list of (`/genre/movie/list`
//!      returns `genres`: genre ids, not movie ids); and the producer must not need the
//!      noun itself;
//!   2. endpoints whose summary or operationId names the noun (`/me`: "Get Current User's
//!      Profile" for `user_id`), the most general (shortest path) first;
//!   3. **lookups**: endpoints taking a free-text query parameter (`q`, `query`) and
//!      returning identifiers.

use crate::catalog::{Endpoint, Method, ParamLocation};
use crate::index::binfile::{Damaged, Reader, Writer};
use crate::index::lexical::tokenize;
use once_cell::sync::Lazy;
use regex::Regex;
use serde_json::Value;
use std::collections::HashMap;

/// Words that mark a parameter as an identifier.
const ID_WORDS: &[&str] = &["id", "ids", "uri", "uris", "uuid", "guid", "key", "slug"];
/// Names of query parameters that take free text to look something up.
const LOOKUP_PARAMS: &[&str] = &[
    "q", "query", "search", "keyword", "keywords", "term", "text", "name",
];
/// `METHOD /path` mentioned in prose.
static ENDPOINT_REF: Lazy<Regex> = Lazy::new(|| {
    Regex::new(r"\b(GET|POST|PUT|PATCH|DELETE)\s+(/[A-Za-z0-9_\-./{}]*[A-Za-z0-9_}])").unwrap()
});

/// How good the evidence is that an endpoint produces what a need wants; lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evidence {
    /// The consumer's description names the producer.
    Named,
    /// The producer's path or response is about the noun.
    About,
    /// The producer's summary or operationId names the noun.
    Mentioned,
    /// The producer looks things up by free text.
    Lookup,
}

/// One identifier an endpoint needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// The parameter (or body field) name; for a producer the description names, that
    /// producer's `METHOD /path`.
    pub param: String,
    /// Stemmed noun, when one can be told (`movi` for `movie_id`).
    pub noun: Option<String>,
    /// Index positions of the producers of the strongest evidence tier found.
    pub producers: Vec<usize>,
    pub evidence: Evidence,
}

/// The needs of every endpoint and which endpoints are lookups, computed once per index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    needs: Vec<Vec<Need>>,
    lookup: Vec<bool>,
    /// Path depth of each endpoint (literal and parameter segments).
    depth: Vec<usize>,
    /// The API of each endpoint, as a number shared by the endpoints of one API.
    api: Vec<u32>,
}

impl Graph {
    /// Analyses `endpoints` (the index's records, in position order).
    pub fn build(endpoints: &[Endpoint]) -> Graph {
        let facts: Vec<Facts> = endpoints.iter().map(Facts::of).collect();
        let lookup: Vec<bool> = endpoints
            .iter()
            .zip(&facts)
            .map(|(e, f)| f.returns_ids && is_lookup(e))
            .collect();
        let depth: Vec<usize> = endpoints
            .iter()
            .map(|e| e.path.split('/').filter(|s| !s.is_empty()).count())
            .collect();
        let pools = pools(endpoints, &facts, &lookup);
        let needs: Vec<Vec<Need>> = endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| match pools.get(e.api.as_str()) {
                Some(pool) => needs_of(i, endpoints, &facts, pool, &depth),
                None => Vec::new(),
            })
            .collect();
        let mut numbers: HashMap<&str, u32> = HashMap::new();
        let api = endpoints
            .iter()
            .map(|e| {
                let next = numbers.len() as u32;
                *numbers.entry(e.api.as_str()).or_insert(next)
            })
            .collect();
        Graph {
            needs,
            lookup,
            depth,
            api,
        }
    }

    /// Appends the graph to `w`, to be stored with the index ([`super::tables`]).
    pub fn write(&self, w: &mut Writer) {
        w.u64(self.needs.len() as u64);
        for (i, needs) in self.needs.iter().enumerate() {
            w.u32(self.api[i]);
            w.u32(u32::from(self.lookup[i]));
            w.u32(self.depth[i] as u32);
            w.u64(needs.len() as u64);
            for n in needs {
                w.str(&n.param);
                match &n.noun {
                    Some(noun) => {
                        w.u32(1);
                        w.str(noun);
                    }
                    None => w.u32(0),
                }
                w.u32(n.evidence as u32);
                w.u64(n.producers.len() as u64);
                for &p in &n.producers {
                    w.u32(p as u32);
                }
            }
        }
    }

    /// Reads a graph written by [`Graph::write`]; every position it names must be below
    /// the count it starts with.
    pub fn read(r: &mut Reader<'_>) -> Result<Graph, Damaged> {
        let n = r.count(20)?;
        let mut g = Graph {
            needs: Vec::with_capacity(n),
            lookup: Vec::with_capacity(n),
            depth: Vec::with_capacity(n),
            api: Vec::with_capacity(n),
        };
        for _ in 0..n {
            g.api.push(r.u32()?);
            g.lookup.push(r.u32()? != 0);
            g.depth.push(r.u32()? as usize);
            let count = r.count(28)?;
            let mut needs = Vec::with_capacity(count);
            for _ in 0..count {
                let param = r.str()?.to_string();
                let noun = match r.u32()? {
                    0 => None,
                    _ => Some(r.str()?.to_string()),
                };
                let evidence = match r.u32()? {
                    0 => Evidence::Named,
                    1 => Evidence::About,
                    2 => Evidence::Mentioned,
                    3 => Evidence::Lookup,
                    e => return Err(r.damaged(format!("unknown evidence tier {e}"))),
                };
                let len = r.count(4)?;
                let mut producers = Vec::with_capacity(len);
                for _ in 0..len {
                    let p = r.u32()? as usize;
                    if p >= n {
                        return Err(r.damaged(format!("producer {p} of {n} endpoints")));
                    }
                    producers.push(p);
                }
                needs.push(Need {
                    param,
                    noun,
                    producers,
                    evidence,
                });
            }
            g.needs.push(needs);
        }
        Ok(g)
    }

    /// Number of endpoints analysed.
    pub fn len(&self) -> usize {
        self.needs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.needs.is_empty()
    }

    /// What endpoint `position` needs.
    pub fn needs(&self, position: usize) -> &[Need] {
        self.needs.get(position).map_or(&[], Vec::as_slice)
    }

    /// Whether endpoint `position` looks things up by free text.
    pub fn is_lookup(&self, position: usize) -> bool {
        self.lookup.get(position).copied().unwrap_or(false)
    }

    /// Whether two endpoints belong to the same API.
    pub fn same_api(&self, a: usize, b: usize) -> bool {
        self.api.get(a).is_some_and(|x| self.api.get(b) == Some(x))
    }

    /// Path depth of endpoint `position` (`/me` 1, `/me/albums` 2).
    pub fn depth(&self, position: usize) -> usize {
        self.depth.get(position).copied().unwrap_or(usize::MAX)
    }
}

/// What the graph needs to know of one endpoint.
struct Facts {
    /// (parameter, stemmed noun) of each identifier need.
    needs: Vec<(String, Option<String>)>,
    /// Stemmed nouns the endpoint's path and response are about.
    about: Vec<String>,
    /// Stemmed words of its summary and operationId.
    mentions: Vec<String>,
    returns_ids: bool,
}

impl Facts {
    fn of(e: &Endpoint) -> Facts {
        let mut needs: Vec<(String, Option<String>)> = Vec::new();
        for p in &e.parameters {
            let wanted = match p.location {
                ParamLocation::Path => true,
                ParamLocation::Query | ParamLocation::Argument => p.required,
                ParamLocation::Header | ParamLocation::Cookie => false,
            };
            if wanted && is_id_name(&p.name) && !is_enum(&p.schema) {
                let noun = noun_of(&p.name, &e.path, p.location == ParamLocation::Path);
                push_need(&mut needs, &p.name, noun);
            }
        }
        if let Some(body) = &e.request_body {
            let required: Vec<&str> = body
                .schema
                .get("required")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in required {
                let schema = body.schema.pointer(&format!("/properties/{name}"));
                if is_id_name(name) && !schema.is_some_and(is_enum) {
                    push_need(&mut needs, name, noun_of(name, &e.path, false));
                } else if schema.is_some_and(lists_references) {
                    // `"tracks": [{"uri": ...}]`: references to tracks.
                    push_need(&mut needs, name, tokenize(name).pop());
                }
            }
        }
        let mut mentions: Vec<String> = e.summary.iter().flat_map(|s| tokenize(s)).collect();
        mentions.extend(e.operation_id.iter().flat_map(|s| tokenize(s)));
        Facts {
            needs,
            about: about(e),
            mentions,
            returns_ids: e.response_fields.iter().any(|f| is_id_name(f)),
        }
    }

    fn needs_noun(&self, noun: &str) -> bool {
        self.needs.iter().any(|(_, n)| n.as_deref() == Some(noun))
    }
}

/// The stemmed nouns an endpoint's path and response are about (see the module docs).
fn about(e: &Endpoint) -> Vec<String> {
    let stem_one = |s: &str| -> Option<String> {
        let t = tokenize(s);
        (t.len() == 1).then(|| t[0].clone())
    };
    let mut from_fields: Vec<String> = Vec::new();
    for f in &e.response_fields {
        let words = crate::text::split_identifier(f);
        if words.len() == 1 {
            from_fields.extend(stem_one(f));
        } else if is_id_name(f) {
            // `show_id`, `genre_ids`: an identifier of the noun before it.
            from_fields.extend(stem_one(&words[words.len() - 2]));
        }
    }
    let segments: Vec<String> = e
        .path
        .split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .flat_map(tokenize)
        .collect();
    // A response that is a list of one path noun is not about the other path nouns.
    let listed: Vec<&String> = segments
        .iter()
        .filter(|s| from_fields.contains(s))
        .collect();
    let mut out: Vec<String> = if listed.is_empty() {
        segments.clone()
    } else {
        listed.into_iter().cloned().collect()
    };
    out.extend(from_fields);
    out.sort_unstable();
    out.dedup();
    out
}

fn push_need(needs: &mut Vec<(String, Option<String>)>, name: &str, noun: Option<String>) {
    if !needs.iter().any(|(p, _)| p == name) {
        needs.push((name.to_string(), noun));
    }
}

/// At most this many producers are kept per need. Real APIs stay far below it; in a huge
/// API (thousands of search endpoints) the most general ones are kept, so the graph stays
/// proportional to the catalog rather than to its square.
const MAX_PRODUCERS: usize = 64;

/// One API's endpoints that can produce identifiers (they return some and are safe to
/// call), indexed by what would make them a producer, so that finding a need's producers
/// costs the size of the answer rather than a scan of the catalog.
#[derive(Default)]
struct Pool<'a> {
    /// `(method, path)` -> position, for descriptions that name an endpoint (any endpoint).
    by_key: HashMap<(&'a str, &'a str), usize>,
    /// Response field name -> producers carrying it.
    by_field: HashMap<&'a str, Vec<usize>>,
    /// Stemmed noun -> producers about it.
    by_about: HashMap<&'a str, Vec<usize>>,
    /// Stemmed word -> producers whose summary or operationId names it.
    by_mention: HashMap<&'a str, Vec<usize>>,
    /// Producers that look things up by free text.
    lookups: Vec<usize>,
}

/// The pools of every API, keyed by API id.
fn pools<'a>(
    endpoints: &'a [Endpoint],
    facts: &'a [Facts],
    lookup: &[bool],
) -> HashMap<&'a str, Pool<'a>> {
    let mut pools: HashMap<&str, Pool> = HashMap::new();
    for (j, e) in endpoints.iter().enumerate() {
        let pool = pools.entry(e.api.as_str()).or_default();
        pool.by_key
            .entry((e.method.as_str(), e.path.as_str()))
            .or_insert(j);
        let f = &facts[j];
        if !(f.returns_ids && e.method.is_safe()) {
            continue;
        }
        let mut fields: Vec<&str> = e.response_fields.iter().map(String::as_str).collect();
        fields.sort_unstable();
        fields.dedup();
        for x in fields {
            pool.by_field.entry(x).or_default().push(j);
        }
        for t in &f.about {
            pool.by_about.entry(t.as_str()).or_default().push(j);
        }
        let mut mentions: Vec<&str> = f.mentions.iter().map(String::as_str).collect();
        mentions.sort_unstable();
        mentions.dedup();
        for t in mentions {
            pool.by_mention.entry(t).or_default().push(j);
        }
        if lookup[j] {
            pool.lookups.push(j);
        }
    }
    pools
}

/// The needs of endpoint `i` with their producers.
fn needs_of(
    i: usize,
    endpoints: &[Endpoint],
    facts: &[Facts],
    pool: &Pool,
    depth: &[usize],
) -> Vec<Need> {
    let e = &endpoints[i];
    // What is added to a collection comes from elsewhere: listing the collection itself
    // (`GET /me/albums` for `PUT /me/albums`) produces what is already there, which is
    // what a removal needs but not an addition.
    let adds = matches!(e.method, Method::Post | Method::Put | Method::Patch);
    let eligible = |j: usize| j != i && !(adds && endpoints[j].path == e.path);
    let mut out: Vec<Need> = Vec::new();
    // Tier 0: endpoints the description names.
    let text = [e.summary.as_deref(), e.description.as_deref()];
    for caps in text
        .iter()
        .flatten()
        .flat_map(|t| ENDPOINT_REF.captures_iter(t))
    {
        let named = pool
            .by_key
            .get(&(&caps[1], &caps[2]))
            .copied()
            .filter(|&j| j != i);
        if let Some(j) = named {
            out.push(Need {
                param: endpoints[j].key(),
                noun: None,
                producers: vec![j],
                evidence: Evidence::Named,
            });
        }
    }
    let none: &[usize] = &[];
    let listed = |map: &HashMap<&str, Vec<usize>>, key: &str| -> Vec<usize> {
        map.get(key).map_or(none, Vec::as_slice).to_vec()
    };
    // What is removed from a collection is picked from that collection's own listing
    // (`GET /playlists/{id}/tracks` for `DELETE /playlists/{id}/tracks`).
    let own_listing: Option<(usize, String)> = (e.method == Method::Delete)
        .then(|| pool.by_key.get(&("GET", e.path.as_str())).copied())
        .flatten()
        .filter(|&j| facts[j].returns_ids)
        .and_then(|j| {
            let collection = e
                .path
                .split('/')
                .rev()
                .find(|s| !s.is_empty() && !s.starts_with('{'))
                .and_then(|s| tokenize(s).pop())?;
            Some((j, collection))
        });
    for (param, noun) in &facts[i].needs {
        let n = noun.as_deref();
        if let Some(&(j, _)) = own_listing.as_ref().filter(|(_, c)| n == Some(c.as_str())) {
            out.push(Need {
                param: param.clone(),
                noun: noun.clone(),
                producers: vec![j],
                evidence: Evidence::About,
            });
            continue;
        }
        let about = {
            let mut v = if param.len() > 3 {
                listed(&pool.by_field, param)
            } else {
                Vec::new()
            };
            if let Some(n) = n {
                v.extend(
                    listed(&pool.by_about, n)
                        .into_iter()
                        .filter(|&j| !facts[j].needs_noun(n)),
                );
            }
            v
        };
        let mentioned = n.map_or_else(Vec::new, |n| {
            listed(&pool.by_mention, n)
                .into_iter()
                .filter(|&j| !facts[j].needs_noun(n))
                .collect()
        });
        let tiers = [
            (Evidence::About, about),
            (Evidence::Mentioned, mentioned),
            (Evidence::Lookup, pool.lookups.clone()),
        ];
        let found = tiers.into_iter().find_map(|(evidence, mut producers)| {
            producers.retain(|&j| eligible(j));
            producers.sort_unstable();
            producers.dedup();
            if producers.len() > MAX_PRODUCERS {
                // Keep the most general: needing nothing, then shallow, then first.
                producers.sort_by_key(|&j| (!facts[j].needs.is_empty(), depth[j], j));
                producers.truncate(MAX_PRODUCERS);
                producers.sort_unstable();
            }
            (!producers.is_empty()).then_some((evidence, producers))
        });
        if let Some((evidence, producers)) = found {
            out.push(Need {
                param: param.clone(),
                noun: noun.clone(),
                producers,
                evidence,
            });
        }
    }
    out
}

/// `movie_id`, `id`, `ids`, `trackUris`: the last word of the name is an identifier word.
pub fn is_id_name(name: &str) -> bool {
    crate::text::split_identifier(name)
        .last()
        .is_some_and(|w| ID_WORDS.contains(&w.as_str()))
}

/// An array of objects that carry an identifier field (`[{"uri": ...}]`): references to
/// existing things, which someone has to produce.
fn lists_references(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("array")
        && schema
            .pointer("/items/properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.keys().any(|k| is_id_name(k)))
}

fn is_enum(schema: &Value) -> bool {
    schema.get("enum").is_some_and(|v| v.is_array())
        || schema
            .get("items")
            .and_then(|i| i.get("enum"))
            .is_some_and(|v| v.is_array())
}

/// The stemmed noun an identifier parameter refers to: the name without its identifier
/// word (`movie_id` -> `movi`), else the path segment before the parameter (a path
/// parameter) or the last literal segment (a query or body field).
fn noun_of(name: &str, path: &str, in_path: bool) -> Option<String> {
    let words = crate::text::split_identifier(name);
    let stem_words = tokenize(&words[..words.len().saturating_sub(1)].join(" "));
    if let Some(last) = stem_words.last() {
        return Some(last.clone());
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let end = if in_path {
        let marker = format!("{{{name}}}");
        segments.iter().position(|s| *s == marker)?
    } else {
        segments.len()
    };
    segments[..end]
        .iter()
        .rev()
        .find(|s| !s.starts_with('{'))
        .and_then(|s| tokenize(s).pop())
}

/// Takes free text in a query parameter with a lookup name.
fn is_lookup(e: &Endpoint) -> bool {
    e.parameters.iter().any(|p| {
        p.location == ParamLocation::Query
            && LOOKUP_PARAMS.contains(&p.name.to_ascii_lowercase().as_str())
            && p.schema
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(|t| t == "string")
    })
}

#[cfg(test)]
#[path = "prereq_tests.rs"]
mod tests;
