//! One `tool_use` block as the executor receives it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One `tool_use` block: which tool, with what input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The block's id, echoed in the result.
    pub id: String,
    /// The tool's name (or an alias) as the model wrote it.
    pub name: String,
    /// The input as the model sent it.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// A call whose input is raw JSON text as streamed by a provider. Text that does not parse
    /// is kept as a string, which schema validation then reports to the model.
    pub fn from_json_text(id: impl Into<String>, name: impl Into<String>, text: &str) -> Self {
        let input = if text.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        };
        Self::new(id, name, input)
    }
}
