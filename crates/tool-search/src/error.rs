//! The errors of this crate.

/// A query the engine cannot run, with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// Nothing was asked.
    #[error(
        "the query is empty: describe the capability you need in a few words, such as `read file` or `send slack message`"
    )]
    EmptyQuery,
    /// Only punctuation or symbols.
    #[error(
        "the query `{query}` has no letter or digit: describe the capability you need in words, such as `read file`"
    )]
    NoWords {
        /// The query as given.
        query: String,
    },
    /// `select:` without names.
    #[error("select: needs tool names, as in `select:read_file` or `select:a,b`")]
    EmptySelect,
}
