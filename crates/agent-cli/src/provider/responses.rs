//! OpenAI's Responses API, streamed: reasoning items kept and sent back across tool calls,
//! stateless (`store: false`, no `previous_response_id`), a prompt-cache key, and client-side
//! tool search for native activation.

mod wire;

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use tool_core::{CancellationToken, ToolCall};

pub use wire::render_tools;
pub(crate) use wire::request_body;

use self::wire::{Event, Finished, OutputItem, SEARCH_CALL_PREFIX};
use super::config::{OPENAI_API_KEY, ProviderConfig};
use super::transport::{
    Decoder, Endpoint, EndpointSpec, Failure, Transient, classify_stream_error, parse_event,
};
use super::{EventStream, ModelRequest, Provider, ProviderError, Response, StreamEvent};
use crate::conversation::{Block, StopReason, Usage};

/// A client for OpenAI's Responses API.
pub struct ResponsesProvider {
    endpoint: Endpoint,
}

impl ResponsesProvider {
    /// A client for the endpoint and key in `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let mut headers = Vec::new();
        if let Some(key) = &config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let endpoint = Endpoint::new(EndpointSpec {
            url: format!("{base}/responses"),
            base_url: config.base_url.clone(),
            model: config.model.clone(),
            headers,
            policy: config.retry_policy(),
            key_env: OPENAI_API_KEY,
            unreachable_hint: "check the address and your network connection".to_owned(),
        })?;
        Ok(Self { endpoint })
    }
}

impl Provider for ResponsesProvider {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let body = request_body(request, self.endpoint.model_for(&request.model));
        self.endpoint.stream::<ResponsesDecoder>(&body, cancel)
    }
}

/// Turns the Responses API's events into stream events and a response: text and reasoning
/// summaries stream as they come, each output item is taken whole when it is done.
#[derive(Debug, Default)]
struct ResponsesDecoder {
    /// The finished items, by their place in the output.
    blocks: BTreeMap<usize, Block>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    finished: bool,
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, data: &str, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        match parse_event(data)? {
            Event::ItemAdded { item, .. } => started(&item, out),
            Event::ItemDone { output_index, item } => self.item_done(output_index, item, out),
            Event::TextDelta { delta } if !delta.is_empty() => {
                out.push_back(StreamEvent::TextDelta(delta));
            }
            Event::SummaryDelta { delta } if !delta.is_empty() => {
                out.push_back(StreamEvent::ThinkingDelta(delta));
            }
            Event::Completed { response } => self.finish_with(response, None),
            Event::Incomplete { response } => {
                let reason = response
                    .incomplete_details
                    .as_ref()
                    .and_then(|d| d.reason.clone())
                    .unwrap_or_default();
                let stop = match reason.as_str() {
                    "max_output_tokens" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    other => StopReason::Other(other.to_owned()),
                };
                self.finish_with(response, Some(stop));
            }
            Event::Failed { response } => {
                let error = response.error.unwrap_or(Value::Null);
                return Err(classify_stream_error(&error, OPENAI_API_KEY));
            }
            Event::Error { code, message } => {
                let error = serde_json::json!({"code": code, "message": message});
                return Err(classify_stream_error(&error, OPENAI_API_KEY));
            }
            Event::TextDelta { .. } | Event::SummaryDelta { .. } | Event::Other => {}
        }
        Ok(())
    }

    fn finish(self, _out: &mut VecDeque<StreamEvent>) -> Result<Response, Failure> {
        if !self.finished {
            return Err(Failure::Transient(Transient::stream(
                "the response stream ended before response.completed",
            )));
        }
        let content: Vec<Block> = self.blocks.into_values().collect();
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

/// A call is reported as started when its item is added.
fn started(item: &OutputItem, out: &mut VecDeque<StreamEvent>) {
    if let OutputItem::FunctionCall { call_id, name, .. } = item {
        out.push_back(StreamEvent::ToolUseStarted {
            id: call_id.clone(),
            name: name.clone(),
        });
    }
}

impl ResponsesDecoder {
    /// A whole output item: a call is parsed once and reported, so it can start while the model
    /// goes on; text and reasoning become the message's blocks.
    fn item_done(&mut self, index: usize, item: OutputItem, out: &mut VecDeque<StreamEvent>) {
        let block = match item {
            OutputItem::Message { content } => {
                let text: String = content.into_iter().map(|p| p.text).collect();
                Block::Text { text }
            }
            OutputItem::Reasoning {
                summary,
                encrypted_content,
            } => {
                let parts: Vec<String> = summary.into_iter().map(|p| p.text).collect();
                Block::Thinking {
                    thinking: parts.join("\n\n"),
                    signature: encrypted_content.unwrap_or_default(),
                }
            }
            OutputItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let call = ToolCall::from_json_text(call_id, name, &arguments);
                out.push_back(StreamEvent::ToolCall(call.clone()));
                Block::ToolUse(call)
            }
            OutputItem::ToolSearchCall {
                call_id,
                id,
                arguments,
            } => {
                let id = format!(
                    "{SEARCH_CALL_PREFIX}{}",
                    call_id.or(id).unwrap_or_else(|| format!("search_{index}"))
                );
                let call = match arguments {
                    Value::String(text) => {
                        ToolCall::from_json_text(id, tool_pool::TOOL_SEARCH, &text)
                    }
                    other => ToolCall::new(id, tool_pool::TOOL_SEARCH, other),
                };
                out.push_back(StreamEvent::ToolUseStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                out.push_back(StreamEvent::ToolCall(call.clone()));
                Block::ToolUse(call)
            }
            OutputItem::Other => return,
        };
        self.blocks.insert(index, block);
    }

    fn finish_with(&mut self, response: Finished, stop: Option<StopReason>) {
        if let Some(usage) = response.usage {
            let cached = usage
                .input_tokens_details
                .map_or(0, |details| details.cached_tokens);
            self.usage = Usage {
                input_tokens: usage.input_tokens.saturating_sub(cached),
                output_tokens: usage.output_tokens,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            };
        }
        self.stop_reason = stop;
        self.finished = true;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;
    use crate::provider::transport::decode_all;

    fn decode(events: &[Value]) -> (Result<Response, Failure>, Vec<StreamEvent>) {
        let events: Vec<String> = events.iter().map(Value::to_string).collect();
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        decode_all::<ResponsesDecoder>(&events)
    }

    #[test]
    fn reasoning_text_and_calls_become_blocks_in_output_order() {
        let (result, events) = decode(&[
            json!({"type": "response.created", "response": {}}),
            json!({"type": "response.reasoning_summary_text.delta", "delta": "Look first."}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc",
                            "summary": [{"type": "summary_text", "text": "Look first."}]}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                   "item": {"type": "function_call", "call_id": "call_1", "name": "glob", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "delta": "{\"pattern\""}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": {"type": "function_call", "call_id": "call_1", "name": "glob",
                            "arguments": "{\"pattern\":\"*.rs\"}"}}),
            json!({"type": "response.output_item.done", "output_index": 2,
                   "item": {"type": "tool_search_call", "id": "ts_1", "call_id": "call_2",
                            "execution": "client", "arguments": {"query": "slack"}}}),
            json!({"type": "response.completed", "response": {"usage":
                   {"input_tokens": 100, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 60}}}}),
        ]);
        let response = result.unwrap();
        assert_eq!(events[0], StreamEvent::ThinkingDelta("Look first.".into()));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.usage.input_tokens, 40);
        assert_eq!(response.usage.cache_read_input_tokens, 60);
        assert_eq!(
            response.message.content,
            vec![
                Block::Thinking {
                    thinking: "Look first.".into(),
                    signature: "enc".into()
                },
                Block::ToolUse(ToolCall::new("call_1", "glob", json!({"pattern": "*.rs"}))),
                Block::ToolUse(ToolCall::new(
                    "tsc_call_2",
                    "tool_search",
                    json!({"query": "slack"})
                )),
            ]
        );
    }

    #[test]
    fn an_incomplete_response_says_why_and_a_failed_one_is_an_error() {
        let (result, _) = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "content": [{"type": "output_text", "text": "Par"}]}}),
            json!({"type": "response.incomplete", "response":
                   {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ]);
        let response = result.unwrap();
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert_eq!(response.message.text(), "Par");
        let (result, _) = decode(&[json!({"type": "response.failed", "response":
            {"error": {"code": "rate_limit_exceeded", "message": "slow down"}}})]);
        assert!(matches!(result, Err(Failure::Transient(_))));
        let (result, _) = decode(&[json!({"type": "response.output_text.delta", "delta": "hi"})]);
        assert!(matches!(result, Err(Failure::Transient(_))));
    }
}
