//! The ranking's per-endpoint tables, computed once when the index is written and stored in
//! it, so that opening an index analyses nothing.
//!
//! The prerequisite graph and the sibling table read every endpoint's parameters, paths and
//! response fields; at 100,000 endpoints that took seconds at every start and required
//! every record in memory. Stored beside the records, they make a start read a few
//! megabytes of tables instead, and the records are decoded only when an endpoint is shown
//! or called. An index without them (or with tables of another [`VERSION`]) still works:
//! they are then computed from the records at open, as before.

use super::prereq::Graph;
use super::siblings::Siblings;
use crate::catalog::Endpoint;
use crate::index::binfile::{Damaged, Reader, Writer};
use std::collections::HashMap;
use std::path::Path;

/// Version of the tables' layout and of the analyses that fill them: bump it when either
/// changes, and indexes written before are analysed again at open until rebuilt.
pub const VERSION: u32 = 1;

/// What ranking and serving need per endpoint without decoding its record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    pub graph: Graph,
    pub siblings: Siblings,
    /// Whether each endpoint's method is safe (a read).
    pub safe: Vec<bool>,
    /// The API of each endpoint, as a position in `apis`.
    pub api_of: Vec<u32>,
    /// `(id, title)` of every API, in order of first appearance.
    pub apis: Vec<(String, String)>,
    /// Distinct server URLs of the endpoints that carry user info (`user:pass@host`): the
    /// server registers them as secrets before anything is logged.
    pub credentialed_servers: Vec<String>,
}

impl Tables {
    /// Analyses `endpoints` (the index's records, in position order).
    pub fn build(endpoints: &[Endpoint]) -> Tables {
        let mut numbers: HashMap<&str, u32> = HashMap::new();
        let mut apis = Vec::new();
        let api_of = endpoints
            .iter()
            .map(|e| {
                *numbers.entry(e.api.as_str()).or_insert_with(|| {
                    apis.push((e.api.clone(), e.api_title.clone()));
                    (apis.len() - 1) as u32
                })
            })
            .collect();
        let mut credentialed_servers: Vec<String> = endpoints
            .iter()
            .flat_map(|e| e.servers.iter())
            .filter(|s| s.contains('@'))
            .cloned()
            .collect();
        credentialed_servers.sort();
        credentialed_servers.dedup();
        Tables {
            graph: Graph::build(endpoints),
            siblings: Siblings::build(endpoints),
            safe: endpoints.iter().map(|e| e.method.is_safe()).collect(),
            api_of,
            apis,
            credentialed_servers,
        }
    }

    /// Number of endpoints.
    pub fn len(&self) -> usize {
        self.safe.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.safe.is_empty()
    }

    /// The API id of endpoint `position`.
    pub fn api(&self, position: usize) -> &str {
        self.api_of
            .get(position)
            .and_then(|&a| self.apis.get(a as usize))
            .map_or("", |(id, _)| id.as_str())
    }

    /// The tables as bytes, [`VERSION`] first.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::section();
        w.u32(VERSION);
        w.u64(self.apis.len() as u64);
        for (id, title) in &self.apis {
            w.str(id);
            w.str(title);
        }
        w.u64(self.api_of.len() as u64);
        for (&a, &safe) in self.api_of.iter().zip(&self.safe) {
            w.u32(a);
            w.u32(u32::from(safe));
        }
        w.u64(self.credentialed_servers.len() as u64);
        for s in &self.credentialed_servers {
            w.str(s);
        }
        self.graph.write(&mut w);
        self.siblings.write(&mut w);
        w.finish()
    }

    /// Tables written by [`Tables::encode`] for `count` endpoints. `Ok(None)` when there
    /// are none or they are of another version (compute them then); an error when they are
    /// damaged.
    pub fn decode(bytes: &[u8], count: usize, path: &Path) -> Result<Option<Tables>, Damaged> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let mut r = Reader::open_section(bytes, path);
        if r.u32()? != VERSION {
            return Ok(None);
        }
        let n = r.count(16)?;
        let mut apis = Vec::with_capacity(n);
        for _ in 0..n {
            apis.push((r.str()?.to_string(), r.str()?.to_string()));
        }
        let m = r.count(8)?;
        if m != count {
            return Err(r.damaged(format!("ranking tables of {m} endpoints, expected {count}")));
        }
        let (mut api_of, mut safe) = (Vec::with_capacity(m), Vec::with_capacity(m));
        for _ in 0..m {
            let a = r.u32()?;
            if a as usize >= apis.len() {
                return Err(r.damaged(format!("API {a} of {}", apis.len())));
            }
            api_of.push(a);
            safe.push(r.u32()? != 0);
        }
        let c = r.count(8)?;
        let credentialed_servers = (0..c)
            .map(|_| r.str().map(str::to_string))
            .collect::<Result<_, _>>()?;
        let graph = Graph::read(&mut r)?;
        let siblings = Siblings::read(&mut r)?;
        if graph.len() != m || siblings.len() != m || !r.at_end() {
            return Err(r.damaged("ranking tables of mismatched lengths"));
        }
        Ok(Some(Tables {
            graph,
            siblings,
            safe,
            api_of,
            apis,
            credentialed_servers,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn catalog() -> Catalog {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        Catalog::load_paths(&[
            root.join("catalogs/tmdb.json"),
            root.join("catalogs/spotify.json"),
        ])
    }

    #[test]
    fn tables_round_trip_and_say_what_the_records_say() {
        let c = catalog();
        let t = Tables::build(&c.endpoints);
        assert_eq!(t.len(), c.endpoints.len());
        for (i, e) in c.endpoints.iter().enumerate() {
            assert_eq!(t.api(i), e.api);
            assert_eq!(t.safe[i], e.method.is_safe());
        }
        assert_eq!(t.apis.len(), 2);
        assert!(t.credentialed_servers.is_empty());
        assert!((0..t.len()).any(|i| !t.graph.needs(i).is_empty()));
        let path = Path::new("docs.bin");
        let back = Tables::decode(&t.encode(), t.len(), path).unwrap();
        assert_eq!(back.as_ref(), Some(&t));
    }

    #[test]
    fn other_versions_are_recomputed_and_damage_is_an_error() {
        let c = catalog();
        let t = Tables::build(&c.endpoints);
        let path = Path::new("docs.bin");
        let bytes = t.encode();
        assert_eq!(Tables::decode(&[], t.len(), path).unwrap(), None);
        let mut other = bytes.clone();
        other[0] = other[0].wrapping_add(1);
        assert_eq!(Tables::decode(&other, t.len(), path).unwrap(), None);
        assert!(Tables::decode(&bytes, t.len() + 1, path).is_err());
        for cut in [5, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                Tables::decode(&bytes[..cut], t.len(), path).is_err(),
                "cut at {cut}"
            );
        }
    }
}
