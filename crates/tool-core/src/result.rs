//! Stage 8: a call's outcome as a provider's `tool_result` block.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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

    /// The Anthropic Messages API `tool_result` content block.
    pub fn to_anthropic(&self) -> Value {
        let content: Vec<Value> = self
            .content
            .iter()
            .map(|c| match c {
                Content::Text { text } => json!({"type": "text", "text": text}),
                Content::Image { media_type, data } => json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": media_type, "data": data},
                }),
            })
            .collect();
        let mut block = json!({
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": content,
        });
        if self.is_error {
            block["is_error"] = Value::Bool(true);
        }
        block
    }

    /// The OpenAI chat completions `tool` message. That format carries text only, so images are
    /// described in words.
    pub fn to_openai(&self) -> Value {
        let mut parts: Vec<String> = Vec::new();
        for c in &self.content {
            match c {
                Content::Text { text } => parts.push(text.clone()),
                Content::Image { media_type, .. } => {
                    parts.push(format!(
                        "[an image ({media_type}) that this provider format cannot carry]"
                    ));
                }
            }
        }
        let mut text = parts.join("\n");
        if self.is_error && !text.starts_with("Error") {
            text = format!("Error: {text}");
        }
        json!({"role": "tool", "tool_call_id": self.tool_use_id, "content": text})
    }
}
