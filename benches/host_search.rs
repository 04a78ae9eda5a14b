//! What a host's own tool search finds when the server exposes its whole catalog, and what
//! each exposure costs a client: `cargo bench --bench host_search`.
//!
//! Hosts such as Claude Code, or the Anthropic and OpenAI APIs with deferred tool
//! definitions, run their own search over the tools a server lists. The catalog exposure
//! leaves the choice to that search, so its recall is the recall a client gets. A host's
//! search ranks tools by BM25 over each tool's name and description as the server sends
//! them, so this benchmark builds, for every endpoint of each development-suite dataset, the
//! text `name + " " + description` of [`endpoint_tool`] and ranks every query with Okapi
//! BM25 (k1 1.2, b 0.75, idf `ln(1 + (N - df + 0.5) / (df + 0.5))`) three ways:
//!
//! - **plain**: lower-cased alphanumeric words, camelCase and snake_case split
//!   ([`shortlist::text::split_identifier`]), no stop words, no stemming: what a generic
//!   host search does;
//! - **product tokenizer**: the product's [`Bm25`] with the same k1 and b, whose tokenizer
//!   also drops stop words and folds plurals: what a host with a better tokenizer could do;
//! - **plain with arguments**: the plain search over the name, the description and each
//!   argument's name and description (the input schema's properties), as some hosts index.
//!
//! Each is measured on the specs as they are and after `shortlist enrich --llm none` (the
//! heuristic enricher, run by the real binary on a copy of `datasets/`), R@5 and R@10 per
//! dataset and their macro-average, the suite's definitions ([`metrics::score_query`]).
//! Only tools that share a word with the query are ranked, as a search returns them.
//!
//! Then the cl100k tokens of each exposure at about 2,000 endpoints: toolbench-dev's specs
//! and then socbench-dev's, whole specs in file-name order until 2,000 endpoints (the
//! catalog of `cargo bench --bench mcp_server -- --scale`):
//!
//! - `meta`: the three meta-tool definitions;
//! - `dynamic`: the meta-tools that expose, plus 20 endpoint tools (the cap), 20 endpoints
//!   evenly spaced through the catalog (positions `i * n / 20`);
//! - `catalog`: the meta-tools plus every endpoint tool;
//!
//! each list as compact JSON of the tool objects (what `tools/list` carries, summed over its
//! pages), and one `find_tools` answer of k = 5 in each exposure's wording, the mean over the
//! first 40 toolbench-dev queries with the five best tools of the plain BM25 above.
//!
//! Figures go to stdout as Markdown; `docs/results.md` ("What a host's tool search finds,
//! and what each exposure costs") records a run.

use shortlist::catalog::{Catalog, Endpoint};
use shortlist::eval::gold;
use shortlist::eval::metrics::{self, QueryMetrics};
use shortlist::eval::suite::Suite;
use shortlist::eval::Setting;
use shortlist::index::lexical::{Bm25, Bm25Params};
use shortlist::server::tools::endpoint_tool;
use shortlist::server::{discovery, meta_tools, tokens, Exposure};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// BM25 saturation and length normalisation of the host's search.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Cut-offs reported.
const KS: [usize; 2] = [5, 10];
/// The catalog size of the token table.
const SCALE: usize = 2000;
/// The endpoint tools a dynamic client holds at most (the server's `--max-tools` default).
const MAX_TOOLS: usize = 20;
/// Hits of one `find_tools` answer.
const FIND_K: usize = 5;
/// Queries whose answers are counted.
const ANSWER_QUERIES: usize = 40;
/// The specs the suite reads, copied before enriching them.
const DATASET_PARTS: [&str; 4] = ["suite.toml", "restbench", "toolbench-dev", "socbench-dev"];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let datasets = root.join("datasets");
    let work = tempfile::tempdir().expect("temp dir");
    let copy = work.path().join("datasets");
    for part in DATASET_PARTS {
        copy_tree(&datasets.join(part), &copy.join(part));
    }
    let started = Instant::now();
    enrich(
        &[
            copy.join("restbench/spotify_oas.json"),
            copy.join("restbench/tmdb_oas.json"),
            copy.join("toolbench-dev/specs"),
            copy.join("socbench-dev/specs"),
        ],
        &work.path().join("data"),
    );
    eprintln!(
        "heuristic enrichment of the suite's specs: {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let before = Suite::load(&datasets.join("suite.toml")).expect("suite");
    let after = Suite::load(&copy.join("suite.toml")).expect("enriched suite");
    recall_table(&before, &after);
    token_table(&datasets, &copy);
}

/// One ranking of a host's search: BM25 over the tool texts, matching tools only.
trait Search {
    fn rank(&self, query: &str) -> Vec<usize>;
}

/// The product's BM25 with the host's k1 and b.
struct ProductBm25(Bm25);

impl Search for ProductBm25 {
    fn rank(&self, query: &str) -> Vec<usize> {
        positive_ranking(self.0.scores(query))
    }
}

/// Okapi BM25 with a plain tokenizer: every lower-cased word, identifiers split.
struct PlainBm25 {
    postings: HashMap<String, Vec<(usize, f32)>>,
    doc_len: Vec<f32>,
    avg_len: f32,
}

fn plain_tokens(text: &str) -> Vec<String> {
    shortlist::text::split_identifier(text)
}

impl PlainBm25 {
    fn build(texts: &[String]) -> PlainBm25 {
        let mut postings: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(texts.len());
        for (doc, text) in texts.iter().enumerate() {
            let words = plain_tokens(text);
            doc_len.push(words.len() as f32);
            let mut tf: HashMap<String, f32> = HashMap::new();
            for w in words {
                *tf.entry(w).or_default() += 1.0;
            }
            for (w, f) in tf {
                postings.entry(w).or_default().push((doc, f));
            }
        }
        let avg_len = doc_len.iter().sum::<f32>() / doc_len.len().max(1) as f32;
        PlainBm25 {
            postings,
            doc_len,
            avg_len,
        }
    }
}

impl PlainBm25 {
    /// One score per tool, in catalog order.
    fn scores(&self, query: &str) -> Vec<f32> {
        let n = self.doc_len.len() as f32;
        let mut scores = vec![0.0f32; self.doc_len.len()];
        for w in plain_tokens(query) {
            let Some(list) = self.postings.get(&w) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5)).ln_1p();
            for &(doc, tf) in list {
                let norm = 1.0 - B + B * self.doc_len[doc] / self.avg_len.max(f32::EPSILON);
                scores[doc] += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        scores
    }
}

impl Search for PlainBm25 {
    fn rank(&self, query: &str) -> Vec<usize> {
        positive_ranking(self.scores(query))
    }
}

/// Documents with a positive score, best first; ties by catalog order.
fn positive_ranking(scores: Vec<f32>) -> Vec<usize> {
    let mut hits: Vec<(usize, f32)> = scores
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s > 0.0)
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.into_iter().map(|(i, _)| i).collect()
}

/// What a host's search reads of a tool: its name and description as the server sends them.
fn tool_text(ep: &Endpoint) -> String {
    let t = endpoint_tool(ep);
    format!("{} {}", t.name, t.description.as_deref().unwrap_or(""))
}

/// The same with each argument's name and description from the input schema, which some
/// hosts' searches also read (and where the enricher writes most of its text).
fn tool_text_with_arguments(ep: &Endpoint) -> String {
    let t = endpoint_tool(ep);
    let mut text = format!("{} {}", t.name, t.description.as_deref().unwrap_or(""));
    if let Some(props) = t.input_schema.get("properties").and_then(|p| p.as_object()) {
        for (name, schema) in props {
            text.push(' ');
            text.push_str(name);
            if let Some(d) = schema.get("description").and_then(|d| d.as_str()) {
                text.push(' ');
                text.push_str(d);
            }
        }
    }
    text
}

/// One dataset measured: the largest index, every tool text searched, and the per-query
/// metrics of each search (plain, product, plain with the arguments).
struct Measured {
    endpoints: usize,
    texts: Vec<String>,
    per_query: [Vec<QueryMetrics>; 3],
}

fn measure(settings: &[Setting]) -> Measured {
    let mut out: [Vec<QueryMetrics>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut endpoints = 0;
    let mut all_texts = Vec::new();
    for s in settings {
        let catalog = Catalog::load_paths(&s.specs);
        let errors: Vec<String> = catalog.errors().map(ToString::to_string).collect();
        assert!(errors.is_empty(), "{}: {}", s.name, errors.join("; "));
        endpoints = endpoints.max(catalog.endpoints.len());
        let texts: Vec<String> = catalog.endpoints.iter().map(tool_text).collect();
        let with_arguments: Vec<String> = catalog
            .endpoints
            .iter()
            .map(tool_text_with_arguments)
            .collect();
        let searches: [Box<dyn Search>; 3] = [
            Box::new(PlainBm25::build(&texts)),
            Box::new(ProductBm25(Bm25::with_params(
                &texts,
                Bm25Params { k1: K1, b: B },
            ))),
            Box::new(PlainBm25::build(&with_arguments)),
        ];
        for qf in &s.queries {
            let mut raw = gold::read_queries(&qf.path).expect("queries");
            if let Some(c) = &qf.catalog {
                raw.retain(|q| q.catalog.as_ref() == Some(c));
            }
            let cases = gold::resolve(&qf.path, &raw, &catalog.endpoints, qf.bound_api.as_deref())
                .expect("gold endpoints");
            for case in cases {
                for (search, m) in searches.iter().zip(out.iter_mut()) {
                    m.push(metrics::score_query(
                        &search.rank(&case.query),
                        &case.gold,
                        &KS,
                    ));
                }
            }
        }
        all_texts.extend(texts);
    }
    Measured {
        endpoints,
        texts: all_texts,
        per_query: out,
    }
}

/// R@5 and R@10 in percent of a list of per-query metrics.
fn recalls(per_query: &[QueryMetrics]) -> [f64; 2] {
    let m = metrics::mean(&per_query.iter().collect::<Vec<_>>());
    [100.0 * m.at[0].recall, 100.0 * m.at[1].recall]
}

fn recall_table(before: &Suite, after: &Suite) {
    println!("Host search (BM25 over tool name + description), R@5 / R@10:\n");
    println!("| dataset | queries | endpoints | tool texts enrichment changed | plain, as is | plain, enriched | product tokenizer, as is | product tokenizer, enriched | plain with arguments, as is | plain with arguments, enriched |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut sums = [[0.0f64; 2]; 6];
    let n = before.datasets.len();
    for (b, a) in before.datasets.iter().zip(&after.datasets) {
        assert_eq!(b.name, a.name, "the enriched suite lists the same datasets");
        let mb = measure(&b.settings);
        let ma = measure(&a.settings);
        let changed = mb
            .texts
            .iter()
            .zip(&ma.texts)
            .filter(|(x, y)| x != y)
            .count();
        let [plain_b, product_b, args_b] = &mb.per_query;
        let [plain_a, product_a, args_a] = &ma.per_query;
        let cells: Vec<[f64; 2]> = [plain_b, plain_a, product_b, product_a, args_b, args_a]
            .into_iter()
            .map(|m| recalls(m))
            .collect();
        for (sum, c) in sums.iter_mut().zip(&cells) {
            sum[0] += c[0];
            sum[1] += c[1];
        }
        let shown: Vec<String> = cells
            .iter()
            .map(|c| format!("{:.1} / {:.1}", c[0], c[1]))
            .collect();
        println!(
            "| {} | {} | {} | {changed} of {} | {} |",
            b.name,
            plain_b.len(),
            mb.endpoints,
            mb.texts.len(),
            shown.join(" | ")
        );
    }
    let shown: Vec<String> = sums
        .iter()
        .map(|s| format!("{:.1} / {:.1}", s[0] / n as f64, s[1] / n as f64))
        .collect();
    println!("| macro-average | | | | {} |\n", shown.join(" | "));
}

/// The specs of the token table: toolbench-dev, then socbench-dev, whole specs in file-name
/// order until [`SCALE`] endpoints; with the number of endpoints.
fn scale_specs(datasets: &Path) -> (Vec<PathBuf>, usize) {
    let mut picked = Vec::new();
    let mut total = 0;
    'pick: for set in ["toolbench-dev", "socbench-dev"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(datasets.join(set).join("specs"))
            .expect("dev specs")
            .flatten()
            .map(|e| e.path())
            .filter(|p| !shortlist::catalog::is_enriched(p))
            .collect();
        files.sort();
        for f in files {
            if total >= SCALE {
                break 'pick;
            }
            total += Catalog::load_paths(std::slice::from_ref(&f))
                .endpoints
                .len();
            picked.push(f);
        }
    }
    (picked, total)
}

fn count(v: &impl serde::Serialize) -> usize {
    let value = serde_json::to_value(v).expect("JSON");
    tokens::count_json(&value).expect("cl100k tokenizer")
}

fn token_table(datasets: &Path, enriched: &Path) {
    let (specs, _) = scale_specs(datasets);
    let catalog = Catalog::load_paths(&specs);
    let eps = &catalog.endpoints;
    let n = eps.len();
    let apis: std::collections::BTreeSet<&str> = eps.iter().map(|e| e.api.as_str()).collect();
    let tools: Vec<_> = eps.iter().map(endpoint_tool).collect();
    // The same specs after the heuristic enricher (the copies beside the benchmark's copy).
    let specs_after: Vec<PathBuf> = specs
        .iter()
        .map(|p| enriched.join(p.strip_prefix(datasets).expect("under datasets/")))
        .collect();
    let catalog_after = Catalog::load_paths(&specs_after);
    let tools_after: Vec<_> = catalog_after.endpoints.iter().map(endpoint_tool).collect();

    let meta = count(&meta_tools::definitions(50, false));
    let meta_dynamic = count(&meta_tools::definitions(MAX_TOOLS, true));
    let sample: Vec<_> = (0..MAX_TOOLS)
        .map(|i| tools[i * n / MAX_TOOLS].clone())
        .collect();
    let sample_t = count(&sample);
    let all_t = count(&tools);
    let all_after_t = count(&tools_after);

    // find_tools answers: the five best tools of the plain search for each query.
    let texts: Vec<String> = eps.iter().map(tool_text).collect();
    let search = PlainBm25::build(&texts);
    let queries = gold::read_queries(&datasets.join("toolbench-dev/queries.jsonl")).expect("q");
    let mut answers = [0usize; 3];
    let asked = queries.len().min(ANSWER_QUERIES);
    for q in queries.iter().take(asked) {
        let scores = search.scores(&q.query);
        let best = scores.iter().copied().fold(f32::EPSILON, f32::max);
        let top: Vec<usize> = positive_ranking(scores.clone())
            .into_iter()
            .take(FIND_K)
            .collect();
        for (i, exposure) in [Exposure::Meta, Exposure::Dynamic, Exposure::Catalog]
            .into_iter()
            .enumerate()
        {
            // Scores scaled to the best one, as the product's are (1.0 for the best).
            let hits = top
                .iter()
                .map(|&p| discovery::hit(&eps[p], Some(scores[p] / best)))
                .collect();
            let note = discovery::note(exposure);
            let exposed = exposure == Exposure::Dynamic;
            // Every suite request has an answer in its catalog: counted as matched.
            let answer = discovery::find_result(&q.query, hits, exposed, true, note);
            answers[i] += count(&answer);
        }
    }
    let answer = |i: usize| answers[i] as f64 / asked.max(1) as f64;

    println!(
        "Tokens (cl100k) at {n} endpoints of {} APIs ({} toolbench-dev and socbench-dev specs):\n",
        apis.len(),
        specs.len()
    );
    println!("| exposure | tool list | of which endpoint tools | find_tools answer, k = 5 (mean of {asked}) |");
    println!("|---|---|---|---|");
    println!("| meta | {meta} | 0 | {:.0} |", answer(0));
    println!(
        "| dynamic (20 tools held) | {} | {sample_t} | {:.0} |",
        meta_dynamic + sample_t,
        answer(1)
    );
    println!(
        "| catalog | {} | {all_t} | {:.0} |",
        meta + all_t,
        answer(2)
    );
    println!(
        "| catalog, heuristically enriched specs | {} | {all_after_t} | |",
        meta + all_after_t
    );
    println!(
        "\nEndpoint tool: {:.0} tokens on average ({:.0} after enrichment); the 20 sampled: {:.0}.",
        all_t as f64 / n.max(1) as f64,
        all_after_t as f64 / tools_after.len().max(1) as f64,
        sample_t as f64 / MAX_TOOLS as f64
    );
}

/// `shortlist enrich --llm none` over `specs`, as a user runs it.
fn enrich(specs: &[PathBuf], data: &Path) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shortlist"));
    for var in [
        "SHORTLIST_LLM_URL",
        "SHORTLIST_LLM_MODEL",
        "SHORTLIST_LLM_API_KEY",
        "SHORTLIST_DATA_DIR",
        "RUST_LOG",
    ] {
        c.env_remove(var);
    }
    let out = c
        .args(["enrich", "--llm", "none", "--data-dir"])
        .arg(data)
        .args(specs)
        .stdin(Stdio::null())
        .output()
        .expect("run shortlist enrich");
    assert!(
        out.status.success(),
        "shortlist enrich failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies a file or a folder (recursively).
fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read dir").flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::copy(from, to).expect("copy");
    }
}
