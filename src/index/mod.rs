//! The searchable index: doc text, embeddings, vectors, BM25 and their persistence.
//!
//! - [`doc_text`] turns an endpoint into the text that represents it;
//! - [`embedder`] turns text into unit vectors with a local model ([`model_digest`] caches
//!   the digest of its files);
//! - [`store`] opens and builds the index of a data folder: the files of a generation
//!   ([`layout`], [`docs_file`]), replaced atomically ([`generations`]: find, begin,
//!   commit, clean), vectors of an earlier generation or format reused ([`salvage`]),
//!   searched by [`vectors`];
//! - [`lexical`] scores the same texts with BM25 for exact-word matches;
//! - [`records`] decodes the stored endpoint records on demand;
//! - [`training_text`] gives a retrieval model's training the texts the index embeds.

pub mod binfile;
pub mod catalog_index;
pub mod doc_text;
pub mod docs_file;
pub mod embedder;
pub mod generations;
pub mod layout;
pub mod lexical;
pub mod model_digest;
pub mod records;
pub mod salvage;
pub mod store;
pub mod training_text;
pub mod vectors;

pub use embedder::{EmbedError, Embedder, EmbedderConfig, ModelOptions, Origin, Pooling};
pub use lexical::{Bm25, Bm25Params};
pub use store::{BuildStats, IndexStore, IndexedDoc, Manifest, StoreError, TextEmbedder};
pub use vectors::{VectorIndex, ANN_MIN_DOCS, EXACT_MAX_DOCS};
