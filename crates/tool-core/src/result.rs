//! Stage 8: a call's outcome, ready for a provider to render as its `tool_result` block.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::Content;

/// The answer to one `tool_use` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the `tool_use` block this answers.
    pub tool_use_id: String,
    /// The blocks the model reads.
    pub content: Vec<Content>,
    /// Structured output, when the tool produced some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether this is an error the model should act on.
    pub is_error: bool,
}

impl ToolResult {
    /// An error result with one text block.
    pub fn error(tool_use_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: vec![Content::text(message)],
            structured: None,
            is_error: true,
        }
    }

    /// All text blocks joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                Content::Image { .. } => None,
            })
            .collect();
        texts.join("\n")
    }
}
