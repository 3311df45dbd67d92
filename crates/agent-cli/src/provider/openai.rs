//! OpenAI-compatible chat completions, streamed: OpenAI itself and local servers such as Ollama,
//! llama.cpp and vLLM.

mod wire;

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use tool_core::{CancellationToken, ToolCall};

pub(crate) use wire::TokenLimitField;
pub(crate) use wire::request_body;
pub use wire::{render_tool_result, render_tools};

use self::wire::{Arguments, CallDelta, ChoiceDelta, Chunk, ChunkUsage};
use super::config::{OPENAI_API_KEY, ProviderConfig};
use super::transport::{
    Decoder, Endpoint, EndpointSpec, Failure, Transient, classify_stream_error, is_local,
    parse_event,
};
use super::{EventStream, ModelRequest, Provider, ProviderError, Response, StreamEvent};
use crate::conversation::{Block, StopReason, Usage};

/// A client for an OpenAI-compatible chat completions endpoint.
pub struct OpenAiProvider {
    endpoint: Endpoint,
    token_limit_field: TokenLimitField,
}

impl OpenAiProvider {
    /// A client for the endpoint and key in `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let mut headers = Vec::new();
        if let Some(key) = &config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let hint = if is_local(base) {
            "start Ollama (`ollama serve`) or another OpenAI-compatible server there, \
             or set ANTHROPIC_API_KEY / OPENAI_API_KEY"
        } else {
            "check the address and your network connection"
        };
        let endpoint = Endpoint::new(EndpointSpec {
            url: format!("{base}/chat/completions"),
            base_url: config.base_url.clone(),
            model: config.model.clone(),
            headers,
            policy: config.retry_policy(),
            key_env: OPENAI_API_KEY,
            unreachable_hint: hint.to_owned(),
        })?;
        Ok(Self {
            endpoint,
            token_limit_field: TokenLimitField::for_base_url(base),
        })
    }
}

impl Provider for OpenAiProvider {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let model = self.endpoint.model_for(&request.model);
        let body = request_body(request, model, self.token_limit_field);
        self.endpoint.stream::<OpenAiDecoder>(&body, cancel)
    }
}

/// A tool call while its arguments stream.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
    /// Set once the call was reported complete.
    complete: Option<ToolCall>,
}

impl PartialCall {
    fn add(&mut self, index: usize, delta: CallDelta) {
        if let Some(id) = delta.id {
            self.id.push_str(&id);
        }
        let function = delta.function.unwrap_or_default();
        if let Some(name) = function.name {
            self.name.push_str(&name);
        }
        match function.arguments {
            Some(Arguments::Text(arguments)) => self.arguments.push_str(&arguments),
            // Some servers send the arguments as an object instead of JSON text.
            Some(Arguments::Object(arguments)) => {
                self.arguments = Value::Object(arguments).to_string();
            }
            Some(Arguments::Other(_)) | None => {}
        }
        if self.id.is_empty() {
            // Some local servers leave ids out; the conversation needs one to pair results.
            self.id = format!("call_{index}");
        }
    }

    /// Reports the call as started, once.
    fn report_start(&mut self, out: &mut VecDeque<StreamEvent>) {
        if !self.started {
            self.started = true;
            out.push_back(StreamEvent::ToolUseStarted {
                id: self.id.clone(),
                name: self.name.clone(),
            });
        }
    }

    /// The call is complete: its arguments are parsed, once, and the call reported.
    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        if self.complete.is_some() {
            return;
        }
        self.report_start(out);
        let call = ToolCall::from_json_text(&self.id, &self.name, &self.arguments);
        out.push_back(StreamEvent::ToolCall(call.clone()));
        self.complete = Some(call);
    }
}

/// Turns chat completion chunks into stream events and a response.
#[derive(Debug, Default)]
struct OpenAiDecoder {
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, data: &str, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = parse_event(data)?;
        if let Some(error) = chunk.error {
            return Err(classify_stream_error(&error, OPENAI_API_KEY));
        }
        if let Some(usage) = chunk.usage {
            self.read_usage(usage);
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                self.read_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    fn finish(mut self, out: &mut VecDeque<StreamEvent>) -> Result<Response, Failure> {
        // Some servers end without `[DONE]`; a finish reason says the answer is whole all the same.
        if !self.done && self.finish_reason.is_none() {
            return Err(Failure::Transient(Transient::stream(
                "the response stream ended before the answer finished",
            )));
        }
        self.complete_calls_before(None, out);
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            // No signature: the format cannot send reasoning back, so it is kept for the record.
            content.push(Block::Thinking {
                thinking: self.reasoning,
                signature: String::new(),
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        let calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .filter_map(|call| call.complete)
            .collect();
        // Some local servers say "stop" even when the answer is tool calls; the calls decide.
        let stop_reason = match self.finish_reason.as_deref().map(stop_reason) {
            Some(StopReason::EndTurn) | None if !calls.is_empty() => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::EndTurn,
        };
        content.extend(calls.into_iter().map(Block::from));
        Ok(Response::assistant(content, stop_reason, self.usage))
    }
}

impl OpenAiDecoder {
    /// Completes every call below `index` that is not complete yet: a call is whole once the
    /// next one starts, so it can run while the model goes on.
    fn complete_calls_before(&mut self, index: Option<usize>, out: &mut VecDeque<StreamEvent>) {
        for (_, call) in self
            .calls
            .iter_mut()
            .take_while(|(i, _)| index.is_none_or(|index| **i < index))
        {
            call.complete(out);
        }
    }

    fn read_usage(&mut self, usage: ChunkUsage) {
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let cached = usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0);
        self.usage = Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        };
    }

    fn read_delta(&mut self, delta: ChoiceDelta, out: &mut VecDeque<StreamEvent>) {
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            out.push_back(StreamEvent::TextDelta(text));
        }
        // Servers that stream reasoning name it differently.
        for text in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !text.is_empty() {
                self.reasoning.push_str(&text);
                out.push_back(StreamEvent::ThinkingDelta(text));
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let index = call.index.unwrap_or(0);
            if !self.calls.contains_key(&index) {
                self.complete_calls_before(Some(index), out);
            }
            let partial = self.calls.entry(index).or_default();
            partial.add(index, call);
            // A call counts as started once its name is known.
            if !partial.name.is_empty() {
                partial.report_start(out);
            }
        }
    }
}

fn stop_reason(name: &str) -> StopReason {
    match name {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;
    use crate::provider::transport::decode_all;

    fn decode(chunks: &[&str]) -> (Result<Response, Failure>, Vec<StreamEvent>) {
        decode_all::<OpenAiDecoder>(chunks)
    }

    #[test]
    fn a_whole_tool_call_in_one_chunk_without_id_and_with_stop() {
        // How Ollama streams tool calls: all at once, no id, and finish_reason "stop".
        let (result, events) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"glob","arguments":{"pattern":"*.rs"}}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"index":1,"function":{"name":"grep","arguments":"{\"pattern\":\"fn\"}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let response = result.unwrap();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let calls: Vec<_> = response.message.tool_uses().collect();
        assert_eq!(calls[0], ("call_0", "glob", &json!({"pattern": "*.rs"})));
        assert_eq!(calls[1], ("call_1", "grep", &json!({"pattern": "fn"})));
        let reported: Vec<&ToolCall> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(
            reported,
            [
                &ToolCall::new("call_0", "glob", json!({"pattern": "*.rs"})),
                &ToolCall::new("call_1", "grep", json!({"pattern": "fn"})),
            ]
        );
    }

    #[test]
    fn nulls_where_values_usually_are_are_read_as_nothing() {
        let (result, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(result.unwrap().message.text(), "ok");
    }

    #[test]
    fn a_finish_reason_without_done_is_a_whole_answer() {
        let (result, _) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(result.unwrap().message.text(), "hi");
    }

    #[test]
    fn a_stream_without_an_end_is_transient() {
        let (result, _) =
            decode(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#]);
        assert!(matches!(result, Err(Failure::Transient(_))));
    }

    #[test]
    fn ollama_reasoning_field_is_thinking() {
        let (result, events) = decode(&[
            r#"{"choices":[{"index":0,"delta":{"reasoning":"hmm"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(events[0], StreamEvent::ThinkingDelta("hmm".into()));
        assert_eq!(result.unwrap().message.text(), "ok");
    }

    #[test]
    fn openai_itself_gets_max_completion_tokens() {
        assert_eq!(
            TokenLimitField::for_base_url("https://api.openai.com/v1"),
            TokenLimitField::MaxCompletionTokens
        );
        assert_eq!(
            TokenLimitField::for_base_url("http://localhost:11434/v1"),
            TokenLimitField::MaxTokens
        );
    }
}
