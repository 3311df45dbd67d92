//! OpenAI-compatible chat completions, streamed: OpenAI itself and local servers such as Ollama,
//! llama.cpp and vLLM.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{CancellationToken, Content, ToolResult};
use tool_pool::RequestTools;

use super::config::{OPENAI_API_KEY, ProviderConfig};
use super::http::{
    Decoder, Endpoint, Failure, SseEvent, Transient, classify_stream_error, is_local,
    parse_tool_input,
};
use super::{ModelRequest, Provider, ProviderError, Response, StreamEvent, ToolFormat};
use crate::conversation::{Block, Message, Role, StopReason, Usage};

/// A client for an OpenAI-compatible chat completions endpoint.
pub struct OpenAiProvider {
    endpoint: Endpoint,
    model: String,
    token_limit_field: TokenLimitField,
}

/// Which field carries the output token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenLimitField {
    /// `max_completion_tokens`: OpenAI's own API, whose reasoning models refuse `max_tokens`.
    MaxCompletionTokens,
    /// `max_tokens`: what local OpenAI-compatible servers understand.
    MaxTokens,
}

impl TokenLimitField {
    /// The field for an endpoint: OpenAI's own API gets the new name, everything else the old.
    pub fn for_base_url(base_url: &str) -> Self {
        if base_url.contains("api.openai.com") {
            Self::MaxCompletionTokens
        } else {
            Self::MaxTokens
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
        }
    }
}

impl OpenAiProvider {
    /// A client for the endpoint and key in `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/');
        let mut headers = vec![
            ("content-type", "application/json".to_owned()),
            ("accept", "text/event-stream".to_owned()),
        ];
        if let Some(key) = &config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let hint = if is_local(base) {
            "start Ollama (`ollama serve`) or another OpenAI-compatible server there, \
             or set ANTHROPIC_API_KEY / OPENAI_API_KEY"
        } else {
            "check the address and your network connection"
        };
        let endpoint = Endpoint::new(
            format!("{base}/chat/completions"),
            config.base_url.clone(),
            headers,
            config.retry_policy(),
            OPENAI_API_KEY,
            hint.to_owned(),
        )?;
        Ok(Self {
            endpoint,
            model: config.model.clone(),
            token_limit_field: TokenLimitField::for_base_url(base),
        })
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn format(&self) -> ToolFormat {
        ToolFormat::OpenAi
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        events: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Response, ProviderError> {
        let mut body = request_body(request, self.token_limit_field);
        if request.model.is_empty() {
            body["model"] = Value::String(self.model.clone());
        }
        self.endpoint
            .stream(&body, OpenAiDecoder::default, events, cancel)
            .await
    }
}

/// The JSON body of a streaming chat completions request.
///
/// The system parts become one system message. Tool results become `tool` messages right after
/// the assistant message that called them, as the API requires; reasoning is not sent back,
/// since the format has no place for it.
pub fn request_body(request: &ModelRequest, token_limit: TokenLimitField) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system.join("\n\n")}));
    }
    for message in &request.messages {
        render_message(message, &mut messages);
    }
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    body[token_limit.name()] = json!(request.max_tokens);
    if request
        .tools
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
    {
        body["tools"] = request.tools.clone();
    }
    body
}

fn render_message(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::User => {
            let mut text = String::new();
            for block in &message.content {
                match block {
                    Block::ToolResult(result) => out.push(render_tool_result(result)),
                    Block::Text { text: t } => text.push_str(t),
                    _ => {}
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
        Role::Assistant => {
            let text = message.text();
            let calls: Vec<Value> = message
                .tool_uses()
                .map(|(id, name, input)| {
                    // Input that did not parse went out as text; it goes back the same way.
                    let arguments = match input {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    };
                    json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    })
                })
                .collect();
            let content = if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            let mut rendered = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                rendered["tool_calls"] = Value::Array(calls);
            }
            out.push(rendered);
        }
    }
}

/// The tools array as function tools.
pub fn render_tools(tools: &RequestTools) -> Value {
    let rendered: Vec<Value> = tools
        .declarations()
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            })
        })
        .collect();
    Value::Array(rendered)
}

/// A `tool` message. The format carries text only, so images are described in words, and an
/// error says so in its first word.
pub fn render_tool_result(result: &ToolResult) -> Value {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.clone(),
            Content::Image { media_type, .. } => {
                format!("[an image ({media_type}) that this provider format cannot carry]")
            }
        })
        .collect();
    let mut text = parts.join("\n");
    if result.is_error && !text.starts_with("Error") {
        text = format!("Error: {text}");
    }
    json!({"role": "tool", "tool_call_id": result.tool_use_id, "content": text})
}

/// A tool call while its arguments stream.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    started: bool,
    complete: bool,
}

/// Turns chat completion chunks into events and a response.
#[derive(Debug, Default)]
struct OpenAiDecoder {
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl OpenAiDecoder {
    /// Reports every call below `index` that is not reported yet: a call is complete once the
    /// next one starts, so it can run while the model goes on.
    fn complete_calls_before(
        &mut self,
        index: Option<u64>,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) {
        for (i, call) in &mut self.calls {
            if index.is_some_and(|index| *i >= index) || call.complete {
                continue;
            }
            call.complete = true;
            start_call(call, events);
            events(StreamEvent::ToolUseComplete {
                id: call.id.clone(),
                name: call.name.clone(),
                input_json: call.arguments.clone(),
            });
        }
    }

    fn read_usage(&mut self, usage: &Value) {
        let field = |name: &str| usage.pointer(name).and_then(Value::as_u64).unwrap_or(0);
        let prompt = field("/prompt_tokens");
        let cached = field("/prompt_tokens_details/cached_tokens");
        self.usage = Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: field("/completion_tokens"),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        };
    }

    fn read_delta(&mut self, delta: &Value, events: &mut (dyn FnMut(StreamEvent) + Send)) {
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            events(StreamEvent::TextDelta(text.to_owned()));
        }
        // Servers that stream reasoning name it differently: vLLM and DeepSeek
        // `reasoning_content`, Ollama and OpenRouter `reasoning`.
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.get(field).and_then(Value::as_str)
                && !text.is_empty()
            {
                self.reasoning.push_str(text);
                events(StreamEvent::ThinkingDelta(text.to_owned()));
            }
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for call in calls {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if !self.calls.contains_key(&index) {
                self.complete_calls_before(Some(index), events);
            }
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                partial.id.push_str(id);
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                partial.name.push_str(name);
            }
            match call.pointer("/function/arguments") {
                Some(Value::String(arguments)) => partial.arguments.push_str(arguments),
                // Some servers send the arguments as an object instead of JSON text.
                Some(arguments @ Value::Object(_)) => partial.arguments = arguments.to_string(),
                _ => {}
            }
            if partial.id.is_empty() {
                // Some local servers leave ids out; the conversation needs one to pair results.
                partial.id = format!("call_{index}");
            }
            if !partial.name.is_empty() {
                start_call(partial, events);
            }
        }
    }
}

fn start_call(call: &mut PartialCall, events: &mut (dyn FnMut(StreamEvent) + Send)) {
    if !call.started {
        call.started = true;
        events(StreamEvent::ToolUseStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
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

impl Decoder for OpenAiDecoder {
    fn event(
        &mut self,
        event: &SseEvent,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|err| {
            Failure::Fatal(ProviderError::Stream(format!(
                "a chunk is not JSON ({err}): {data}"
            )))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(classify_stream_error(error, OPENAI_API_KEY));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.read_usage(usage);
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if let Some(delta) = choice.get("delta") {
                self.read_delta(delta, events);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        Ok(())
    }

    fn finish(mut self, events: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<Response, Failure> {
        // Some servers end without `[DONE]`; a finish reason says the answer is whole all the same.
        if !self.done && self.finish_reason.is_none() {
            return Err(Failure::Transient(Transient::stream(
                "the response stream ended before the answer finished",
            )));
        }
        self.complete_calls_before(None, events);
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
        let has_calls = !self.calls.is_empty();
        content.extend(self.calls.into_values().map(|call| Block::ToolUse {
            id: call.id,
            name: call.name,
            input: parse_tool_input(&call.arguments),
        }));
        // Some local servers say "stop" even when the answer is tool calls; the calls decide.
        let stop_reason = match self.finish_reason.as_deref().map(stop_reason) {
            Some(StopReason::EndTurn) | None if has_calls => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::EndTurn,
        };
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn decode(chunks: &[&str]) -> (Result<Response, Failure>, Vec<StreamEvent>) {
        let mut decoder = OpenAiDecoder::default();
        let mut events = Vec::new();
        let mut sink = |e| events.push(e);
        for data in chunks {
            let event = SseEvent {
                event: None,
                data: (*data).to_owned(),
            };
            if let Err(failure) = decoder.event(&event, &mut sink) {
                return (Err(failure), events);
            }
        }
        let result = decoder.finish(&mut sink);
        (result, events)
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
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, StreamEvent::ToolUseComplete { .. }))
                .count(),
            2
        );
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
