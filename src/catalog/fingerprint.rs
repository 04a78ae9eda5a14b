//! What a catalog is made of, as one digest, without reading a spec: the config, and the
//! path, size and modification time of every spec file it names (the original and, when one
//! is used, its enriched copy: either changes what is served).
//!
//! The index records the digest of the catalog it was built from. A server that finds the
//! same digest at start knows the index is current without loading and normalising every
//! spec, which at 100,000 endpoints was most of its start time and memory; any edit,
//! added or removed spec, or config change gives another digest and the full path
//! (load, compare content hashes, embed what changed) runs as before.

use super::{expand_sources, Api, Catalog, CatalogConfig, SpecSource};
use sha2::{Digest, Sha256};
use std::time::UNIX_EPOCH;

/// The digest of `config`'s sources (see the module documentation); `None` when a source
/// cannot be examined (then nothing can be assumed unchanged).
pub fn sources_digest(config: &CatalogConfig) -> Option<String> {
    // What an MCP server serves is known only by asking it.
    if config.apis.iter().any(|a| a.mcp.is_some()) {
        return None;
    }
    let mut problems = Vec::new();
    let sources = expand_sources(config, &mut problems);
    if !problems.is_empty() {
        return None;
    }
    let mut h = Sha256::new();
    // The config's every field, base URLs and auth included, in declaration order.
    h.update(format!("{config:?}").as_bytes());
    for s in &sources {
        for file in files_of(s) {
            let meta = std::fs::metadata(file).ok()?;
            let modified = meta
                .modified()
                .ok()?
                .duration_since(UNIX_EPOCH)
                .ok()?
                .as_nanos();
            h.update(
                format!("\n{}\t{}\t{}\t{modified}", s.id, file.display(), meta.len()).as_bytes(),
            );
        }
    }
    Some(hex::encode(h.finalize()))
}

/// What a running server compares to notice a catalog change: [`sources_digest`] when
/// every source can be examined, else a digest that still changes with the config, the
/// problems and every file that can be examined (a spec that went missing, then came back,
/// is two changes). Never fails: a watch must keep watching through a broken catalog.
pub fn watch_digest(config: &CatalogConfig) -> String {
    if let Some(d) = sources_digest(config) {
        return d;
    }
    let mut problems = Vec::new();
    let mut sources = expand_sources(config, &mut problems);
    // An MCP server's enriched copy changes what is served as a spec's does.
    if let Some(dir) = &config.data_dir {
        sources.extend(config.apis.iter().enumerate().filter_map(|(i, a)| {
            a.mcp.as_ref()?;
            Some(super::mcp_texts::source(dir, a.id.as_deref()?, i))
        }));
    }
    let mut h = Sha256::new();
    h.update(format!("{config:?}").as_bytes());
    for p in &problems {
        h.update(format!("\n{p:?}").as_bytes());
    }
    for s in &sources {
        for file in files_of(s) {
            let stamp = std::fs::metadata(file).ok().map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                (m.len(), modified)
            });
            h.update(format!("\n{}\t{}\t{stamp:?}", s.id, file.display()).as_bytes());
        }
    }
    format!("partial:{}", hex::encode(h.finalize()))
}

/// The files a source is read from: the original, and its enriched copy when it has one.
fn files_of(s: &SpecSource) -> Vec<&std::path::Path> {
    if s.path == s.original {
        vec![s.path.as_path()]
    } else {
        vec![s.original.as_path(), s.path.as_path()]
    }
}

impl Catalog {
    /// The catalog as its config describes it, no spec read: its APIs by id and source
    /// file (for [`Catalog::api_config`]) and no endpoints. For a server whose index is
    /// current ([`sources_digest`]): the endpoints are the index's.
    pub fn config_only(config: &CatalogConfig) -> Catalog {
        let mut problems = Vec::new();
        let apis = expand_sources(config, &mut problems)
            .into_iter()
            .map(|s| Api {
                title: s.id.clone(),
                id: s.id,
                version: String::new(),
                description: None,
                spec_version: String::new(),
                source: s.path,
                servers: Vec::new(),
                config_index: Some(s.config_index),
            })
            .collect();
        Catalog {
            apis,
            endpoints: Vec::new(),
            problems,
            config: config.clone(),
            sources_digest: sources_digest(config),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_digest_sees_a_missing_spec_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("a.json");
        let config = CatalogConfig::from_paths(std::slice::from_ref(&spec));
        let missing = watch_digest(&config);
        assert!(missing.starts_with("partial:"), "{missing}");
        assert_eq!(missing, watch_digest(&config));
        std::fs::write(&spec, "{}").unwrap();
        let present = watch_digest(&config);
        assert_ne!(missing, present);
        assert_eq!(Some(present.clone()), sources_digest(&config));
        // An enriched copy written beside it (by `enrich` or a review) is a change too.
        std::fs::write(dir.path().join("a.enriched.json"), "{}").unwrap();
        let copied = watch_digest(&config);
        assert_ne!(copied, present);
        // The original is served beside its copy, so an edit of it is a change too.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&spec, "{ }").unwrap();
        assert_ne!(watch_digest(&config), copied);
        assert_eq!(Some(watch_digest(&config)), sources_digest(&config));
    }

    #[test]
    fn the_digest_changes_with_files_and_config_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let spec = dir.path().join("tmdb.json");
        std::fs::copy(root.join("catalogs/tmdb.json"), &spec).unwrap();
        let cfg = CatalogConfig::from_paths(&[dir.path().to_path_buf()]);
        let d1 = sources_digest(&cfg).unwrap();
        assert_eq!(sources_digest(&cfg).unwrap(), d1);
        // Another file in the folder.
        std::fs::copy(
            root.join("catalogs/spotify.json"),
            dir.path().join("spotify.json"),
        )
        .unwrap();
        let d2 = sources_digest(&cfg).unwrap();
        assert_ne!(d2, d1);
        // An edit that keeps the size (the modification time tells).
        let text = std::fs::read(&spec).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&spec, &text).unwrap();
        assert_ne!(sources_digest(&cfg).unwrap(), d2);
        // Another config over the same files.
        let other = CatalogConfig::from_paths(std::slice::from_ref(&spec));
        assert_ne!(sources_digest(&other), sources_digest(&cfg));
        // A missing spec: nothing is known.
        let gone = CatalogConfig::from_paths(&[dir.path().join("gone.json")]);
        assert_eq!(sources_digest(&gone), None);

        let c = Catalog::config_only(&cfg);
        assert!(c.endpoints.is_empty());
        let ids: Vec<&str> = c.apis.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["spotify", "tmdb"]);
        assert_eq!(c.sources_digest, sources_digest(&cfg));
    }
}
