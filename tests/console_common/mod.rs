//! What the console tests share: a small catalog of real specs (from the corpus, plus the
//! TMDB-shaped fixture and one broken file), enriched by the real `shortlist enrich` with
//! the offline heuristic, and the real `shortlist console` / `serve --http` process on
//! 127.0.0.1.
#![allow(dead_code)]

use crate::server_common::child_server;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Specs of the fixture catalog: two Swagger 2.0 and one OpenAPI 3.0 YAML spec from the
/// corpus, and the TMDB-shaped JSON spec the server tests use.
const CORPUS: [&str; 3] = [
    "xkcd.com_1.0.0.yaml",
    "1forge.com_0.0.1.yaml",
    "quarantine.country_1.0.yaml",
];

/// A spec that cannot load: the health page must name it.
pub const BROKEN: &str = "broken.json";

/// The catalog in a temporary folder.
pub struct Catalog {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Catalog {
    /// Copies the specs, writes the config and enriches the copies with the heuristic.
    pub fn enriched() -> Catalog {
        require_model();
        let dir = tempfile::tempdir().expect("temp dir");
        let specs = dir.path().join("specs");
        std::fs::create_dir_all(&specs).expect("specs dir");
        for name in CORPUS {
            std::fs::copy(
                repo().join("tests/fixtures/corpus").join(name),
                specs.join(name),
            )
            .expect("copy corpus spec");
        }
        std::fs::copy(
            repo().join("tests/fixtures/upstream_tmdb.json"),
            specs.join("tmdb.json"),
        )
        .expect("copy tmdb spec");
        std::fs::write(
            specs.join(BROKEN),
            "{\"openapi\": \"3.0.0\", \"info\": {\"title\": \"Broken\"}, \"paths\": {\"/x\": ",
        )
        .expect("write broken spec");
        let config = dir.path().join("catalog.toml");
        std::fs::write(
            &config,
            format!(
                "data_dir = {:?}\n\n[[api]]\nspec = {:?}\n",
                dir.path().join("index"),
                specs
            ),
        )
        .expect("write config");
        let cat = Catalog { dir, config };
        cat.enrich();
        cat
    }

    /// Runs `shortlist enrich` (heuristic, offline) over the catalog, as a user would, and
    /// returns what it said on stderr.
    pub fn enrich(&self) -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_shortlist"))
            .args(["enrich", "--llm-url", "none", "-c"])
            .arg(&self.config)
            .env_remove("SHORTLIST_LLM_URL")
            .env_remove("SHORTLIST_LLM_MODEL")
            .env_remove("SHORTLIST_DATA_DIR")
            .stdin(Stdio::null())
            .output()
            .expect("run shortlist enrich");
        // The broken spec makes the run report an error; every other spec is enriched.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("wrote") || stderr.contains("enriched"),
            "enrich did not run: {stderr}"
        );
        assert!(
            self.spec("xkcd.com_1.0.0.enriched.yaml").is_file(),
            "{stderr}"
        );
        stderr.into_owned()
    }

    pub fn spec(&self, name: &str) -> PathBuf {
        self.dir.path().join("specs").join(name)
    }
}

/// The embedding model the console needs; fails with the fix when it is missing.
pub fn require_model() {
    let cfg = shortlist::index::EmbedderConfig::locate();
    assert!(
        cfg.model_dir.join("model.onnx").is_file() && cfg.ort_library.is_file(),
        "embedding model or ONNX Runtime missing ({}): run ./scripts/setup-models.sh",
        cfg.model_dir.display()
    );
}

/// A running `shortlist` HTTP process.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// Its stderr up to the line saying where it listens.
    pub startup: String,
    /// Its stderr since.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// `shortlist console -c CONFIG --http 127.0.0.1:0 EXTRA...`.
    pub async fn console(cat: &Catalog, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut args = vec!["console".to_string(), "-c".into()];
        args.push(cat.config.display().to_string());
        args.extend(["--http".to_string(), "127.0.0.1:0".to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        Server::start(&args, env).await
    }

    /// `shortlist serve -c CONFIG --http 127.0.0.1:0 EXTRA...`.
    pub async fn serve(cat: &Catalog, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut args = vec!["serve".to_string(), "-c".into()];
        args.push(cat.config.display().to_string());
        args.extend(["--http".to_string(), "127.0.0.1:0".to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        Server::start(&args, env).await
    }

    async fn start(args: &[String], env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shortlist"));
        cmd.args(args).env_remove("SHORTLIST_DATA_DIR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let s = child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(180)).await;
        Server {
            child: s.child,
            port: s.port,
            startup: s.startup,
            log: s.log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything it printed on stderr.
    pub fn log(&self) -> String {
        let since = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        format!("{}{since}", self.startup)
    }
}

/// Reads a spec file as JSON (YAML through the catalog's own reader).
pub fn read_spec(path: &Path) -> serde_json::Value {
    shortlist::catalog::source::read_document(path)
        .unwrap_or_else(|p| panic!("{p}"))
        .value
}
