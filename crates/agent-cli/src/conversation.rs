//! The conversation in a provider-neutral form: what the session file stores and what each
//! provider translates to its wire format.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{ToolCall, ToolResult};

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (tool results travel in user messages, as in Anthropic's API).
    User,
    /// The model.
    Assistant,
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning, passed back unchanged on the next request.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's signature over it.
        signature: String,
    },
    /// Reasoning the provider redacted, passed back unchanged.
    RedactedThinking {
        /// Opaque data.
        data: String,
    },
    /// A tool call: the same value from the provider's stream to the executor and the
    /// transcript.
    ToolUse(ToolCall),
    /// A tool's answer.
    ToolResult(ToolResult),
    /// An image the user attached (`@shot.png`).
    Image {
        /// The MIME type, such as `image/png`.
        media_type: String,
        /// The bytes, base64-encoded.
        data: String,
    },
}

impl From<ToolCall> for Block {
    /// The `tool_use` block of a call, with the input the provider parsed.
    fn from(call: ToolCall) -> Self {
        Self::ToolUse(call)
    }
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// The message's text blocks joined.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("")
    }

    /// The message's tool calls.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse(ToolCall { id, name, input }) => {
                Some((id.as_str(), name.as_str(), input))
            }
            _ => None,
        })
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output token limit.
    MaxTokens,
    /// A stop sequence.
    StopSequence,
    /// The provider refused.
    Refusal,
    /// Anything else, as the provider named it.
    Other(String),
}

/// Token usage of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_input_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, more: Self) {
        self.input_tokens += more.input_tokens;
        self.output_tokens += more.output_tokens;
        self.cache_read_input_tokens += more.cache_read_input_tokens;
        self.cache_creation_input_tokens += more.cache_creation_input_tokens;
    }
}
