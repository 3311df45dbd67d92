//! The errors of this crate's setup API. Errors of a *call* are not here: they are data, turned
//! into `is_error` tool results (see [`crate::ToolError`]).

/// A mistake in how tools, rules or hooks were set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// A tool name or alias breaks the API's name rule.
    #[error("invalid tool name `{name}`: use 1 to 64 letters, digits, `_` or `-`")]
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// A name or alias is already taken by another tool.
    #[error(
        "the name `{name}` is already registered by `{existing}`: rename one of the tools or unregister the other first"
    )]
    DuplicateName {
        /// The name registered twice.
        name: String,
        /// The tool that holds it.
        existing: String,
    },
    /// A tool's input schema is not a usable JSON Schema.
    #[error("the input schema of `{tool}` is invalid: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A permission rule could not be parsed.
    #[error("invalid permission rule `{rule}`: {reason}")]
    InvalidRule {
        /// The rule as written.
        rule: String,
        /// What is wrong and how to write it.
        reason: String,
    },
    /// A permission mode name is unknown.
    #[error(
        "unknown permission mode `{mode}`: use default, accept_edits, plan, bypass or dont_ask"
    )]
    InvalidMode {
        /// The name as written.
        mode: String,
    },
}
