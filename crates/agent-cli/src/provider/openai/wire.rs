//! OpenAI's chat completions on the wire: the request body this client sends (system message,
//! messages, function tools, `tool` messages) and the streamed chunks it reads.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tool_core::{Content, ToolResult};
use tool_pool::RequestTools;

use crate::conversation::{Block, Message, Role};
use crate::provider::ModelRequest;

/// Which field carries the output token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenLimitField {
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

    /// The field's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
        }
    }
}

/// The JSON body of a streaming chat completions request.
///
/// The system parts become one system message. Tool results become `tool` messages right after
/// the assistant message that called them, as the API requires; reasoning is not sent back,
/// since the format has no place for it.
pub(crate) fn request_body(
    request: &ModelRequest,
    model: &str,
    token_limit: TokenLimitField,
) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system.join("\n\n")}));
    }
    for message in &request.messages {
        render_message(message, &mut messages);
    }
    let mut body = json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    body[token_limit.name()] = json!(request.max_tokens);
    if !request.tools.tools.is_empty() {
        body["tools"] = render_tools(&request.tools);
    }
    body
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

fn render_message(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::User => {
            let mut text = String::new();
            let mut images = Vec::new();
            for block in &message.content {
                match block {
                    Block::ToolResult(result) => out.push(render_tool_result(result)),
                    Block::Text { text: t } => text.push_str(t),
                    Block::Image { media_type, data } => images.push(json!({
                        "type": "image_url",
                        "image_url": {"url": format!("data:{media_type};base64,{data}")},
                    })),
                    _ => {}
                }
            }
            if !images.is_empty() {
                // Content parts only when there is an image, so text-only requests keep the
                // plain string that every compatible server takes.
                let mut parts = vec![json!({"type": "text", "text": text})];
                parts.extend(images);
                push_user(out, Value::Array(parts));
            } else if !text.is_empty() {
                push_user(out, Value::String(text));
            }
        }
        Role::Assistant => out.push(render_assistant(message)),
    }
}

/// Adds a user message, or joins it to the user message just before: servers with strict chat
/// templates refuse two user messages in a row (a summary request after the user's prompt, a
/// compaction's summary before a kept prompt).
fn push_user(out: &mut Vec<Value>, content: Value) {
    let previous = out
        .last_mut()
        .filter(|last| last["role"] == "user")
        .map(|last| &mut last["content"]);
    let Some(previous) = previous else {
        out.push(json!({"role": "user", "content": content}));
        return;
    };
    *previous = match (previous.take(), content) {
        (Value::String(first), Value::String(second)) => {
            Value::String(format!("{first}\n\n{second}"))
        }
        (first, second) => {
            let mut parts = as_parts(first);
            parts.extend(as_parts(second));
            Value::Array(parts)
        }
    };
}

/// Message content as content parts.
fn as_parts(content: Value) -> Vec<Value> {
    match content {
        Value::Array(parts) => parts,
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        other => vec![other],
    }
}

fn render_assistant(message: &Message) -> Value {
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
    rendered
}

/// One chunk of a streamed chat completion. Every field may be missing or `null`: servers that
/// call themselves OpenAI-compatible differ in what they leave out.
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub usage: Option<ChunkUsage>,
    /// An error reported mid-stream, kept whole for the error's message.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One choice of a chunk (this client asks for one).
#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub delta: Option<ChoiceDelta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Deserialize)]
pub(crate) struct ChoiceDelta {
    #[serde(default)]
    pub content: Option<String>,
    /// Reasoning as vLLM and DeepSeek name it.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// Reasoning as Ollama and OpenRouter name it.
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<CallDelta>>,
}

/// A piece of one tool call.
#[derive(Debug, Deserialize)]
pub(crate) struct CallDelta {
    /// Which call; some servers leave it out when there is one.
    #[serde(default)]
    pub index: Option<usize>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

/// A piece of a call's function.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<Arguments>,
}

/// A call's arguments: a piece of JSON text, or (from some servers) the whole object at once.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Arguments {
    Text(String),
    Object(Map<String, Value>),
    Other(serde::de::IgnoredAny),
}

/// The usage of the last chunk.
#[derive(Debug, Deserialize)]
pub(crate) struct ChunkUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// What part of the prompt came from the cache.
#[derive(Debug, Deserialize)]
pub(crate) struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_messages_in_a_row_go_out_as_one() {
        let mut out = Vec::new();
        render_message(&Message::user_text("the summary"), &mut out);
        render_message(&Message::user_text("fix the bug"), &mut out);
        assert_eq!(
            out,
            [json!({"role": "user", "content": "the summary\n\nfix the bug"})]
        );
        render_message(
            &Message {
                role: Role::User,
                content: vec![Block::Image {
                    media_type: "image/png".into(),
                    data: "iVBORw==".into(),
                }],
            },
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["content"][0]["text"], "the summary\n\nfix the bug");
        assert_eq!(out[0]["content"][2]["type"], "image_url");
    }
}
