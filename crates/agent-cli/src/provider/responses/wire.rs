//! OpenAI's Responses API on the wire: the request body this client sends (instructions, input
//! items, function tools, client-side tool search) and the streamed events it reads.
//!
//! The client is stateless: nothing is stored at OpenAI (`store: false`), so every request
//! carries the whole conversation, reasoning items included (their encrypted content, asked for
//! with `include`), and no `previous_response_id` is needed. With native activation the request
//! declares `tool_search` as a client-executed tool search: the model asks with a
//! `tool_search_call`, the answer is a `tool_search_output` holding the found tools' definitions,
//! and the tools array itself never changes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{Content, ToolCall, ToolResult};
use tool_pool::{Activation, RequestTools, TOOL_SEARCH};

use crate::conversation::{Block, Message, Role};
use crate::provider::{ModelRequest, Thinking};

// The request body's types borrow the request where they can. Their fields are declared in
// alphabetical order, so the body's bytes are those of its JSON value with sorted keys.

/// The body of a streaming Responses API request.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    include: [&'static str; 1],
    input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    max_output_tokens: u32,
    model: &'a str,
    prompt_cache_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

/// How much the model reasons, and that it sums its reasoning up for the user.
#[derive(Debug, Serialize)]
struct Reasoning {
    effort: &'static str,
    summary: &'static str,
}

impl Reasoning {
    /// The effort a thinking setting stands for: a budget maps to the nearest effort.
    fn of(thinking: Thinking) -> Option<Self> {
        let effort = match thinking {
            Thinking::Off => return None,
            Thinking::Adaptive => "medium",
            Thinking::Budget(budget) if budget < 4_096 => "low",
            Thinking::Budget(budget) if budget < 16_384 => "medium",
            Thinking::Budget(_) => "high",
        };
        Some(Self {
            effort,
            summary: "auto",
        })
    }
}

/// One tool of the array.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Function(FunctionTool<'a>),
    /// `tool_search`, executed by this client: the model's `tool_search_call` items come back
    /// as calls of the pool's own tool.
    ToolSearch {
        description: &'a str,
        execution: &'static str,
        parameters: &'a Value,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// A function tool. `strict` is off: MCP servers' schemas rarely meet strict mode's rules.
#[derive(Debug, Serialize)]
struct FunctionTool<'a> {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
    strict: bool,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> FunctionTool<'a> {
    fn of(tool: tool_pool::ToolDeclaration<'a>, defer_loading: bool) -> Self {
        Self {
            defer_loading,
            description: tool.description,
            name: tool.name,
            parameters: tool.input_schema,
            strict: false,
            kind: "function",
        }
    }
}

/// One input item.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Message {
        content: Vec<Part<'a>>,
        role: &'static str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Reasoning {
        encrypted_content: &'a str,
        summary: Vec<Summary<'a>>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    FunctionCall {
        arguments: Cow<'a, str>,
        call_id: &'a str,
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: String,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolSearchCall {
        arguments: &'a Value,
        call_id: &'a str,
        execution: &'static str,
        status: &'static str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolSearchOutput {
        call_id: &'a str,
        execution: &'static str,
        status: &'static str,
        tools: Vec<FunctionTool<'a>>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

impl<'a> Item<'a> {
    fn message(role: &'static str, content: Vec<Part<'a>>) -> Self {
        Self::Message {
            content,
            role,
            kind: "message",
        }
    }
}

/// A part of a message's content.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Image {
        image_url: String,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Debug, Serialize)]
struct Summary<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Whether the request searches deferred tools natively: `tool_search` is declared as the API's
/// client-executed tool search, and its calls and answers travel as `tool_search_call` and
/// `tool_search_output` items.
fn native_search(tools: &RequestTools) -> bool {
    tools.activation == Activation::Native
        && tools.tools.iter().any(|t| t.spec().name == TOOL_SEARCH)
}

/// The body of a streaming request for `request`, sent to `model`.
pub(crate) fn request_body<'a>(request: &'a ModelRequest, model: &'a str) -> RequestBody<'a> {
    let native = native_search(&request.tools);
    let mut input = Vec::new();
    for message in request.messages.iter() {
        render_message(message, native.then_some(&request.tools), &mut input);
    }
    let instructions = (!request.system.is_empty()).then(|| request.system.join("\n\n"));
    let prompt_cache_key = cache_key(model, instructions.as_deref().unwrap_or_default());
    RequestBody {
        include: ["reasoning.encrypted_content"],
        input,
        instructions,
        max_output_tokens: request.max_tokens,
        model,
        prompt_cache_key,
        reasoning: Reasoning::of(request.thinking),
        store: false,
        stream: true,
        tools: wire_tools(&request.tools, native),
    }
}

/// The key OpenAI routes a request's prompt cache by: the same for every request of a session
/// (its system prompt is fixed), and for sessions that share their start. FNV-1a, so the key is
/// the same from run to run.
fn cache_key(model: &str, instructions: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in model.bytes().chain([0]).chain(instructions.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("agent-cli-{hash:016x}")
}

/// The tools array. With native search, `tool_search` is the API's client tool search and the
/// found tools stay out of the array: each `tool_search_output` carries their definitions.
fn wire_tools(tools: &RequestTools, native: bool) -> Vec<WireTool<'_>> {
    let declarations = tools.declarations();
    let count = if native {
        tools.tools.len() - tools.deferred().len()
    } else {
        declarations.len()
    };
    declarations
        .into_iter()
        .take(count)
        .map(|tool| {
            if native && tool.name == TOOL_SEARCH {
                WireTool::ToolSearch {
                    description: tool.description,
                    execution: "client",
                    parameters: tool.input_schema,
                    kind: "tool_search",
                }
            } else {
                WireTool::Function(FunctionTool::of(tool, false))
            }
        })
        .collect()
}

/// The tools array as the API reads it (no native search).
pub fn render_tools(tools: &RequestTools) -> Value {
    serde_json::to_value(wire_tools(tools, false)).unwrap_or_default()
}

/// The text of a result, an error saying so in its first word; images are described in words
/// (a function's output here is text).
fn output_text(result: &ToolResult) -> String {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.clone(),
            Content::Image { media_type, .. } => {
                format!("[an image ({media_type}) that a function output cannot carry]")
            }
        })
        .collect();
    let text = parts.join("\n");
    if result.is_error && !text.starts_with("Error") {
        format!("Error: {text}")
    } else {
        text
    }
}

/// The items of one message. `native` holds the request's tools when `tool_search` is the API's
/// own; its calls and answers then take their own item types.
fn render_message<'a>(
    message: &'a Message,
    native: Option<&'a RequestTools>,
    out: &mut Vec<Item<'a>>,
) {
    match message.role {
        Role::User => render_user(message, native, out),
        Role::Assistant => render_assistant(message, native.is_some(), out),
    }
}

fn render_user<'a>(
    message: &'a Message,
    native: Option<&'a RequestTools>,
    out: &mut Vec<Item<'a>>,
) {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            Block::ToolResult(result) => match native.filter(|_| answers_search(result)) {
                Some(tools) => {
                    out.push(search_output(result, tools));
                    let text = result.text();
                    if !text.is_empty() {
                        parts.push(Part::Text {
                            text: Cow::Owned(text),
                            kind: "input_text",
                        });
                    }
                }
                None => out.push(Item::FunctionCallOutput {
                    call_id: &result.tool_use_id,
                    output: output_text(result),
                    kind: "function_call_output",
                }),
            },
            Block::Text { text } if !text.is_empty() => parts.push(Part::Text {
                text: Cow::Borrowed(text),
                kind: "input_text",
            }),
            Block::Image { media_type, data } => parts.push(Part::Image {
                image_url: format!("data:{media_type};base64,{data}"),
                kind: "input_image",
            }),
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(Item::message("user", parts));
    }
}

/// Whether `result` answers a `tool_search_call`: the decoder gave those calls' ids a prefix of
/// their own.
fn answers_search(result: &ToolResult) -> bool {
    result.tool_use_id.starts_with(SEARCH_CALL_PREFIX)
}

/// The prefix this client gives the ids of `tool_search_call` items it reads, so that their
/// answers are told apart from function outputs.
pub(crate) const SEARCH_CALL_PREFIX: &str = "tsc_";

/// A search's answer: the found tools the request declares deferred, with their definitions.
fn search_output<'a>(result: &'a ToolResult, tools: &'a RequestTools) -> Item<'a> {
    let found: Vec<&str> = tool_pool::tool_references(result);
    let definitions = tools
        .deferred()
        .iter()
        .filter(|tool| found.contains(&tool.spec().name.as_str()))
        .map(|tool| {
            let spec = tool.spec();
            FunctionTool::of(
                tool_pool::ToolDeclaration {
                    name: &spec.name,
                    description: &spec.description,
                    input_schema: &spec.input_schema,
                },
                true,
            )
        })
        .collect();
    Item::ToolSearchOutput {
        call_id: wire_call_id(&result.tool_use_id),
        execution: "client",
        status: "completed",
        tools: definitions,
        kind: "tool_search_output",
    }
}

/// The API's id of a call: a search call's without the prefix this client added.
fn wire_call_id(id: &str) -> &str {
    id.strip_prefix(SEARCH_CALL_PREFIX).unwrap_or(id)
}

fn render_assistant<'a>(message: &'a Message, native: bool, out: &mut Vec<Item<'a>>) {
    for block in &message.content {
        match block {
            // Reasoning goes back as the API gave it: its encrypted content (without which it
            // cannot be sent back: a chat server's reasoning has none) and its summary.
            Block::Thinking {
                thinking,
                signature,
            } if !signature.is_empty() => out.push(Item::Reasoning {
                encrypted_content: signature,
                summary: summary(thinking),
                kind: "reasoning",
            }),
            Block::RedactedThinking { data } if !data.is_empty() => out.push(Item::Reasoning {
                encrypted_content: data,
                summary: Vec::new(),
                kind: "reasoning",
            }),
            Block::Text { text } if !text.is_empty() => out.push(Item::message(
                "assistant",
                vec![Part::Text {
                    text: Cow::Borrowed(text),
                    kind: "output_text",
                }],
            )),
            Block::ToolUse(call) => out.push(call_item(call, native)),
            _ => {}
        }
    }
}

fn summary(thinking: &str) -> Vec<Summary<'_>> {
    if thinking.is_empty() {
        return Vec::new();
    }
    vec![Summary {
        text: thinking,
        kind: "summary_text",
    }]
}

fn call_item(call: &ToolCall, native: bool) -> Item<'_> {
    if native && call.name == TOOL_SEARCH && call.id.starts_with(SEARCH_CALL_PREFIX) {
        return Item::ToolSearchCall {
            arguments: &call.input,
            call_id: wire_call_id(&call.id),
            execution: "client",
            status: "completed",
            kind: "tool_search_call",
        };
    }
    // Input that did not parse went out as text; it goes back the same way.
    let arguments = match &call.input {
        Value::String(raw) => Cow::Borrowed(raw.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    Item::FunctionCall {
        arguments,
        call_id: &call.id,
        name: &call.name,
        kind: "function_call",
    }
}

/// One event of the stream. Events this client does not need (`response.created`,
/// `response.content_part.added`, ...) are read as [`Event::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum Event {
    /// An output item begins.
    #[serde(rename = "response.output_item.added")]
    ItemAdded {
        /// The item so far.
        item: OutputItem,
    },
    /// An output item is complete.
    #[serde(rename = "response.output_item.done")]
    ItemDone {
        /// Its place in the output.
        output_index: usize,
        /// The whole item.
        item: OutputItem,
    },
    /// A piece of text.
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        /// The piece.
        delta: String,
    },
    /// A piece of a reasoning summary.
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryDelta {
        /// The piece.
        delta: String,
    },
    /// The response is complete.
    #[serde(rename = "response.completed")]
    Completed {
        /// The response, for its usage.
        response: Finished,
    },
    /// The response stopped early (the output limit, a content filter).
    #[serde(rename = "response.incomplete")]
    Incomplete {
        /// The response, for its usage and why.
        response: Finished,
    },
    /// The response failed.
    #[serde(rename = "response.failed")]
    Failed {
        /// The response, with its error.
        response: Finished,
    },
    /// An error in the stream, kept whole for the error's message.
    #[serde(rename = "error")]
    Error {
        /// Its code, when it has one.
        #[serde(default)]
        code: Option<Value>,
        /// What went wrong.
        #[serde(default)]
        message: Option<String>,
    },
    /// An event this client does not need.
    #[serde(other)]
    Other,
}

/// One output item, as far as this client reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    /// Text for the user.
    Message {
        /// Its parts (`output_text`, `refusal`).
        #[serde(default)]
        content: Vec<OutputPart>,
    },
    /// Reasoning: a summary, and the encrypted whole that is sent back.
    Reasoning {
        /// The summary's parts.
        #[serde(default)]
        summary: Vec<OutputPart>,
        /// The reasoning, encrypted.
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// A function call.
    FunctionCall {
        /// The call's id, which its output names.
        #[serde(default)]
        call_id: String,
        /// The function.
        #[serde(default)]
        name: String,
        /// The arguments as JSON text.
        #[serde(default)]
        arguments: String,
    },
    /// A tool search this client runs.
    ToolSearchCall {
        /// The call's id, which its output names.
        #[serde(default)]
        call_id: Option<String>,
        /// The item's own id, used when the call has no `call_id`.
        #[serde(default)]
        id: Option<String>,
        /// The search's arguments (an object, or JSON text).
        #[serde(default)]
        arguments: Value,
    },
    /// Items this client does not read (server tools).
    #[serde(other)]
    Other,
}

/// A text part of a message or summary.
#[derive(Debug, Deserialize)]
pub(crate) struct OutputPart {
    /// The text (`output_text`, `summary_text`) or refusal.
    #[serde(default, alias = "refusal")]
    pub text: String,
}

/// The response of the last event.
#[derive(Debug, Deserialize)]
pub(crate) struct Finished {
    /// Token usage.
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Why an incomplete response stopped.
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// Why a failed response failed.
    #[serde(default)]
    pub error: Option<Value>,
}

/// Why a response is incomplete.
#[derive(Debug, Deserialize)]
pub(crate) struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Token counts.
#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// What part of the input came from the cache.
    #[serde(default)]
    pub input_tokens_details: Option<InputDetails>,
}

/// What part of the input came from the cache.
#[derive(Debug, Deserialize)]
pub(crate) struct InputDetails {
    /// Cached input tokens.
    #[serde(default)]
    pub cached_tokens: u64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_body_is_serialised_in_sorted_key_order() {
        let request = ModelRequest {
            model: String::new(),
            system: vec!["one".into(), "two".into()],
            messages: Cow::Owned(vec![
                Message::user_text("hello"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Thinking {
                            thinking: "plan".into(),
                            signature: "enc".into(),
                        },
                        Block::ToolUse(ToolCall::new("call_1", "shell", json!({"command": "ls"}))),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult(ToolResult::error("call_1", "no"))],
                },
            ]),
            tools: RequestTools::default(),
            max_tokens: 100,
            thinking: Thinking::Budget(2_000),
        };
        let body = request_body(&request, "gpt");
        let bytes = serde_json::to_string(&body).unwrap_or_default();
        let value: Value = serde_json::from_str(&bytes).unwrap_or_default();
        assert_eq!(bytes, value.to_string());
        assert_eq!(value["instructions"], "one\n\ntwo");
        assert_eq!(
            value["reasoning"],
            json!({"effort": "low", "summary": "auto"})
        );
        assert_eq!(
            value["input"][1],
            json!({"type": "reasoning", "encrypted_content": "enc",
                   "summary": [{"type": "summary_text", "text": "plan"}]})
        );
        assert_eq!(value["input"][3]["output"], "Error: no");
        assert_eq!(value["store"], false);
        assert!(
            value["prompt_cache_key"]
                .as_str()
                .is_some_and(|k| k.len() == 26)
        );
    }
}
