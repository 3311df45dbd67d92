//! How a `tool_search` result names the tools it loaded, for providers that load deferred tools
//! themselves ([`crate::Activation::Native`]): the result's structured value lists them, and the
//! provider renders that list in its own form (Anthropic `tool_reference` blocks, an OpenAI
//! Responses `tool_search_output`).

use serde_json::{Value, json};
use tool_core::ToolResult;

/// The key of the structured value that lists the loaded tools.
const KEY: &str = "tool_references";

/// The structured value of a result that loaded `names`.
pub(crate) fn structured(names: &[String]) -> Value {
    json!({ KEY: names })
}

/// The tools a `tool_search` result loaded natively, in the order it found them; empty for any
/// other result. A provider renders only those its request declares deferred
/// ([`crate::RequestTools::is_deferred`]): the APIs refuse a reference to a tool the request
/// does not carry.
pub fn tool_references(result: &ToolResult) -> Vec<&str> {
    result
        .structured
        .as_ref()
        .and_then(|value| value.get(KEY))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}
