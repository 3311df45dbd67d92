//! What a tool is: its name, description, schema and how it is loaded.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CoreError;

/// The default cap on a result's size, in characters, before the result budget persists it to
/// disk and sends a preview instead.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 50_000;

/// How a tool is loaded into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Loading {
    /// The pool decides: core tools are sent, others may be deferred.
    #[default]
    Default,
    /// Always sent with the request, never deferred.
    AlwaysLoad,
    /// Deferred: found through tool search before it can be used.
    Defer,
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Origin {
    /// Implemented in Rust and registered by the application.
    #[default]
    BuiltIn,
    /// A tool of an MCP server.
    Mcp {
        /// The server's name as configured (`mcp__{server}__...`).
        server: String,
        /// The tool's own name on that server.
        tool: String,
    },
}

/// The static description of a tool: everything about it that does not depend on an input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name, matching `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Old names that still resolve to this tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The description sent to the model.
    pub description: String,
    /// Three to ten words of capability, used by tool search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_hint: Option<String>,
    /// The JSON Schema of the input (an object schema).
    pub input_schema: Value,
    /// The JSON Schema of structured output, when the tool has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// How the tool is loaded into requests.
    #[serde(default)]
    pub loading: Loading,
    /// Where the tool comes from.
    #[serde(default)]
    pub origin: Origin,
    /// Results longer than this many characters are persisted to disk and previewed; `None`
    /// means unbounded (for tools such as read_file that bound their own output).
    #[serde(default = "default_max_result_chars")]
    pub max_result_chars: Option<usize>,
}

fn default_max_result_chars() -> Option<usize> {
    Some(DEFAULT_MAX_RESULT_CHARS)
}

impl ToolSpec {
    /// A spec with the given name, description and input schema, and defaults for the rest.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            aliases: Vec::new(),
            description: description.into(),
            search_hint: None,
            input_schema,
            output_schema: None,
            loading: Loading::Default,
            origin: Origin::BuiltIn,
            max_result_chars: default_max_result_chars(),
        }
    }

    /// Adds an alias.
    #[must_use]
    pub fn with_alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// Sets the search hint.
    #[must_use]
    pub fn with_search_hint(mut self, hint: impl Into<String>) -> Self {
        self.search_hint = Some(hint.into());
        self
    }

    /// Sets how the tool is loaded.
    #[must_use]
    pub fn with_loading(mut self, loading: Loading) -> Self {
        self.loading = loading;
        self
    }

    /// Sets the tool's origin.
    #[must_use]
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    /// Sets the result cap (`None`: unbounded).
    #[must_use]
    pub fn with_max_result_chars(mut self, max: Option<usize>) -> Self {
        self.max_result_chars = max;
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Checks the name and aliases against the API's name rules and the schema's shape.
    pub fn check(&self) -> Result<(), CoreError> {
        for name in std::iter::once(&self.name).chain(&self.aliases) {
            if !is_valid_tool_name(name) {
                return Err(CoreError::InvalidName { name: name.clone() });
            }
        }
        if !self.input_schema.is_object() {
            return Err(CoreError::InvalidSchema {
                tool: self.name.clone(),
                reason: "the input schema must be a JSON object".to_owned(),
            });
        }
        Ok(())
    }
}

/// Whether `name` matches the API's tool name rule, `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_api_rule() {
        assert!(is_valid_tool_name("read_file"));
        assert!(is_valid_tool_name("mcp__github__create-issue"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("has space"));
        assert!(!is_valid_tool_name("dotted.name"));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        assert!(is_valid_tool_name(&"x".repeat(64)));
    }
}
