//! Siblings: endpoints whose paths differ only in their last, literal segment.
//!
//! `POST /me/player/next` and `POST /me/player/previous`, `GET /movie/{id}/similar` and
//! `GET /movie/{id}/recommendations`, `GET /movie/popular` and `GET /movie/top_rated` read
//! almost alike to an embedding model, and their descriptions repeat each other; what
//! tells them apart is the last word of the path, the action or facet. When a request says
//! that word of one sibling and no word of another's, the other is not what was asked for
//! ("skip to the next song" is not `previous`). Only the last segment is compared:
//! siblings that differ earlier are different resources (`/albums/{id}` and
//! `/tracks/{id}`), and a task often needs several of those at once.
//!
//! Words are compared as stems with their `-ly`, `-ing`, `-ed` endings cut, or by a prefix
//! of four letters or more: "now playing" says `currently-playing`, "recommend" says
//! `recommendations`.

use crate::catalog::Endpoint;
use crate::index::binfile::{Damaged, Reader, Writer};
use crate::index::lexical::tokenize;
use std::collections::HashMap;

/// For each endpoint, the words of its last segment and those of each sibling's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Siblings {
    /// `contrasts[i]`: its own last words and, for each sibling that shares none of them,
    /// that sibling's.
    contrasts: Vec<Option<Contrast>>,
}

/// The last path words of an endpoint and of its siblings that share none of them.
#[derive(Debug, Clone, PartialEq)]
struct Contrast {
    own: Vec<String>,
    others: Vec<Vec<String>>,
}

/// Sibling groups larger than this are catalogs of look-alike resources (`/v1/{a..z}`),
/// where one word says little about the others.
const MAX_GROUP: usize = 12;

impl Siblings {
    /// Finds the siblings among `endpoints` (same API, method and path up to a different
    /// literal last segment).
    pub fn build(endpoints: &[Endpoint]) -> Siblings {
        let segments: Vec<Vec<&str>> = endpoints
            .iter()
            .map(|e| e.path.split('/').filter(|s| !s.is_empty()).collect())
            .collect();
        // (api, method, path without its last segment) -> members.
        let mut groups: HashMap<(&str, &str, String), Vec<usize>> = HashMap::new();
        for (i, e) in endpoints.iter().enumerate() {
            let Some((last, parent)) = segments[i].split_last() else {
                continue;
            };
            if last.starts_with('{') {
                continue;
            }
            let shape: Vec<&str> = parent
                .iter()
                .map(|s| if s.starts_with('{') { "{}" } else { s })
                .collect();
            groups
                .entry((e.api.as_str(), e.method.as_str(), shape.join("/")))
                .or_default()
                .push(i);
        }
        let mut contrasts = vec![None; endpoints.len()];
        for members in groups.into_values() {
            if members.len() < 2 || members.len() > MAX_GROUP {
                continue;
            }
            let words: Vec<Vec<String>> = members
                .iter()
                .map(|&i| segments[i].last().map_or_else(Vec::new, |s| tokenize(s)))
                .collect();
            for (k, &i) in members.iter().enumerate() {
                let own = &words[k];
                let others: Vec<Vec<String>> = words
                    .iter()
                    .enumerate()
                    .filter(|(j, w)| *j != k && !w.iter().any(|x| own.contains(x)))
                    .map(|(_, w)| w.clone())
                    .collect();
                if !own.is_empty() && !others.is_empty() {
                    contrasts[i] = Some(Contrast {
                        own: own.clone(),
                        others,
                    });
                }
            }
        }
        Siblings { contrasts }
    }

    /// Appends the table to `w`, to be stored with the index ([`super::tables`]).
    pub fn write(&self, w: &mut Writer) {
        let words = |w: &mut Writer, list: &[String]| {
            w.u64(list.len() as u64);
            for x in list {
                w.str(x);
            }
        };
        w.u64(self.contrasts.len() as u64);
        for c in &self.contrasts {
            match c {
                None => w.u32(0),
                Some(c) => {
                    w.u32(1);
                    words(w, &c.own);
                    w.u64(c.others.len() as u64);
                    for o in &c.others {
                        words(w, o);
                    }
                }
            }
        }
    }

    /// Reads a table written by [`Siblings::write`].
    pub fn read(r: &mut Reader<'_>) -> Result<Siblings, Damaged> {
        fn words(r: &mut Reader<'_>) -> Result<Vec<String>, Damaged> {
            let n = r.count(8)?;
            (0..n).map(|_| r.str().map(str::to_string)).collect()
        }
        let n = r.count(4)?;
        let mut contrasts = Vec::with_capacity(n);
        for _ in 0..n {
            contrasts.push(match r.u32()? {
                0 => None,
                _ => {
                    let own = words(r)?;
                    let count = r.count(8)?;
                    let others = (0..count).map(|_| words(r)).collect::<Result<_, _>>()?;
                    Some(Contrast { own, others })
                }
            });
        }
        Ok(Siblings { contrasts })
    }

    /// Number of endpoints in the table.
    pub fn len(&self) -> usize {
        self.contrasts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.contrasts.is_empty()
    }

    /// Whether the request (its stemmed words) says a word that picks a sibling of
    /// endpoint `position` and no word of the endpoint's own there.
    pub fn passed_over(&self, position: usize, said: &[String]) -> bool {
        let says = |w: &[String]| w.iter().any(|x| said.iter().any(|s| same_word(s, x)));
        self.contrasts
            .get(position)
            .and_then(Option::as_ref)
            .is_some_and(|c| !says(&c.own) && c.others.iter().any(|o| says(o)))
    }
}

/// Stems of one word: equal once inflections are cut (`played`, `playing`), or one a
/// prefix of the other of at least 4 letters (`recommend`, `recommendation`).
fn same_word(a: &str, b: &str) -> bool {
    let (a, b) = (root(a), root(b));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= 4 && long.starts_with(short))
}

/// A word without its `-ly`, `-ing` or `-ed` ending, when a root of 3 letters or more
/// is left.
fn root(w: &str) -> &str {
    for suffix in ["ly", "ing", "ed"] {
        if let Some(r) = w.strip_suffix(suffix) {
            if r.len() >= 3 {
                return r;
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ep(method: &str, path: &str) -> Endpoint {
        serde_json::from_value(json!({
            "api": "a", "api_title": "A", "tool_name": format!("{method}{path}"),
            "method": method, "path": path, "operation_id": null, "summary": null,
            "description": null, "tags": [], "deprecated": false, "parameters": [],
            "request_body": null, "response_fields": [], "security": [], "servers": [],
            "generated_summary": null, "generated_questions": [],
            "description_provenance": null
        }))
        .unwrap()
    }

    fn said(q: &str) -> Vec<String> {
        tokenize(q)
    }

    #[test]
    fn the_last_word_tells_siblings_apart() {
        let eps = [
            ep("POST", "/me/player/next"),
            ep("POST", "/me/player/previous"),
            ep("PUT", "/me/player/pause"),
            ep("GET", "/me/player/currently-playing"),
            ep("GET", "/me/player/recently-played"),
            ep("GET", "/tv/{tv_id}/similar"),
            ep("GET", "/tv/{tv_id}/recommendations"),
            ep("GET", "/albums/{id}"),
            ep("GET", "/tracks/{id}"),
        ];
        let s = Siblings::build(&eps);
        let over = |i: usize, q: &str| s.passed_over(i, &said(q));
        assert!(over(1, "skip to the next song"));
        assert!(!over(0, "skip to the next song"));
        assert!(!over(1, "go back to the previous song, then the next"));
        assert!(!over(2, "skip to the next song"), "another method");
        assert!(!over(1, "play something"), "nothing said of either");
        assert!(over(4, "what is currently on"));
        assert!(!over(4, "the song now playing"), "a word both share");
        assert!(!over(3, "the song now being played"), "played is playing");
        assert!(over(3, "what did I hear recently"));
        assert!(!over(6, "recommend shows similar to Lost"));
        assert!(over(6, "shows similar to Lost"));
        assert!(!over(8, "the album of this track"), "different resources");
    }

    #[test]
    fn words() {
        assert!(same_word("recommend", "recommendation"));
        assert!(same_word("playing", "played"));
        assert!(same_word("current", "currently"));
        assert!(!same_word("player", "playlist"));
        assert!(!same_word("next", "previou"));
        assert!(!same_word("top", "topic"));
    }
}
