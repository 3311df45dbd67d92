//! Anthropic's Messages API on the wire: the request body this client sends (system prompt,
//! messages, tools, `tool_result` blocks, cache breakpoints) and the streamed events it reads.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Content, ToolResult};
use tool_pool::RequestTools;

use crate::conversation::{Block, Message, Role};
use crate::provider::ModelRequest;

/// The JSON body of a streaming Messages API request.
///
/// The first system block is the stable prompt and carries a cache breakpoint; so does the last
/// tool of the stable part of the tools array, and the last block of a final user message, so
/// each turn reads the previous turns from the cache.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "stream": true,
        "messages": render_messages(&request.messages),
    });
    if !request.system.is_empty() {
        let system: Vec<Value> = request
            .system
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut block = json!({"type": "text", "text": text});
                if i == 0 {
                    block["cache_control"] = ephemeral();
                }
                block
            })
            .collect();
        body["system"] = Value::Array(system);
    }
    if !request.tools.tools.is_empty() {
        body["tools"] = render_tools(&request.tools);
    }
    body
}

/// The one kind of cache breakpoint the API has.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The tools array, with a cache breakpoint on the last tool of the stable part: everything up
/// to it stays byte-identical from request to request, so the prompt cache keeps hitting.
pub fn render_tools(tools: &RequestTools) -> Value {
    let rendered: Vec<Value> = tools
        .declarations()
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let mut entry = json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
            });
            if i + 1 == tools.stable_len {
                entry["cache_control"] = ephemeral();
            }
            entry
        })
        .collect();
    Value::Array(rendered)
}

/// A `tool_result` content block.
pub fn render_tool_result(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
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
        "tool_use_id": result.tool_use_id,
        "content": content,
    });
    if result.is_error {
        block["is_error"] = Value::Bool(true);
    }
    block
}

fn render_messages(messages: &[Message]) -> Value {
    let mut rendered: Vec<Value> = messages
        .iter()
        .map(|message| {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let content: Vec<Value> = message.content.iter().filter_map(render_block).collect();
            json!({"role": role, "content": content})
        })
        .collect();
    // A breakpoint on the newest user block caches the whole conversation for the next turn.
    if let Some(last) = rendered.last_mut()
        && last["role"] == "user"
        && let Some(block) = last["content"].as_array_mut().and_then(|c| c.last_mut())
    {
        block["cache_control"] = ephemeral();
    }
    Value::Array(rendered)
}

fn render_block(block: &Block) -> Option<Value> {
    Some(match block {
        // The API rejects empty text blocks.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({"type": "text", "text": text}),
        Block::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Block::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
        Block::ToolUse(tool_core::ToolCall { id, name, input }) => {
            // The API takes only an object; input that did not parse goes back empty, and the
            // tool's error result tells the model what was wrong with it.
            let input = if input.is_object() {
                input.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Block::ToolResult(result) => render_tool_result(result),
        Block::Image { media_type, data } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
    })
}

/// One event of the Messages API stream.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    /// The message begins; its usage counts the input.
    MessageStart {
        /// The message so far.
        message: MessageStart,
    },
    /// A content block begins.
    ContentBlockStart {
        /// Its position in the message.
        index: usize,
        /// The block, empty or nearly so.
        content_block: ContentBlock,
    },
    /// A piece of a content block.
    ContentBlockDelta {
        /// The block's position.
        index: usize,
        /// The piece.
        delta: Delta,
    },
    /// A content block is complete.
    ContentBlockStop {
        /// The block's position.
        index: usize,
    },
    /// The stop reason and the output usage.
    MessageDelta {
        /// The stop reason.
        delta: MessageDelta,
        /// The output tokens so far.
        #[serde(default)]
        usage: Option<Usage>,
    },
    /// The message is complete.
    MessageStop,
    /// Keeps the connection open.
    Ping,
    /// The server failed mid-stream.
    Error {
        /// What went wrong (`overloaded_error`, ...), kept whole for the error's message.
        error: Value,
    },
    /// An event type added after this client was written.
    #[serde(other)]
    Unknown,
}

/// The `message` of `message_start`.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageStart {
    /// The input usage.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageDelta {
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// Token counts; each event carries some of them.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

/// The block a `content_block_start` opens.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// Block types this client does not know (server tools, citations).
    #[serde(other)]
    Other,
}

/// A piece of a content block.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Delta types this client does not know (citations, ...).
    #[serde(other)]
    Other,
}
