//! Anthropic's Messages API, streamed over server-sent events.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{CancellationToken, Content, ToolResult};
use tool_pool::RequestTools;

use super::config::{ANTHROPIC_API_KEY, ProviderConfig};
use super::http::{
    Decoder, Endpoint, Failure, SseEvent, Transient, classify_stream_error, parse_tool_input,
};
use super::{ModelRequest, Provider, ProviderError, Response, StreamEvent, ToolFormat};
use crate::conversation::{Block, Message, Role, StopReason, Usage};

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A client for Anthropic's Messages API.
pub struct AnthropicProvider {
    endpoint: Endpoint,
    model: String,
}

impl AnthropicProvider {
    /// A client for the endpoint and key in `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let mut headers = vec![
            ("anthropic-version", ANTHROPIC_VERSION.to_owned()),
            ("content-type", "application/json".to_owned()),
            ("accept", "text/event-stream".to_owned()),
        ];
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        let endpoint = Endpoint::new(
            format!("{base}/v1/messages"),
            config.base_url.clone(),
            headers,
            config.retry_policy(),
            ANTHROPIC_API_KEY,
            "check the address and your network connection".to_owned(),
        )?;
        Ok(Self {
            endpoint,
            model: config.model.clone(),
        })
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn format(&self) -> ToolFormat {
        ToolFormat::Anthropic
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        events: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Response, ProviderError> {
        let mut body = request_body(request);
        if request.model.is_empty() {
            body["model"] = Value::String(self.model.clone());
        }
        self.endpoint
            .stream(&body, AnthropicDecoder::default, events, cancel)
            .await
    }
}

/// The JSON body of a streaming Messages API request.
///
/// The first system block is the stable prompt and carries a cache breakpoint; the last block
/// of a final user message carries another, so each turn reads the previous turns from the
/// cache. The tools array is sent as given (tool-pool already marked its stable prefix).
pub fn request_body(request: &ModelRequest) -> Value {
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
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                block
            })
            .collect();
        body["system"] = Value::Array(system);
    }
    if request
        .tools
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
    {
        body["tools"] = request.tools.clone();
    }
    body
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
        block["cache_control"] = json!({"type": "ephemeral"});
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
        Block::ToolUse { id, name, input } => {
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
    })
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
                entry["cache_control"] = json!({"type": "ephemeral"});
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

/// A content block while it streams.
#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

impl Partial {
    fn into_block(self) -> Block {
        match self {
            Self::Text(text) => Block::Text { text },
            Self::Thinking {
                thinking,
                signature,
            } => Block::Thinking {
                thinking,
                signature,
            },
            Self::Redacted(data) => Block::RedactedThinking { data },
            Self::ToolUse { id, name, json } => Block::ToolUse {
                id,
                name,
                input: parse_tool_input(&json),
            },
        }
    }
}

/// Turns the Messages API event stream into events and a response.
#[derive(Debug, Default)]
struct AnthropicDecoder {
    blocks: BTreeMap<u64, Partial>,
    stop_reason: Option<StopReason>,
    usage: Usage,
    stopped: bool,
}

fn usage_field(usage: &Value, name: &str) -> Option<u64> {
    usage.get(name).and_then(Value::as_u64)
}

impl AnthropicDecoder {
    fn read_usage(&mut self, usage: &Value) {
        if let Some(n) = usage_field(usage, "input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage_field(usage, "output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = usage_field(usage, "cache_read_input_tokens") {
            self.usage.cache_read_input_tokens = n;
        }
        if let Some(n) = usage_field(usage, "cache_creation_input_tokens") {
            self.usage.cache_creation_input_tokens = n;
        }
    }
}

fn stop_reason(name: &str) -> StopReason {
    match name {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

fn malformed(what: &str) -> Failure {
    Failure::Fatal(ProviderError::Stream(format!("malformed {what} event")))
}

impl Decoder for AnthropicDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure> {
        let data: Value = serde_json::from_str(&event.data).map_err(|err| {
            Failure::Fatal(ProviderError::Stream(format!(
                "an event is not JSON ({err}): {}",
                event.data
            )))
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = data.get("index").and_then(Value::as_u64);
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let index = index.ok_or_else(|| malformed(kind))?;
                let block = data.get("content_block").ok_or_else(|| malformed(kind))?;
                let text = |field: &str| {
                    block
                        .get(field)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let partial = match block.get("type").and_then(Value::as_str) {
                    Some("text") => Partial::Text(text("text")),
                    Some("thinking") => Partial::Thinking {
                        thinking: text("thinking"),
                        signature: text("signature"),
                    },
                    Some("redacted_thinking") => Partial::Redacted(text("data")),
                    Some("tool_use") => {
                        let (id, name) = (text("id"), text("name"));
                        events(StreamEvent::ToolUseStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Partial::ToolUse {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    // Block types this client does not know (server tools, citations) are left
                    // out rather than failing the turn.
                    _ => return Ok(()),
                };
                if let Partial::Text(text) = &partial
                    && !text.is_empty()
                {
                    events(StreamEvent::TextDelta(text.clone()));
                }
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let index = index.ok_or_else(|| malformed(kind))?;
                let delta = data.get("delta").ok_or_else(|| malformed(kind))?;
                let piece =
                    |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or_default();
                match (
                    self.blocks.get_mut(&index),
                    delta.get("type").and_then(Value::as_str),
                ) {
                    (Some(Partial::Text(text)), Some("text_delta")) => {
                        let piece = piece("text");
                        text.push_str(piece);
                        events(StreamEvent::TextDelta(piece.to_owned()));
                    }
                    (Some(Partial::Thinking { thinking, .. }), Some("thinking_delta")) => {
                        let piece = piece("thinking");
                        thinking.push_str(piece);
                        events(StreamEvent::ThinkingDelta(piece.to_owned()));
                    }
                    (Some(Partial::Thinking { signature, .. }), Some("signature_delta")) => {
                        signature.push_str(piece("signature"));
                    }
                    (Some(Partial::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(piece("partial_json"));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index.ok_or_else(|| malformed(kind))?;
                if let Some(Partial::ToolUse { id, name, json }) = self.blocks.get(&index) {
                    events(StreamEvent::ToolUseComplete {
                        id: id.clone(),
                        name: name.clone(),
                        input_json: json.clone(),
                    });
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(stop_reason(reason));
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let error = data.get("error").unwrap_or(&data);
                return Err(classify_stream_error(error, ANTHROPIC_API_KEY));
            }
            // "ping" and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn finish(self, _events: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<Response, Failure> {
        if !self.stopped {
            return Err(Failure::Transient(Transient::stream(
                "the response stream ended before message_stop",
            )));
        }
        let content: Vec<Block> = self.blocks.into_values().map(Partial::into_block).collect();
        let stop_reason = self.stop_reason.unwrap_or_else(|| {
            if content.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        });
        Ok(Response {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            usage: self.usage,
        })
    }
}
