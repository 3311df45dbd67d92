//! Unknown tool names answered through tool search.

use std::sync::Weak;

use tool_core::NameSuggester;

use crate::shared::Shared;

/// The executor's "did you mean" for a pool: names close by edit distance first (a typo of a
/// loaded tool), then deferred tools whose documents match the name's words (a name the model
/// guessed for a tool it has not loaded, such as `create_github_issue` for
/// `mcp__github__create_issue`).
pub(crate) struct PoolSuggester {
    shared: Weak<Shared>,
}

impl PoolSuggester {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        Self { shared }
    }
}

impl NameSuggester for PoolSuggester {
    fn suggest(&self, name: &str, limit: usize) -> Vec<String> {
        let Some(shared) = self.shared.upgrade() else {
            return Vec::new();
        };
        let mut names = shared.registry.suggest(name, limit);
        if names.len() < limit {
            let deferred = shared.deferred_names();
            // A name that is not a query (no letter or digit) finds nothing; that is no error here.
            // Lexical alone: a dense side would rank every tool, however unlike the name.
            let hits = shared
                .state()
                .index
                .lexical()
                .search(name, limit)
                .map(|results| results.hits)
                .unwrap_or_default();
            for hit in hits {
                if names.len() == limit {
                    break;
                }
                if deferred.contains(&hit.name) && !names.contains(&hit.name) {
                    names.push(hit.name);
                }
            }
        }
        names
    }
}
