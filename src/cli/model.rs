//! The embedding-model flags every command that embeds shares. Each flag has a key in the
//! catalog config's `[model]` table and an environment variable; the flag wins over the
//! config, the config over the environment (see `EmbedderConfig::resolve`).

use anyhow::Context;
use clap::Args;
use shortlist::catalog::CatalogConfig;
use shortlist::index::{Embedder, EmbedderConfig, ModelOptions, Pooling};
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Embedding model")]
pub struct ModelArgs {
    /// Model folder (model.onnx and tokenizer files) [config: model.dir; env:
    /// SHORTLIST_MODEL_DIR; default: the per-user data folder, else a source checkout's
    /// .vendor/]
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// ONNX Runtime library [config: model.ort_library; env: ORT_DYLIB_PATH; default: as
    /// the model]
    #[arg(long, value_name = "FILE")]
    pub ort_library: Option<PathBuf>,
    /// How token vectors become one vector, as the model was trained (cls for BGE-style
    /// models) [config: model.pooling; env: SHORTLIST_POOLING; default: mean]
    #[arg(long, value_enum)]
    pub pooling: Option<Pooling>,
    /// Tokens kept per text [config: model.max_tokens; env: SHORTLIST_MAX_TOKENS; default:
    /// 256]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(8..=8192))]
    pub max_tokens: Option<u32>,
    /// ONNX Runtime threads [config: model.threads; env: SHORTLIST_EMBED_THREADS; default:
    /// the cores, at most 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub embed_threads: Option<u16>,
    /// A model that embeds requests beside the document model, whose vectors the index
    /// keeps (trained by training/train_query.py) [config: model.query_dir; env:
    /// SHORTLIST_QUERY_MODEL_DIR; default: the document model embeds requests too]
    #[arg(long, value_name = "DIR")]
    pub query_model_dir: Option<PathBuf>,
}

impl ModelArgs {
    /// The flags merged over the catalog config's `[model]` table.
    pub fn options(&self, cfg: Option<&CatalogConfig>) -> anyhow::Result<ModelOptions> {
        let table = cfg.and_then(|c| c.model.clone()).unwrap_or_default();
        let pooling = match (&self.pooling, &table.pooling) {
            (Some(p), _) => Some(*p),
            (None, Some(p)) => Some(
                p.parse::<Pooling>()
                    .map_err(|e| anyhow::anyhow!("catalog config [model] pooling: {e}"))?,
            ),
            (None, None) => None,
        };
        Ok(ModelOptions {
            model_dir: self.model_dir.clone().or(table.dir),
            ort_library: self.ort_library.clone().or(table.ort_library),
            pooling,
            max_tokens: self.max_tokens.map(|n| n as usize).or(table.max_tokens),
            threads: self.embed_threads.map(usize::from).or(table.threads),
            query_model_dir: self.query_model_dir.clone().or(table.query_dir),
        })
    }

    /// Where the model and runtime are and how to run them, for this catalog.
    pub fn locate(&self, cfg: Option<&CatalogConfig>) -> anyhow::Result<EmbedderConfig> {
        Ok(EmbedderConfig::locate_with(&self.options(cfg)?))
    }

    /// Loads the embedding model, with the fix in the error when it is missing.
    pub fn load(&self, cfg: Option<&CatalogConfig>) -> anyhow::Result<Embedder> {
        let config = self.locate(cfg)?;
        Embedder::load(&config).context("cannot load the embedding model")
    }
}
