//! OpenAI's chat completions on the wire: the request body this client sends (system message,
//! messages, function tools, `tool` messages) and the streamed chunks it reads.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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
}

// The request body's types borrow the request where they can. Their fields are declared in
// alphabetical order, the order the body had when it was built as a `serde_json::Value`, so its
// bytes are the same.

/// The body of a streaming chat completions request.
///
/// The system parts become one system message. Tool results become `tool` messages right after
/// the assistant message that called them, as the API requires; reasoning is not sent back,
/// since the format has no place for it.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    messages: Vec<WireMessage<'a>>,
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message; `content` is `null` for an assistant message of tool calls alone.
#[derive(Debug, Serialize)]
pub(crate) struct WireMessage<'a> {
    content: Option<WireContent<'a>>,
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
}

impl<'a> WireMessage<'a> {
    fn new(role: &'static str, content: Option<WireContent<'a>>) -> Self {
        Self {
            content,
            role,
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }
}

/// A message's content: a plain string, or content parts when there is an image.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Image {
        image_url: ImageUrl,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    /// Loads a tool the request declares deferred (in a `tool` message).
    ToolReference {
        tool_name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

impl<'a> Part<'a> {
    fn text(text: Cow<'a, str>) -> Self {
        Self::Text { text, kind: "text" }
    }
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    function: CallFunction<'a>,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct CallFunction<'a> {
    arguments: Cow<'a, str>,
    name: &'a str,
}

#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    /// Declared, but loaded only when a `tool_reference` part names it (servers that load
    /// deferred tools natively, the `nativeToolSearch` setting).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
    function: FunctionDeclaration<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct FunctionDeclaration<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
}

/// The body of a streaming request for `request`, sent to `model`.
pub(crate) fn request_body<'a>(
    request: &'a ModelRequest<'_>,
    model: &'a str,
    token_limit: TokenLimitField,
) -> RequestBody<'a> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        let system = request.system.join("\n\n");
        messages.push(WireMessage::new(
            "system",
            Some(WireContent::Text(Cow::Owned(system))),
        ));
    }
    for message in request.messages.iter() {
        render_message(message, &request.tools, &mut messages);
    }
    let limit = Some(request.max_tokens);
    RequestBody {
        max_completion_tokens: limit
            .filter(|_| token_limit == TokenLimitField::MaxCompletionTokens),
        max_tokens: limit.filter(|_| token_limit == TokenLimitField::MaxTokens),
        messages,
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: function_tools(&request.tools),
    }
}

fn function_tools(tools: &RequestTools) -> Vec<FunctionTool<'_>> {
    let deferred_from = tools.tools.len() - tools.deferred().len();
    tools
        .declarations()
        .into_iter()
        .enumerate()
        .map(|(i, tool)| FunctionTool {
            defer_loading: i >= deferred_from,
            function: FunctionDeclaration {
                description: tool.description,
                name: tool.name,
                parameters: tool.input_schema,
            },
            kind: "function",
        })
        .collect()
}

/// The tools array as function tools.
pub fn render_tools(tools: &RequestTools) -> Value {
    serde_json::to_value(function_tools(tools)).unwrap_or_default()
}

/// A `tool` message of a native search's result: its text, then a `tool_reference` part for each
/// tool it loaded that the request declares deferred; `None` when it references none.
fn referencing_message<'a>(
    result: &'a ToolResult,
    tools: &RequestTools,
) -> Option<WireMessage<'a>> {
    let references: Vec<Part<'a>> = tool_pool::tool_references(result)
        .into_iter()
        .filter(|name| tools.is_deferred(name))
        .map(|tool_name| Part::ToolReference {
            tool_name,
            kind: "tool_reference",
        })
        .collect();
    if references.is_empty() {
        return None;
    }
    let mut parts = vec![Part::text(Cow::Owned(result.text()))];
    parts.extend(references);
    Some(WireMessage {
        tool_call_id: Some(&result.tool_use_id),
        ..WireMessage::new("tool", Some(WireContent::Parts(parts)))
    })
}

/// A `tool` message. The format carries text only, so images are described in words, and an
/// error says so in its first word.
pub(crate) fn tool_message(result: &ToolResult) -> WireMessage<'_> {
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
    WireMessage {
        tool_call_id: Some(&result.tool_use_id),
        ..WireMessage::new("tool", Some(WireContent::Text(Cow::Owned(text))))
    }
}

/// A `tool` message as JSON.
pub fn render_tool_result(result: &ToolResult) -> Value {
    serde_json::to_value(tool_message(result)).unwrap_or_default()
}

fn render_message<'a>(message: &'a Message, tools: &RequestTools, out: &mut Vec<WireMessage<'a>>) {
    match message.role {
        Role::User => {
            let mut texts: Vec<&str> = Vec::new();
            let mut images = Vec::new();
            for block in &message.content {
                match block {
                    Block::ToolResult(result) => out.push(
                        referencing_message(result, tools).unwrap_or_else(|| tool_message(result)),
                    ),
                    Block::Text { text } => texts.push(text),
                    Block::Image { media_type, data } => images.push(Part::Image {
                        image_url: ImageUrl {
                            url: format!("data:{media_type};base64,{data}"),
                        },
                        kind: "image_url",
                    }),
                    _ => {}
                }
            }
            let text = match texts.as_slice() {
                [one] => Cow::Borrowed(*one),
                many => Cow::Owned(many.concat()),
            };
            if !images.is_empty() {
                // Content parts only when there is an image, so text-only requests keep the
                // plain string that every compatible server takes.
                let mut parts = vec![Part::text(text)];
                parts.extend(images);
                push_user(out, WireContent::Parts(parts));
            } else if !text.is_empty() {
                push_user(out, WireContent::Text(text));
            }
        }
        Role::Assistant => out.push(render_assistant(message)),
    }
}

/// Adds a user message, or joins it to the user message just before: servers with strict chat
/// templates refuse two user messages in a row (a summary request after the user's prompt, a
/// compaction's summary before a kept prompt).
fn push_user<'a>(out: &mut Vec<WireMessage<'a>>, content: WireContent<'a>) {
    let previous = out
        .last_mut()
        .filter(|last| last.role == "user")
        .and_then(|last| last.content.as_mut());
    let Some(previous) = previous else {
        out.push(WireMessage::new("user", Some(content)));
        return;
    };
    let first = std::mem::replace(previous, WireContent::Parts(Vec::new()));
    *previous = match (first, content) {
        (WireContent::Text(first), WireContent::Text(second)) => {
            WireContent::Text(Cow::Owned(format!("{first}\n\n{second}")))
        }
        (first, second) => {
            let mut parts = as_parts(first);
            parts.extend(as_parts(second));
            WireContent::Parts(parts)
        }
    };
}

/// Message content as content parts.
fn as_parts(content: WireContent<'_>) -> Vec<Part<'_>> {
    match content {
        WireContent::Parts(parts) => parts,
        WireContent::Text(text) => vec![Part::text(text)],
    }
}

fn render_assistant(message: &Message) -> WireMessage<'_> {
    let text = message.text();
    let tool_calls = message
        .tool_uses()
        .map(|(id, name, input)| {
            // Input that did not parse went out as text; it goes back the same way.
            let arguments = match input {
                Value::String(raw) => Cow::Borrowed(raw.as_str()),
                other => Cow::Owned(other.to_string()),
            };
            WireCall {
                function: CallFunction { arguments, name },
                id,
                kind: "function",
            }
        })
        .collect();
    WireMessage {
        tool_calls,
        ..WireMessage::new(
            "assistant",
            (!text.is_empty()).then_some(WireContent::Text(Cow::Owned(text))),
        )
    }
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
    use serde_json::json;
    use tool_core::ToolCall;

    use std::borrow::Cow;

    use super::*;
    use crate::provider::Thinking;

    /// A declared tool that is never called.
    struct Declared(tool_core::ToolSpec);

    #[async_trait::async_trait]
    impl tool_core::Tool for Declared {
        type Input = Value;

        fn spec(&self, _: Value) -> tool_core::ToolSpec {
            self.0.clone()
        }

        async fn call(
            &self,
            _: Value,
            _: &tool_core::ToolContext,
        ) -> Result<tool_core::ToolOutput, tool_core::ToolError> {
            Err(tool_core::ToolError::failed("declared only"))
        }
    }

    /// `read_file` loaded, `found` declared deferred after it (native activation), and a
    /// search's result referencing `found` and `gone` (a tool no longer in the request).
    fn native_request() -> ModelRequest<'static> {
        let declared = |name: &str| {
            tool_core::AnyTool::new(Declared(tool_core::ToolSpec::new(
                name,
                "A tool.",
                json!({"type": "object"}),
            )))
        };
        let search = ToolResult {
            structured: Some(json!({"tool_references": ["found", "gone"]})),
            is_error: false,
            ..ToolResult::error("toolu_s", "Found 2 tool(s).")
        };
        ModelRequest {
            model: "m".into(),
            system: vec!["s".into()],
            messages: std::borrow::Cow::Owned(vec![
                Message::user_text("go"),
                Message {
                    role: Role::Assistant,
                    content: vec![Block::ToolUse(ToolCall::new(
                        "toolu_s",
                        "tool_search",
                        json!({"query": "x"}),
                    ))],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult(search)],
                },
            ]),
            tools: RequestTools {
                tools: vec![declared("read_file"), declared("found")],
                stable_len: 1,
                activation: tool_pool::Activation::Native,
            },
            max_tokens: 100,
            thinking: Thinking::Off,
        }
    }

    /// A chat server declared capable gets the found tool as a deferred function and the
    /// search's answer as text plus a reference part, only for a tool it declares.
    #[test]
    fn native_chat_declares_deferred_functions_and_references_them() {
        let request = native_request();
        let body = serde_json::to_value(request_body(&request, "m", TokenLimitField::MaxTokens))
            .unwrap_or_default();
        assert_eq!(body["tools"][0].get("defer_loading"), None);
        assert_eq!(body["tools"][1]["defer_loading"], true);
        assert_eq!(
            body["messages"][3]["content"],
            json!([{"type": "text", "text": "Found 2 tool(s)."},
                   {"type": "tool_reference", "tool_name": "found"}])
        );
    }

    #[test]
    fn user_messages_in_a_row_go_out_as_one() {
        let (summary, prompt) = (
            Message::user_text("the summary"),
            Message::user_text("fix the bug"),
        );
        let image = Message {
            role: Role::User,
            content: vec![Block::Image {
                media_type: "image/png".into(),
                data: "iVBORw==".into(),
            }],
        };
        let mut out = Vec::new();
        let tools = RequestTools::default();
        render_message(&summary, &tools, &mut out);
        render_message(&prompt, &tools, &mut out);
        let json = |out: &Vec<WireMessage<'_>>| serde_json::to_value(out).unwrap();
        assert_eq!(
            json(&out),
            json!([{"role": "user", "content": "the summary\n\nfix the bug"}])
        );
        render_message(&image, &tools, &mut out);
        let out = json(&out);
        assert_eq!(out.as_array().unwrap().len(), 1);
        assert_eq!(out[0]["content"][0]["text"], "the summary\n\nfix the bug");
        assert_eq!(out[0]["content"][2]["type"], "image_url");
    }

    /// The body's bytes are those of its JSON value with sorted keys: the bytes this client sent
    /// when it built the body as a `serde_json::Value`.
    #[test]
    fn the_body_is_serialised_in_sorted_key_order() {
        let result = ToolResult {
            is_error: false,
            ..ToolResult::error("call_1", "fine")
        };
        let request = ModelRequest {
            model: String::new(),
            system: vec!["one".into(), "two".into()],
            messages: Cow::Owned(vec![
                Message::user_text("hello"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::ToolUse(tool_core::ToolCall::new(
                            "call_1",
                            "shell",
                            json!({"command": "ls"}),
                        )),
                        Block::ToolUse(tool_core::ToolCall::new(
                            "call_2",
                            "shell",
                            json!("{broken"),
                        )),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::ToolResult(result),
                        Block::Text {
                            text: "next".into(),
                        },
                    ],
                },
            ]),
            tools: RequestTools::default(),
            max_tokens: 100,
            thinking: crate::provider::Thinking::Off,
        };
        for limit in [
            TokenLimitField::MaxTokens,
            TokenLimitField::MaxCompletionTokens,
        ] {
            let body = request_body(&request, "gpt", limit);
            let bytes = serde_json::to_string(&body).unwrap();
            let sorted = serde_json::to_string(&serde_json::to_value(&body).unwrap()).unwrap();
            assert_eq!(bytes, sorted);
        }
        let body = serde_json::to_value(request_body(&request, "gpt", TokenLimitField::MaxTokens))
            .unwrap();
        assert_eq!(body["max_tokens"], json!(100));
        assert!(body.get("max_completion_tokens").is_none());
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "one\n\ntwo"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][1]["function"]["arguments"],
            json!("{broken")
        );
        assert_eq!(body["messages"][3]["tool_call_id"], json!("call_1"));
        assert_eq!(
            body["messages"][4],
            json!({"role": "user", "content": "next"})
        );
    }
}
