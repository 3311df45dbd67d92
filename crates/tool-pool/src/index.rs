//! The deferred tools' search index: lexical, or with the `embeddings` feature, hybrid once the
//! pool's owner hands it a dense side (`ToolPool::set_dense_index`).

#[cfg(feature = "embeddings")]
use tool_search::{DenseIndex, EmbeddingError, HybridIndex};
use tool_search::{SearchError, SearchIndex, SearchResults, ToolDocument};

/// The index `tool_search` searches, kept in step with the deferrable tools.
#[cfg_attr(
    feature = "embeddings",
    expect(
        clippy::large_enum_variant,
        reason = "one per pool, kept in place under the pool's lock: its size never matters"
    )
)]
pub(crate) enum ToolIndex {
    /// Keywords alone (BM25+).
    Lexical(SearchIndex),
    /// The lexical index and the tools' vectors, searched together.
    #[cfg(feature = "embeddings")]
    Hybrid {
        /// Both sides.
        index: HybridIndex,
        /// The last embedding error, kept for [`crate::ToolPool::dense_error`]: a tool the
        /// encoder failed on is still found by its words.
        last_error: Option<String>,
    },
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self::Lexical(SearchIndex::default())
    }
}

impl ToolIndex {
    /// The lexical side, for what acts on any match it is given (prefetching, "did you mean"):
    /// the dense side ranks every tool for every query, so it never finds nothing.
    pub(crate) fn lexical(&self) -> &SearchIndex {
        match self {
            Self::Lexical(index) => index,
            #[cfg(feature = "embeddings")]
            Self::Hybrid { index, .. } => index.lexical(),
        }
    }

    /// `tool_search`'s search: both sides when there is a dense one (query syntax stays
    /// lexical there too, see `tool_search::HybridIndex`).
    pub(crate) fn search(&self, query: &str, limit: usize) -> Result<SearchResults, SearchError> {
        match self {
            Self::Lexical(index) => index.search(query, limit),
            #[cfg(feature = "embeddings")]
            Self::Hybrid { index, .. } => index.search(query, limit),
        }
    }

    /// Adds (or replaces) tools; on the dense side in one batch (a server connecting). An
    /// embedding error leaves those tools to the lexical side, and is kept.
    pub(crate) fn add_all(&mut self, docs: Vec<ToolDocument>) {
        match self {
            Self::Lexical(index) => docs.into_iter().for_each(|doc| index.add(doc)),
            #[cfg(feature = "embeddings")]
            Self::Hybrid { index, last_error } => {
                if docs.is_empty() {
                    return;
                }
                if let Err(e) = index.add_all(docs) {
                    *last_error = Some(e.to_string());
                }
            }
        }
    }

    /// Removes a tool from every side.
    pub(crate) fn remove(&mut self, name: &str) {
        match self {
            Self::Lexical(index) => {
                index.remove(name);
            }
            #[cfg(feature = "embeddings")]
            Self::Hybrid { index, .. } => {
                index.remove(name);
            }
        }
    }

    /// Makes the index hybrid with `dense` (replacing any dense side it had), embedding the
    /// tools already indexed. On an error every tool stays indexed: as before when embedding
    /// them failed, lexically alone should joining the two sides fail after that.
    #[cfg(feature = "embeddings")]
    pub(crate) fn set_dense(&mut self, mut dense: DenseIndex) -> Result<(), EmbeddingError> {
        let lexical = self.lexical();
        let docs: Vec<ToolDocument> = lexical
            .names()
            .iter()
            .filter_map(|name| lexical.get(name).cloned())
            .collect();
        // Embedded here, where an error leaves `self` alone: `HybridIndex::new` then finds every
        // vector in place and has nothing left to embed.
        dense.add_all(&docs)?;
        let config = *lexical.config();
        let lexical = match std::mem::take(self) {
            Self::Lexical(index) => index,
            Self::Hybrid { index, .. } => index.into_parts().0,
        };
        match HybridIndex::new(lexical, dense) {
            Ok(index) => {
                *self = Self::Hybrid {
                    index,
                    last_error: None,
                };
                Ok(())
            }
            Err(e) => {
                // The lexical index went into the attempt: the same tools make it again.
                *self = Self::Lexical(SearchIndex::from_documents(config, docs));
                Err(e)
            }
        }
    }

    /// How many tools have a vector; `None` without a dense side.
    #[cfg(feature = "embeddings")]
    pub(crate) fn dense_len(&self) -> Option<usize> {
        match self {
            Self::Lexical(_) => None,
            Self::Hybrid { index, .. } => Some(index.dense().len()),
        }
    }

    /// The last embedding error since the dense side was set; `None` without one.
    #[cfg(feature = "embeddings")]
    pub(crate) fn dense_error(&self) -> Option<String> {
        match self {
            Self::Lexical(_) => None,
            Self::Hybrid { last_error, .. } => last_error.clone(),
        }
    }
}
