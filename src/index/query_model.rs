//! A query model beside the document model.
//!
//! The index holds vectors of the document model. A model trained only on the request side
//! (`training/train_query.py`: the document vectors stay those of the shipped model) maps
//! requests into that same space, so it improves ranking without re-embedding any index.
//! When one is configured ([`EmbedderConfig::query_model_dir`]), [`Embedder`] loads it
//! beside the document model and ranking embeds requests with it; the model id an index is
//! checked against stays the document model's. When the two are the same folder, or the
//! same files, one model is loaded.

use super::{EmbedError, Embedder, EmbedderConfig};
use std::path::Path;

/// The document model of `config` and, when one is configured and is not the same model,
/// its query model. The query model runs with the document model's runtime and settings,
/// and its vectors must have the document model's length.
pub(super) fn load_with_query_model(config: &EmbedderConfig) -> Result<Embedder, EmbedError> {
    let Some(dir) = config
        .query_model_dir
        .as_ref()
        .filter(|d| !same_folder(d, &config.model_dir))
    else {
        return Embedder::load_one(config);
    };
    let query_config = EmbedderConfig {
        model_dir: dir.clone(),
        model_id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "query-model".into()),
        query_model_dir: None,
        ..config.clone()
    };
    // One after the other, so the two session builds, each allocating about 200 MB at its
    // peak, do not peak together: 100 MB above one model at start (`docs/benchmarks.md`,
    // "A query model beside the document model").
    let mut documents = Embedder::load_one(config)?;
    let query = Embedder::load_one(&query_config)?;
    if query.dim != documents.dim {
        return Err(EmbedError::Model {
            model: query.model_id,
            reason: format!(
                "a query model must embed into the document model's space: its vectors have \
                 {} dimensions, the document model's ({}) {}",
                query.dim, documents.model_id, documents.dim
            ),
        });
    }
    // The same files under another folder: one model serves both sides.
    if digest_of(&query.model_id) != digest_of(&documents.model_id) {
        tracing::info!(model = %query.model_id, "query model loaded beside the document model");
        documents.query = Some(Box::new(query));
    }
    Ok(documents)
}

/// Whether two paths name the same folder.
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The content digest part of a model id (`name@digest/pooling/max_length`).
fn digest_of(model_id: &str) -> &str {
    model_id.split_once('@').map_or(model_id, |(_, rest)| rest)
}

impl Embedder {
    /// Embeds requests: with the query model when one is loaded, else as documents. The
    /// vectors are comparable with the document vectors of the index either way.
    pub fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.query {
            Some(q) => q.embed(texts),
            None => self.embed(texts),
        }
    }

    /// [`Embedder::embed_queries`] of one request.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        match &self.query {
            Some(q) => q.embed_one(text),
            None => self.embed_one(text),
        }
    }

    /// The id of the model that embeds requests, when it is not the document model.
    pub fn query_model_id(&self) -> Option<&str> {
        self.query.as_deref().map(Embedder::model_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_what_follows_the_name() {
        assert_eq!(
            digest_of("all-MiniLM-L6-v2@0123456789ab/mean/256"),
            "0123456789ab/mean/256"
        );
        assert_eq!(
            digest_of("query-model@0123456789ab/mean/256"),
            "0123456789ab/mean/256"
        );
    }

    /// The shipped model named as its own query model, by another path to the same folder
    /// or by a copy of its files, is loaded once; a model of another length is refused.
    #[test]
    fn the_document_model_as_query_model_is_loaded_once() {
        let mut config = EmbedderConfig::locate();
        let tmp = tempfile::tempdir().unwrap();
        config.query_model_dir = Some(config.model_dir.join("."));
        let e = Embedder::load(&config).unwrap();
        assert_eq!(e.query_model_id(), None);
        let copy = tmp.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        for f in super::super::MODEL_FILES {
            std::fs::copy(config.model_dir.join(f), copy.join(f)).unwrap();
        }
        config.query_model_dir = Some(copy.clone());
        let e = Embedder::load(&config).unwrap();
        assert_eq!(e.query_model_id(), None);
        let v = e.embed_query("top rated movies").unwrap();
        assert_eq!(v, e.embed_one("top rated movies").unwrap());

        // Other files (the same network with a doc string appended: protobuf field 6 of
        // ModelProto, so the bytes differ and the vectors do not): two models, and
        // requests go to the second.
        let mut onnx = std::fs::read(copy.join("model.onnx")).unwrap();
        onnx.extend_from_slice(&[0x32, 5]);
        onnx.extend_from_slice(b"query");
        std::fs::write(copy.join("model.onnx"), onnx).unwrap();
        let e = Embedder::load(&config).unwrap();
        let q = e.query_model_id().expect("a second model");
        assert!(q.starts_with("copy@") && q != e.model_id(), "{q}");
        let texts = vec!["top rated movies".to_string()];
        assert_eq!(e.embed_queries(&texts).unwrap(), e.embed(&texts).unwrap());
    }
}
