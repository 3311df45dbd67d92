//! The dense side of tool search (the `embeddings` feature): tools and queries embedded by a
//! sentence encoder, compared by cosine, and fused with the lexical ranking.
//!
//! - [`Embedder`]: what the dense side needs of a model; [`SentenceEncoder`] runs a
//!   sentence-transformers BERT-family model (all-MiniLM-L6-v2, bge, e5) from a folder;
//! - [`DenseIndex`]: the tools' vectors, updated in place, cached on disk by content;
//! - [`HybridIndex`]: a [`SearchIndex`](crate::SearchIndex) and a [`DenseIndex`] over the same
//!   tools, searched together ([`Fusion`]), with [`HybridIndex::explain`] showing both sides.
//!
//! Architecture Invariant: the lexical index knows nothing of this module; the dense side
//! reads it through its public API only.

mod dense_index;
mod encoder;
mod error;
mod fusion;
mod hybrid;
mod network;
mod script;
mod store;
#[cfg(test)]
mod tests;

pub use dense_index::DenseIndex;
pub use encoder::{EncoderOptions, SentenceEncoder};
pub use error::EmbeddingError;
pub use fusion::Fusion;
pub use hybrid::{HybridExplanation, HybridIndex, Side};
pub use network::Pooling;
pub use store::ModelKey;

/// A model that turns text into vectors for the dense side.
///
/// Vectors must have unit length (the dense side ranks by dot product, which is then the
/// cosine), and [`Embedder::model_key`] must change whenever the vectors a text gets would.
pub trait Embedder: Send + Sync {
    /// Identifies the model and its settings: the embedding cache is kept per key.
    fn model_key(&self) -> ModelKey;
    /// How many numbers a vector has.
    fn dimension(&self) -> usize;
    /// The vectors of tool texts, row after row (`texts.len() * dimension` numbers).
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<f32>, EmbeddingError>;
    /// The vector of a query.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbeddingError>;
    /// Whether the model can read `query`; one it cannot is searched lexically alone.
    fn reads(&self, _query: &str) -> bool {
        true
    }
}
