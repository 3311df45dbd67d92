//! A search engine for tool documents, so an agent can hold thousands of tools and send the model
//! only the few it needs.
//!
//! - [`Tokenizer`]: NFKD folding, Unicode word boundaries, identifier splits (`snake_case`,
//!   `camelCase`, `mcp__server__tool`, ...), stop words, English stemming, and CJK bigrams;
//! - [`SearchIndex`]: an inverted index over weighted fields, updated in place when tools come and
//!   go, scored with BM25+ or TF-IDF cosine ([`Scorer`]), with a CJK gate against single shared
//!   character pairs, and [`SearchIndex::explain`];
//! - [`Query`]: keywords, `+required`, `select:A,B`, `discover:words`, `mcp__server`;
//! - with the `embeddings` feature (off by default; it brings candle and tokenizers):
//!   `SentenceEncoder` (a sentence-transformers BERT-family model from a folder), `DenseIndex`
//!   (the tools' vectors, cached on disk by content and model) and `HybridIndex` (both sides
//!   updated together, keyword queries fused by weighted reciprocal rank, `explain` of both).
//!
//! ```
//! use tool_search::{Parameter, SearchIndex, ToolDocument};
//!
//! let mut index = SearchIndex::default();
//! index.add(ToolDocument::new("read_file", "Reads a file from the local filesystem.")
//!     .with_parameter(Parameter::described("path", "The file to read")));
//! index.add(ToolDocument::new("mcp__slack__send_message", "Send a message to a Slack channel.")
//!     .with_server("slack", "send_message"));
//! index.add(ToolDocument::new("mcp__github__create_issue", "Create an issue in a GitHub repository.")
//!     .with_server("github", "create_issue"));
//!
//! let results = index.search("post a message on slack", 3).unwrap();
//! assert_eq!(results.hits[0].name, "mcp__slack__send_message");
//!
//! let all_github = index.search("mcp__github", 10).unwrap();
//! assert_eq!(all_github.hits.len(), 1);
//!
//! assert!(index.search("???", 3).is_err());
//! ```

mod batch;
#[cfg(feature = "embeddings")]
mod dense;
mod document;
mod error;
mod index;
mod lexicon;
mod query;
mod stem_table;
mod stem_table_format;
mod tokenizer;

#[cfg(feature = "embeddings")]
pub use dense::{
    DenseIndex, Embedder, EmbeddingError, EncoderOptions, Fusion, HybridExplanation, HybridIndex,
    ModelKey, Pooling, SentenceEncoder, Side,
};
pub use document::{Field, FieldWeights, Parameter, ToolDocument};
pub use error::SearchError;
pub use index::{
    Bm25Plus, Explanation, Hit, Scorer, SearchConfig, SearchIndex, SearchResults, TermExplanation,
};
pub use query::{Query, QueryKind};
pub use tokenizer::{Token, Tokenizer};
