//! What the pool is configured with: the core whitelist, deferral and activation.

use std::collections::BTreeSet;

use crate::mode::{Activation, DeferralMode};

/// The name of the tool search tool.
pub const TOOL_SEARCH: &str = "tool_search";
/// The name of the proxy that calls discovered tools.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// The tools sent with every request unless configured otherwise: the everyday built-ins plus the
/// two tools that make deferral work.
pub const DEFAULT_CORE_TOOLS: &[&str] = &[
    "edit_file",
    EXECUTE_TOOL,
    "glob",
    "grep",
    "read_file",
    "shell",
    "todo_write",
    TOOL_SEARCH,
    "web_fetch",
    "write_file",
];

/// How the pool decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Tools never deferred, by name.
    pub core: BTreeSet<String>,
    /// When deferral is on.
    pub mode: DeferralMode,
    /// How discovered tools become usable.
    pub activation: Activation,
    /// The model's context window in tokens (for `auto`, and the announcement's budget).
    pub context_window: usize,
    /// The most bytes the announcement of deferred tools lists names in (past it, one line per
    /// MCP server); `None`: 2% of the context window, at
    /// [`crate::CharEstimate::BUDGET_CHARS_PER_TOKEN`].
    pub announcement_budget: Option<usize>,
}

impl PoolConfig {
    /// The announcement's budget in bytes.
    pub fn announcement_bytes(&self) -> usize {
        self.announcement_budget
            .unwrap_or_else(|| crate::CharEstimate::budget_chars(self.context_window) / 50)
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            core: DEFAULT_CORE_TOOLS.iter().map(|s| (*s).to_owned()).collect(),
            mode: DeferralMode::default(),
            activation: Activation::default(),
            context_window: 200_000,
            announcement_budget: None,
        }
    }
}
