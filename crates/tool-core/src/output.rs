//! What a tool's call produces: output blocks, and the failures a tool reports.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The MIME type, such as `image/png`.
        media_type: String,
        /// The image bytes, base64-encoded (standard alphabet, padded).
        data: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The number of characters this block counts for in the result budget (images count as 0:
    /// their size is the provider's concern, not the text budget's).
    pub fn char_len(&self) -> usize {
        match self {
            Self::Text { text } => text.chars().count(),
            Self::Image { .. } => 0,
        }
    }
}

/// What a tool returns when its call completes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The blocks the model reads.
    pub content: Vec<Content>,
    /// Structured output, when the tool declares an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the tool reports a failure the model should see as an error (a command that ran
    /// but failed, an MCP tool that answered `isError`).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured: None,
            is_error: false,
        }
    }

    /// A text output marked as an error.
    pub fn error_text(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// Adds structured output.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// All text blocks joined with newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// A failure a tool reports. Every variant becomes an `is_error` tool result the model reads;
/// none aborts the turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The input is well-formed JSON of the right shape but unusable; the message says how to fix it.
    #[error("{0}")]
    InvalidInput(String),
    /// The tool ran and failed; the message says what happened and what to try instead.
    #[error("{0}")]
    Failed(String),
    /// The call was cancelled before it finished.
    #[error("the call was cancelled")]
    Cancelled,
}

impl ToolError {
    /// An invalid-input error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}
