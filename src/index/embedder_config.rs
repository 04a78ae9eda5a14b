//! Where the embedding model and ONNX Runtime are found and how they run: flags and the
//! catalog config first, then the environment, the per-user data folder and a checkout's
//! `.vendor/`. Resolution takes the environment and process paths as arguments, so the order
//! is tested without touching the process.

use std::path::{Path, PathBuf};

/// The set-up script by its absolute path when the source this binary was built from is
/// still there (a `cargo install --path .` binary runs from anywhere), else by its place in
/// the source.
pub fn setup_script() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-models.sh");
    if script.is_file() {
        script.display().to_string()
    } else {
        "scripts/setup-models.sh (in the shortlist source)".into()
    }
}

/// What to tell a user whose model or runtime is missing: the one command that installs
/// both, and where a path that was given came from.
pub fn fetch_hint(origin: Origin) -> String {
    let run = format!("run {}", setup_script());
    match origin {
        Origin::Given => {
            format!("{run}, or correct --model-dir / --ort-library or the catalog's [model] table")
        }
        Origin::Env(var) => format!("{run}, or correct (or unset) {var}"),
        Origin::UserData | Origin::Checkout | Origin::Missing => run,
    }
}

/// The model every default path points at.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The ONNX Runtime build `setup-models.sh` fetches, as its wheel for this platform names the
/// library; `ort` rc.15 needs 1.24 or newer, and 1.24.4 is the newest one measured not to
/// write into `$HOME/.cache`.
pub const DEFAULT_ORT_LIBRARY: &str = ort_library_file(std::env::consts::OS);

/// The file name of the ONNX Runtime 1.24.4 library on `os` (as `std::env::consts::OS`
/// names it): the macOS wheel's `.dylib` puts the version before the suffix.
pub const fn ort_library_file(os: &str) -> &'static str {
    if matches!(os.as_bytes(), b"macos") {
        "libonnxruntime.1.24.4.dylib"
    } else {
        "libonnxruntime.so.1.24.4"
    }
}

/// How token vectors become one text vector. Must match how the model was trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Pooling {
    /// Attention-masked mean of token vectors (sentence-transformers models such as MiniLM).
    #[default]
    Mean,
    /// The `[CLS]` token vector (BGE-style models).
    Cls,
}

impl std::str::FromStr for Pooling {
    type Err = String;

    fn from_str(s: &str) -> Result<Pooling, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mean" => Ok(Pooling::Mean),
            "cls" => Ok(Pooling::Cls),
            other => Err(format!("unknown pooling '{other}': expected mean or cls")),
        }
    }
}

impl Pooling {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }

    pub(super) fn to_fastembed(self) -> fastembed::Pooling {
        match self {
            Pooling::Mean => fastembed::Pooling::Mean,
            Pooling::Cls => fastembed::Pooling::Cls,
        }
    }
}

/// Model settings given explicitly: by a command-line flag or the catalog config's
/// `[model]` table (the command line merges the two, flags first). Anything left `None` is
/// looked up by [`EmbedderConfig::locate_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelOptions {
    pub model_dir: Option<PathBuf>,
    pub ort_library: Option<PathBuf>,
    pub pooling: Option<Pooling>,
    pub max_tokens: Option<usize>,
    pub threads: Option<usize>,
    /// A model that embeds requests beside the one that embeds documents
    /// ([`EmbedderConfig::query_model_dir`]).
    pub query_model_dir: Option<PathBuf>,
}

/// Where a model or runtime path came from. Errors say it, and `shortlist install` pins
/// the paths a client started from elsewhere would not find by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A flag or the catalog config.
    Given,
    /// This environment variable.
    Env(&'static str),
    /// The per-user data folder.
    UserData,
    /// The `.vendor/` folder of the source checkout the process runs in or from.
    Checkout,
    /// Found nowhere: the path is where `setup-models.sh` would install it.
    Missing,
}

/// Where the model and runtime live and how to run them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// Folder holding `model.onnx`, `tokenizer.json`, `config.json`, `special_tokens_map.json`
    /// and `tokenizer_config.json`.
    pub model_dir: PathBuf,
    /// Where `model_dir` came from.
    pub model_origin: Origin,
    /// The ONNX Runtime shared library (`libonnxruntime.so.*`, `libonnxruntime.*.dylib`).
    pub ort_library: PathBuf,
    /// Where `ort_library` came from.
    pub ort_origin: Origin,
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
    /// Folder of a model trained to embed requests into the document model's space
    /// (`training/train_query.py`), loaded beside it; `None`: the document model embeds
    /// requests too. The index holds only document vectors, so it stays valid whichever
    /// query model is used.
    pub query_model_dir: Option<PathBuf>,
}

/// The model folder and runtime library below a folder laid out as `setup-models.sh`
/// leaves it (the per-user data folder, a checkout's `.vendor/`, `$SHORTLIST_VENDOR`).
fn model_in(root: &Path) -> PathBuf {
    root.join("models").join(DEFAULT_MODEL)
}

fn ort_in(root: &Path) -> PathBuf {
    root.join("onnxruntime").join(DEFAULT_ORT_LIBRARY)
}

impl EmbedderConfig {
    /// The configuration for this process with nothing given explicitly.
    pub fn locate() -> EmbedderConfig {
        Self::locate_with(&ModelOptions::default())
    }

    /// The configuration for this process: `given` first, then the environment, the
    /// per-user data folder and a checkout's `.vendor/` (see [`EmbedderConfig::resolve`]).
    pub fn locate_with(given: &ModelOptions) -> EmbedderConfig {
        let cwd = std::env::current_dir().ok();
        let exe = std::env::current_exe().ok();
        let user = crate::places::user_data_dir();
        Self::resolve(
            given,
            |k| std::env::var_os(k),
            cwd.as_deref(),
            exe.as_deref(),
            user.as_deref(),
        )
    }

    /// Resolution with the environment and process paths passed in, so it can be tested.
    /// Each of the model folder and the runtime library is the first of:
    /// 1. `given` (a flag, else the catalog config);
    /// 2. the environment: `SHORTLIST_MODEL_DIR` / `ORT_DYLIB_PATH`, else below
    ///    `SHORTLIST_VENDOR`;
    /// 3. the per-user data folder `user` (`~/.local/share/shortlist`), if it holds it;
    /// 4. the `.vendor/` folder of a source checkout (a folder with `Cargo.toml` and
    ///    `.vendor/`) that `cwd` or the executable is in, if it holds it;
    /// 5. else the per-user data folder, where `setup-models.sh` puts it.
    ///
    /// Pooling, token limit and threads: `given`, else `SHORTLIST_POOLING`,
    /// `SHORTLIST_MAX_TOKENS`, `SHORTLIST_EMBED_THREADS`, else mean, 256 and the available
    /// cores capped at 4. Missing files are not an error here: [`Embedder::load`] reports
    /// them with the fix.
    pub fn resolve(
        given: &ModelOptions,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
        cwd: Option<&Path>,
        exe: Option<&Path>,
        user: Option<&Path>,
    ) -> EmbedderConfig {
        let non_empty = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let number = |k: &str| {
            env(k)
                .and_then(|v| v.to_str().and_then(|s| s.trim().parse::<usize>().ok()))
                .filter(|&n| n > 0)
        };
        let vendor = non_empty("SHORTLIST_VENDOR");
        let checkout = cwd
            .and_then(find_checkout_vendor)
            .or_else(|| exe.and_then(find_checkout_vendor));
        // The installed default, else the checkout's copy, else where it will be installed.
        let fallback = |place: fn(&Path) -> PathBuf, present: fn(&Path) -> bool| {
            let user_path = user.map(place);
            if let Some(p) = user_path.as_ref().filter(|p| present(p)) {
                return (p.clone(), Origin::UserData);
            }
            if let Some(p) = checkout.as_deref().map(place).filter(|p| present(p)) {
                return (p, Origin::Checkout);
            }
            let missing = user_path
                .or_else(|| checkout.as_deref().map(place))
                .unwrap_or_else(|| place(&cwd.unwrap_or(Path::new(".")).join(".vendor")));
            (missing, Origin::Missing)
        };
        let (model_dir, model_origin) = match (&given.model_dir, non_empty("SHORTLIST_MODEL_DIR")) {
            (Some(d), _) => (d.clone(), Origin::Given),
            (None, Some(d)) => (d, Origin::Env("SHORTLIST_MODEL_DIR")),
            (None, None) => match &vendor {
                Some(v) => (model_in(v), Origin::Env("SHORTLIST_VENDOR")),
                None => fallback(model_in, |p| p.join("model.onnx").is_file()),
            },
        };
        let (ort_library, ort_origin) = match (&given.ort_library, non_empty("ORT_DYLIB_PATH")) {
            (Some(f), _) => (f.clone(), Origin::Given),
            (None, Some(f)) => (f, Origin::Env("ORT_DYLIB_PATH")),
            (None, None) => match &vendor {
                Some(v) => (ort_in(v), Origin::Env("SHORTLIST_VENDOR")),
                None => fallback(ort_in, |p| p.is_file()),
            },
        };
        let threads = given
            .threads
            .filter(|&n| n > 0)
            .or_else(|| number("SHORTLIST_EMBED_THREADS"))
            .unwrap_or_else(default_threads);
        let model_id = model_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_MODEL.to_string());
        // Any BERT-style model can be used; BGE-style models want CLS pooling.
        let pooling = given.pooling.unwrap_or_else(|| {
            env("SHORTLIST_POOLING")
                .and_then(|v| v.into_string().ok())
                .and_then(|p| p.parse().ok())
                .unwrap_or_default()
        });
        let max_length = given
            .max_tokens
            .filter(|&n| n > 0)
            .or_else(|| number("SHORTLIST_MAX_TOKENS"))
            .unwrap_or(256);
        let query_model_dir = given
            .query_model_dir
            .clone()
            .or_else(|| non_empty("SHORTLIST_QUERY_MODEL_DIR"));
        EmbedderConfig {
            model_dir,
            model_origin,
            ort_library,
            ort_origin,
            pooling,
            max_length,
            model_id,
            threads,
            query_model_dir,
        }
    }
}

/// The `.vendor/` folder of the nearest source checkout around `start` (itself included):
/// an ancestor holding both `Cargo.toml` and `.vendor/`.
fn find_checkout_vendor(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join(".vendor").is_dir())
        .map(|d| d.join(".vendor"))
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    #[test]
    fn the_default_runtime_library_is_the_one_setup_models_installs_on_each_platform() {
        let script = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup-models.sh"),
        )
        .unwrap();
        // Rows of `ort_rows`: "Linux-x86_64 TAG LIBRARY SHA256".
        let rows: Vec<(&str, &str)> = script
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"')?.strip_suffix('"'))
            .filter_map(|r| {
                let f: Vec<&str> = r.split(' ').collect();
                (f.len() == 4 && f[2].starts_with("libonnxruntime")).then(|| (f[0], f[2]))
            })
            .collect();
        let platforms: Vec<&str> = rows.iter().map(|r| r.0).collect();
        assert_eq!(platforms, ["Linux-x86_64", "Linux-aarch64", "Darwin-arm64"]);
        for (platform, library) in rows {
            let os = if platform.starts_with("Darwin") {
                "macos"
            } else {
                "linux"
            };
            assert_eq!(ort_library_file(os), library, "{platform}");
        }
        assert_eq!(DEFAULT_ORT_LIBRARY, ort_library_file(std::env::consts::OS));
        assert!(ort_library_file("macos").ends_with(".dylib"));
    }

    /// Lays out `root` as `setup-models.sh` does (empty files: only presence matters here).
    fn install_at(root: &Path) {
        std::fs::create_dir_all(model_in(root)).unwrap();
        std::fs::write(model_in(root).join("model.onnx"), b"").unwrap();
        std::fs::create_dir_all(ort_in(root).parent().unwrap()).unwrap();
        std::fs::write(ort_in(root), b"").unwrap();
    }

    #[test]
    fn resolve_order_is_given_env_user_folder_checkout() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        std::fs::write(repo.join("Cargo.toml"), "").unwrap();
        install_at(&repo.join(".vendor"));
        let user = tmp.path().join("data/shortlist");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let none = |_: &str| None::<OsString>;
        let no_opts = ModelOptions::default();

        // Nothing installed for the user: a checkout's .vendor, found from cwd or the binary.
        let c = EmbedderConfig::resolve(&no_opts, none, Some(&repo.join("a/b")), None, Some(&user));
        assert_eq!(c.model_dir, model_in(&repo.join(".vendor")));
        assert_eq!(c.ort_library, ort_in(&repo.join(".vendor")));
        assert_eq!(
            (c.model_origin, c.ort_origin),
            (Origin::Checkout, Origin::Checkout)
        );
        assert_eq!(c.model_id, DEFAULT_MODEL);
        assert_eq!((c.pooling, c.max_length), (Pooling::Mean, 256));
        let exe = repo.join("target/release/shortlist");
        let c = EmbedderConfig::resolve(&no_opts, none, Some(&elsewhere), Some(&exe), Some(&user));
        assert_eq!(c.model_origin, Origin::Checkout);

        // A .vendor folder that is not in a checkout does not count.
        install_at(&elsewhere.join(".vendor"));
        let c = EmbedderConfig::resolve(&no_opts, none, Some(&elsewhere), None, Some(&user));
        assert_eq!(
            (c.model_dir.clone(), c.model_origin),
            (model_in(&user), Origin::Missing)
        );
        assert_eq!(
            (c.ort_library, c.ort_origin),
            (ort_in(&user), Origin::Missing)
        );

        // Installed for the user: preferred over the checkout.
        install_at(&user);
        let c = EmbedderConfig::resolve(&no_opts, none, Some(&repo), None, Some(&user));
        assert_eq!(
            (c.model_dir, c.model_origin),
            (model_in(&user), Origin::UserData)
        );
        assert_eq!(c.ort_origin, Origin::UserData);

        // The environment beats the user folder; given options beat the environment.
        let vars: HashMap<&str, OsString> = [
            ("SHORTLIST_VENDOR", OsString::from("/v")),
            ("SHORTLIST_MODEL_DIR", OsString::from("/m/bge-small")),
            ("SHORTLIST_EMBED_THREADS", OsString::from("3")),
            ("SHORTLIST_POOLING", OsString::from("CLS")),
            ("SHORTLIST_MAX_TOKENS", OsString::from("128")),
        ]
        .into();
        let env = |k: &str| vars.get(k).cloned();
        let c = EmbedderConfig::resolve(&no_opts, env, Some(&repo), None, Some(&user));
        assert_eq!(c.model_dir, PathBuf::from("/m/bge-small"));
        assert_eq!(c.model_origin, Origin::Env("SHORTLIST_MODEL_DIR"));
        assert_eq!(c.model_id, "bge-small");
        assert_eq!(c.ort_library, ort_in(Path::new("/v")));
        assert_eq!(c.ort_origin, Origin::Env("SHORTLIST_VENDOR"));
        assert_eq!((c.threads, c.pooling, c.max_length), (3, Pooling::Cls, 128));
        let given = ModelOptions {
            model_dir: Some("/given/e5".into()),
            ort_library: Some("/given/libonnxruntime.so".into()),
            pooling: Some(Pooling::Mean),
            max_tokens: Some(64),
            threads: Some(2),
            query_model_dir: None,
        };
        let c = EmbedderConfig::resolve(&given, env, Some(&repo), None, Some(&user));
        assert_eq!(c.model_dir, PathBuf::from("/given/e5"));
        assert_eq!(c.ort_library, PathBuf::from("/given/libonnxruntime.so"));
        assert_eq!(
            (c.model_origin, c.ort_origin),
            (Origin::Given, Origin::Given)
        );
        assert_eq!((c.threads, c.pooling, c.max_length), (2, Pooling::Mean, 64));
    }
}
