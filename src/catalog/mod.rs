//! Loading a catalog: one or more OpenAPI documents (Swagger 2.0, OpenAPI 3.0/3.1, JSON or
//! YAML), each normalized into [`Endpoint`] records.
//!
//! A catalog never fails as a whole because one spec is broken: every spec that can be
//! used is used, and every problem is reported with its file and JSON pointer.

pub mod auth_config;
pub mod bodies;
pub mod client_file;
pub mod compact;
pub mod config;
pub mod describe;
pub mod endpoint;
pub mod enriched;
pub mod family;
pub mod fingerprint;
pub mod mcp_config;
pub mod mcp_texts;
pub mod mcp_tool;
pub mod mcp_tools;
pub mod naming;
pub mod normalize;
pub mod operation;
pub mod parameters;
pub mod problem;
pub mod resolve;
pub mod responses;
pub mod security;
pub mod source;
pub mod swagger2;
pub mod tool_scan;
pub mod upstream_config;
pub mod weak;
pub mod yaml;

pub use config::{ApiConfig, AuthConfig, CatalogConfig, EnrichConfig, KeyLocation};
pub use endpoint::*;
pub use fingerprint::{sources_digest, watch_digest};
pub use problem::{Problem, Severity};

use std::path::{Path, PathBuf};

/// File extensions that can hold a spec.
const SPEC_EXTENSIONS: &[&str] = &["json", "yaml", "yml"];
/// The infix that marks the enriched copy of a spec (`tmdb.enriched.json`).
pub const ENRICHED_INFIX: &str = ".enriched";

/// A loaded catalog.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub apis: Vec<Api>,
    /// Sorted by (api, path, method); tool names are unique.
    pub endpoints: Vec<Endpoint>,
    /// Everything that went wrong, in file order. `Severity::Error` means that spec was
    /// skipped.
    pub problems: Vec<Problem>,
    pub config: CatalogConfig,
    /// [`sources_digest`] of the config, taken before any spec was read (so an edit made
    /// while loading gives the next start another digest).
    pub sources_digest: Option<String>,
}

/// Who may see one API of a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access<'a> {
    /// Its entry has no `visible_to`.
    Everyone,
    /// Its entry's `visible_to`.
    Limited(&'a config::VisibleTo),
    /// No entry of the config loaded it, so no rule can be read for it: nobody sees it
    /// (fail closed), and the server says so at start and at every reload.
    Unresolved,
}

/// One spec file to load and the API entry it belongs to.
#[derive(Debug, Clone)]
pub struct SpecSource {
    pub id: String,
    /// The enriched copy when one exists (its text is laid over the original, see
    /// [`enriched`]), else the original.
    pub path: PathBuf,
    /// The original spec file, whose endpoints are served either way.
    pub original: PathBuf,
    pub config_index: usize,
}

impl Catalog {
    /// Loads every spec the config lists. An MCP server among them needs its listing: see
    /// [`Catalog::load_listed`].
    pub fn load(config: &CatalogConfig) -> Catalog {
        Catalog::load_listed(config, &mcp_tools::Listings::new())
    }

    /// Loads every spec the config lists, and the tools of each MCP server from what it
    /// listed (`listings`, by entry position).
    pub fn load_listed(config: &CatalogConfig, listings: &mcp_tools::Listings) -> Catalog {
        let sources_digest = sources_digest(config);
        let mut problems = Vec::new();
        let sources = expand_sources(config, &mut problems);
        let mut apis = Vec::new();
        let mut endpoints = Vec::new();
        let results = load_parallel(&sources);
        for (src, result) in sources.iter().zip(results) {
            match result {
                Ok(mut n) => {
                    problems.append(&mut n.warnings);
                    let cfg = &config.apis[src.config_index];
                    if let Some(base) = &cfg.base_url {
                        // Calls use the config's base URL itself; what endpoints carry (and
                        // the index stores, and tools show) keeps no credentials.
                        n.api.servers = vec![without_credentials(base.trim_end_matches('/'))];
                        for ep in &mut n.endpoints {
                            ep.servers = n.api.servers.clone();
                        }
                    }
                    n.api.config_index = Some(src.config_index);
                    apis.push(n.api);
                    endpoints.append(&mut n.endpoints);
                }
                Err(p) => problems.push(p),
            }
        }
        add_mcp_servers(config, listings, &mut apis, &mut endpoints, &mut problems);
        endpoints.sort_by(|a, b| (&a.api, &a.path, a.method).cmp(&(&b.api, &b.path, b.method)));
        naming::assign(&mut endpoints, apis.len() > 1);
        Catalog {
            apis,
            endpoints,
            problems,
            config: config.clone(),
            sources_digest,
        }
    }

    /// Loads plain spec paths (files or folders).
    pub fn load_paths(paths: &[PathBuf]) -> Catalog {
        Catalog::load(&CatalogConfig::from_paths(paths))
    }

    /// Problems that made a spec be skipped.
    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
    }

    /// Problems that degraded a spec that still loaded.
    pub fn warnings(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Warning)
    }

    /// The endpoint with this tool name.
    pub fn endpoint(&self, tool_name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.tool_name == tool_name)
    }

    /// The API with this id.
    pub fn api(&self, id: &str) -> Option<&Api> {
        self.apis.iter().find(|a| a.id == id)
    }

    /// Who may see the API `id`, by the entry that loaded it ([`Catalog::api_config`]).
    pub fn access(&self, id: &str) -> Access<'_> {
        match self.api_config(id) {
            None => Access::Unresolved,
            Some(c) => match &c.visible_to {
                None => Access::Everyone,
                Some(rule) => Access::Limited(rule),
            },
        }
    }

    /// The config entry that loaded the API `id`: the one place its `visible_to`,
    /// `read_only` and `auth` are read from, for MCP, the console and calls alike. Found
    /// by the entry that loaded the spec (enriched copy, folder and id-less entries alike),
    /// never by comparing paths or ids: `None` when no loaded API has this id, and callers
    /// treat that as a rule that cannot be resolved (the API is hidden).
    pub fn api_config(&self, id: &str) -> Option<&ApiConfig> {
        let index = self.api(id)?.config_index?;
        self.config.apis.get(index)
    }
}

/// A URL without user info or query (either may hold a credential); unparsable text is
/// kept as it is (the invoker reports it, without user info).
pub(crate) fn without_credentials(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u)
            if u.has_host()
                && (!u.username().is_empty() || u.password().is_some() || u.query().is_some()) =>
        {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        _ => raw.to_string(),
    }
}

/// Loads specs on all cores; each spec is independent.
fn load_parallel(sources: &[SpecSource]) -> Vec<Result<normalize::Normalized, Problem>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<normalize::Normalized, Problem>>>> = sources
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(sources.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(src) = sources.get(i) else { break };
                let r = load_one(src);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .zip(sources)
        .map(|(slot, src)| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(Problem::error(
                    &src.path,
                    None,
                    "internal error while loading",
                ))
            })
        })
        .collect()
}

/// Loads one spec. A panic in the loader is a bug, but it must cost one spec, not the
/// catalog, so it is caught and reported like any other problem.
pub fn load_one(src: &SpecSource) -> Result<normalize::Normalized, Problem> {
    let path = src.path.clone();
    let id = src.id.clone();
    std::panic::catch_unwind(move || {
        if src.path != src.original {
            return enriched::load(src);
        }
        let parsed = source::read_document_packed(&path)?;
        let mut n = normalize::normalize(&path, &id, parsed.value, true)?;
        let mut warnings = parsed.warnings;
        warnings.append(&mut n.warnings);
        n.warnings = warnings;
        Ok(n)
    })
    .unwrap_or_else(|_| {
        Err(Problem::error(
            &src.path,
            None,
            "internal error (a loader bug) while loading this spec",
        ))
    })
}

/// Turns config entries into spec files: a folder entry holds every spec file below it.
pub fn expand_sources(config: &CatalogConfig, problems: &mut Vec<Problem>) -> Vec<SpecSource> {
    let mut out: Vec<SpecSource> = Vec::new();
    for (i, api) in config.apis.iter().enumerate() {
        if api.mcp.is_some() {
            continue;
        }
        if api.spec.is_dir() {
            let mut files = Vec::new();
            walk(&api.spec, &mut files, 0);
            files.sort();
            for f in files {
                if is_enriched(&f) {
                    continue;
                }
                let id = stem_id(&f);
                out.push(source_for(id, f, i));
            }
        } else if api.spec.exists() {
            let id = api.id.clone().unwrap_or_else(|| stem_id(&api.spec));
            out.push(source_for(id, api.spec.clone(), i));
        } else {
            problems.push(Problem::error(&api.spec, None, "no such file or folder"));
        }
    }
    unique_ids(config, out, problems)
}

/// The tools of every MCP server entry, from its listing. A server whose id a spec already
/// took, or that could not be listed, is reported and left out; the rest still load.
fn add_mcp_servers(
    config: &CatalogConfig,
    listings: &mcp_tools::Listings,
    apis: &mut Vec<Api>,
    endpoints: &mut Vec<Endpoint>,
    problems: &mut Vec<Problem>,
) {
    for (i, entry) in config.apis.iter().enumerate() {
        let (Some(source), Some(id)) = (&entry.mcp, entry.id.as_deref()) else {
            continue;
        };
        let file = mcp_tools::problem_file(id);
        if apis.iter().any(|a| a.id == id) {
            problems.push(Problem::error(
                &file,
                None,
                format!(
                    "id '{id}' ([[api]] #{}) is already an API's id: give each entry its own `id`",
                    i + 1
                ),
            ));
            continue;
        }
        match listings.get(&mcp_tools::listing_key(id, source)) {
            Some(Ok(listing)) => {
                let serving = mcp_tools::Serving {
                    source,
                    read_only: entry.read_only,
                };
                let (api, mut eps) = mcp_tools::endpoints(id, serving, listing, i, problems);
                if let Some(dir) = &config.data_dir {
                    mcp_texts::lay_over(dir, &api, &mut eps, problems);
                }
                apis.push(api);
                endpoints.append(&mut eps);
            }
            Some(Err(e)) => problems.push(Problem::error(
                &file,
                None,
                format!("MCP server `{}`: {e}", source.describe()),
            )),
            None => problems.push(Problem::error(
                &file,
                None,
                format!(
                    "MCP server `{}` is not listed yet: a server added to (or changed in) \
                     the config of a running shortlist is started within seconds",
                    source.describe()
                ),
            )),
        }
    }
    warn_of_shadowing(endpoints, problems);
}

/// A tool whose description names another server's tool is said: that is how a poisoned
/// tool redirects calls meant for a trusted one (`tool_scan`).
fn warn_of_shadowing(endpoints: &[Endpoint], problems: &mut Vec<Problem>) {
    let tools: Vec<(&str, &str)> = endpoints
        .iter()
        .filter_map(|e| Some((e.api.as_str(), e.mcp.as_ref()?.name.as_str())))
        .collect();
    for ep in endpoints.iter().filter(|e| e.mcp.is_some()) {
        let Some(d) = ep.description.as_deref() else {
            continue;
        };
        let others = tools
            .iter()
            .filter(|(server, _)| *server != ep.api)
            .map(|(_, name)| *name);
        let named = tool_scan::shadowing(d, others);
        if !named.is_empty() {
            problems.push(Problem::warning(
                &mcp_tools::problem_file(&ep.api),
                None,
                format!(
                    "tool '{}' names another server's tool ({}) in its description: read it \
                     before serving it",
                    ep.key(),
                    named.join(", ")
                ),
            ));
        }
    }
}

/// Makes every API id name one spec. An id keys more than a name: a person's stored
/// upstream token, the audit log, the console's reviews and the tool names all follow it.
///
/// - Across entries where one carries a rule (`visible_to`, `auth`, `read_only`, a base
///   URL ...), an id is ambiguous: whose rule applies, and whose stored tokens the id's
///   calls carry, would depend on the order files are found in (a file dropped into a
///   folder could take another entry's id at the next reload). Every spec claiming it is
///   refused, with an error naming each, until the config gives each entry its own `id`.
/// - Within one entry (a folder holding two files of the same stem), and across entries
///   that carry no rule at all (plain spec paths on a command line), later files get
///   `-2`, `-3`, ... (skipping ids already taken): the settings are alike, so the name
///   decides nothing.
fn unique_ids(
    config: &CatalogConfig,
    out: Vec<SpecSource>,
    problems: &mut Vec<Problem>,
) -> Vec<SpecSource> {
    use std::collections::{BTreeMap, BTreeSet, HashSet};
    let ruled = |i: usize| config.apis.get(i).is_some_and(ApiConfig::has_rules);
    let mut claims: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for s in &out {
        claims.entry(&s.id).or_default().insert(s.config_index);
    }
    let ambiguous: HashSet<String> = claims
        .into_iter()
        .filter(|(_, entries)| entries.len() > 1 && entries.iter().any(|&i| ruled(i)))
        .map(|(id, _)| id.to_string())
        .collect();
    let (refused, mut kept): (Vec<SpecSource>, Vec<SpecSource>) =
        out.into_iter().partition(|s| ambiguous.contains(&s.id));
    for s in &refused {
        let others: Vec<String> = refused
            .iter()
            .filter(|o| o.id == s.id && o.config_index != s.config_index)
            .map(|o| format!("{} ([[api]] #{})", o.original.display(), o.config_index + 1))
            .collect();
        let declared = config
            .apis
            .get(s.config_index)
            .is_some_and(|c| c.id.is_some());
        problems.push(Problem::error(
            &s.original,
            None,
            format!(
                "API id '{}' ([[api]] #{}, {}) is also claimed by {}: which entry's \
                 visible_to, read_only and auth apply would be ambiguous, so none of them is \
                 served; give each entry its own `id`",
                s.id,
                s.config_index + 1,
                if declared {
                    "declared"
                } else {
                    "from the file name"
                },
                others.join(", ")
            ),
        ));
    }
    let mut taken: HashSet<String> = kept.iter().map(|s| s.id.clone()).collect();
    let mut seen = HashSet::new();
    for s in &mut kept {
        if seen.insert(s.id.clone()) {
            continue;
        }
        let mut k = 2;
        while taken.contains(&format!("{}-{k}", s.id)) {
            k += 1;
        }
        s.id = format!("{}-{k}", s.id);
        taken.insert(s.id.clone());
        seen.insert(s.id.clone());
    }
    kept
}

fn source_for(id: String, original: PathBuf, config_index: usize) -> SpecSource {
    let enriched = enriched_path(&original);
    let path = if enriched.is_file() {
        enriched
    } else {
        original.clone()
    };
    SpecSource {
        id,
        path,
        original,
        config_index,
    }
}

/// The enriched copy's path: `dir/name.enriched.ext`.
pub fn enriched_path(original: &Path) -> PathBuf {
    let stem = original
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("spec");
    let ext = original
        .extension()
        .and_then(|s| s.to_str())
        .unwrap_or("json");
    original.with_file_name(format!("{stem}{ENRICHED_INFIX}.{ext}"))
}

/// Whether `p` is an enriched copy (`name.enriched.ext`), which the loader reads in place
/// of its original rather than as a spec of its own.
pub fn is_enriched(p: &Path) -> bool {
    p.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.ends_with(ENRICHED_INFIX))
}

/// A spec's id: its file stem.
pub fn stem_id(p: &Path) -> String {
    p.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("api")
        .to_string()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(&p, out, depth + 1);
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| SPEC_EXTENSIONS.contains(&x.to_ascii_lowercase().as_str()))
        {
            out.push(p);
        }
    }
}
