//! What a `tool_search` query finds besides deferred tools.

/// Something an agent holds beside its tools that the model looks for the same way, such as
/// skills: `tool_search` asks it with the query (keyword and `discover:` forms) and adds its
/// answer to the result, so one search finds both, whether or not any tool matched.
pub trait RelatedSearch: Send + Sync {
    /// A note for the result of `query` (a heading that says how to use what it lists, then a
    /// line per find), or `None` when nothing matches.
    fn related(&self, query: &str) -> Option<String>;
}
