//! Anthropic's Messages API, streamed over server-sent events.

mod wire;

use std::collections::{BTreeMap, VecDeque};

use tool_core::{CancellationToken, ToolCall};

pub(crate) use wire::request_body;
pub use wire::{render_tool_result, render_tools};

/// The body this client sends for `request`, as JSON (its bytes are the JSON's, keys sorted):
/// for measuring and inspecting requests.
pub fn render_request(request: &ModelRequest) -> serde_json::Value {
    serde_json::to_value(request_body(request, &request.model)).unwrap_or_default()
}

use self::wire::{ContentBlock, Delta, Event, Usage as WireUsage};
use super::config::{ANTHROPIC_API_KEY, ProviderConfig};
use super::transport::{
    Decoder, Endpoint, EndpointSpec, Failure, Transient, classify_stream_error, parse_event,
};
use super::{EventStream, ModelRequest, Provider, ProviderError, Response, StreamEvent};
use crate::conversation::{Block, StopReason, Usage};

/// The API version this client speaks.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A client for Anthropic's Messages API.
pub struct AnthropicProvider {
    endpoint: Endpoint,
}

impl AnthropicProvider {
    /// A client for the endpoint and key in `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        let endpoint = Endpoint::new(EndpointSpec {
            url: format!("{base}/v1/messages"),
            base_url: config.base_url.clone(),
            model: config.model.clone(),
            headers,
            policy: config.retry_policy(),
            key_env: ANTHROPIC_API_KEY,
            unreachable_hint: "check the address and your network connection".to_owned(),
        })?;
        Ok(Self { endpoint })
    }
}

impl Provider for AnthropicProvider {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let body = request_body(request, self.endpoint.model_for(&request.model));
        self.endpoint.stream::<AnthropicDecoder>(&body, cancel)
    }
}

/// A content block while it streams.
#[derive(Debug)]
enum Partial {
    /// Text and reasoning grow in place.
    Block(Block),
    /// A tool call whose input is still arriving as JSON text.
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

impl Partial {
    fn into_block(self) -> Block {
        match self {
            Self::Block(block) => block,
            // `AnthropicDecoder::finish` has closed every call, so this is never reached.
            Self::ToolUse { id, name, json } => ToolCall::from_json_text(id, name, &json).into(),
        }
    }
}

/// Turns the Messages API's events into stream events and a response.
#[derive(Debug, Default)]
struct AnthropicDecoder {
    blocks: BTreeMap<usize, Partial>,
    stop_reason: Option<StopReason>,
    usage: Usage,
    stopped: bool,
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, data: &str, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        match parse_event(data)? {
            Event::MessageStart { message } => self.read_usage(message.usage),
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out),
            Event::ContentBlockDelta { index, delta } => self.extend_block(index, delta, out),
            Event::ContentBlockStop { index } => self.close_block(index, out),
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                self.read_usage(usage);
            }
            Event::MessageStop => self.stopped = true,
            Event::Error { error } => return Err(classify_stream_error(&error, ANTHROPIC_API_KEY)),
            Event::Ping | Event::Unknown => {}
        }
        Ok(())
    }

    fn finish(mut self, out: &mut VecDeque<StreamEvent>) -> Result<Response, Failure> {
        if !self.stopped {
            return Err(Failure::Transient(Transient::stream(
                "the response stream ended before message_stop",
            )));
        }
        let open: Vec<usize> = self.blocks.keys().copied().collect();
        for index in open {
            self.close_block(index, out);
        }
        let content: Vec<Block> = self.blocks.into_values().map(Partial::into_block).collect();
        let stop_reason = self.stop_reason.unwrap_or_else(|| {
            if content.iter().any(|b| matches!(b, Block::ToolUse(_))) {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        });
        Ok(Response::assistant(content, stop_reason, self.usage))
    }
}

impl AnthropicDecoder {
    fn read_usage(&mut self, usage: Option<WireUsage>) {
        let Some(usage) = usage else {
            return;
        };
        let fields = [
            (usage.input_tokens, &mut self.usage.input_tokens),
            (usage.output_tokens, &mut self.usage.output_tokens),
            (
                usage.cache_read_input_tokens,
                &mut self.usage.cache_read_input_tokens,
            ),
            (
                usage.cache_creation_input_tokens,
                &mut self.usage.cache_creation_input_tokens,
            ),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
    }

    fn start_block(&mut self, index: usize, block: ContentBlock, out: &mut VecDeque<StreamEvent>) {
        let partial = match block {
            ContentBlock::Text { text } => {
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text.clone()));
                }
                Partial::Block(Block::Text { text })
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => Partial::Block(Block::Thinking {
                thinking,
                signature,
            }),
            ContentBlock::RedactedThinking { data } => {
                Partial::Block(Block::RedactedThinking { data })
            }
            ContentBlock::ToolUse { id, name } => {
                out.push_back(StreamEvent::ToolUseStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                Partial::ToolUse {
                    id,
                    name,
                    json: String::new(),
                }
            }
            // Blocks this client does not know are left out rather than failing the turn.
            ContentBlock::Other => return,
        };
        self.blocks.insert(index, partial);
    }

    fn extend_block(&mut self, index: usize, delta: Delta, out: &mut VecDeque<StreamEvent>) {
        let Some(partial) = self.blocks.get_mut(&index) else {
            return;
        };
        match (partial, delta) {
            (Partial::Block(Block::Text { text }), Delta::Text { text: piece }) => {
                text.push_str(&piece);
                out.push_back(StreamEvent::TextDelta(piece));
            }
            (
                Partial::Block(Block::Thinking { thinking, .. }),
                Delta::Thinking { thinking: piece },
            ) => {
                thinking.push_str(&piece);
                out.push_back(StreamEvent::ThinkingDelta(piece));
            }
            (
                Partial::Block(Block::Thinking { signature, .. }),
                Delta::Signature { signature: piece },
            ) => signature.push_str(&piece),
            (Partial::ToolUse { json, .. }, Delta::InputJson { partial_json }) => {
                json.push_str(&partial_json);
            }
            _ => {}
        }
    }

    /// A tool call's block is complete: its input is parsed, once, and the call reported.
    fn close_block(&mut self, index: usize, out: &mut VecDeque<StreamEvent>) {
        let Some(partial) = self.blocks.get_mut(&index) else {
            return;
        };
        if let Partial::ToolUse { id, name, json } = partial {
            let call = ToolCall::from_json_text(std::mem::take(id), std::mem::take(name), json);
            out.push_back(StreamEvent::ToolCall(call.clone()));
            *partial = Partial::Block(call.into());
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::{Value, json};

    use super::*;
    use crate::provider::transport::decode_all;

    fn decode(events: &[Value]) -> (Result<Response, Failure>, Vec<StreamEvent>) {
        let events: Vec<String> = events.iter().map(Value::to_string).collect();
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        decode_all::<AnthropicDecoder>(&events)
    }

    #[test]
    fn a_call_left_open_is_reported_when_the_message_stops() {
        let (result, events) = decode(&[
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "id": "toolu_1", "name": "glob", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"pattern\":\"*.rs\"}"}}),
            json!({"type": "message_stop"}),
        ]);
        let call = ToolCall::new("toolu_1", "glob", json!({"pattern": "*.rs"}));
        assert_eq!(events.last(), Some(&StreamEvent::ToolCall(call.clone())));
        let response = result.unwrap();
        assert_eq!(response.message.content, vec![Block::from(call)]);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn unknown_events_and_blocks_are_skipped() {
        let (result, _) = decode(&[
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search"}}),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "citations_delta", "citation": {}}}),
            json!({"type": "something_new", "detail": 1}),
            json!({"type": "message_stop"}),
        ]);
        assert!(result.unwrap().message.content.is_empty());
    }

    #[test]
    fn a_malformed_event_is_a_stream_error() {
        let (result, _) = decode(&[json!({"type": "content_block_stop"})]);
        assert!(matches!(
            result,
            Err(Failure::Fatal(ProviderError::Stream(m))) if m.contains("not understood")
        ));
    }
}
