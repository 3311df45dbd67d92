//! Anthropic's Messages API on the wire: the request body this client sends (system prompt,
//! messages, tools, `tool_result` blocks, cache breakpoints) and the streamed events it reads.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use tool_core::{Content, ToolCall, ToolResult};
use tool_pool::RequestTools;

use crate::conversation::{Block, Message, Role};
use crate::provider::{ModelRequest, Thinking};

// The request body's types borrow the request. Their fields are declared in alphabetical order,
// the order the body had when it was built as a `serde_json::Value`, so its bytes are the same.

/// The body of a streaming Messages API request.
///
/// The first system block is the stable prompt and carries a cache breakpoint; so does the last
/// tool of the stable part of the tools array, and the last block of a final user message, so
/// each turn reads the previous turns from the cache.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    max_tokens: u32,
    messages: Vec<WireMessage<'a>>,
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<TextBlock<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<WireThinking>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

/// `{"type": "enabled", "budget_tokens": N}` or `{"type": "adaptive"}`.
#[derive(Debug, Serialize)]
struct WireThinking {
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u32>,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl WireThinking {
    fn of(thinking: Thinking) -> Option<Self> {
        match thinking {
            Thinking::Off => None,
            Thinking::Adaptive => Some(Self {
                budget_tokens: None,
                kind: "adaptive",
            }),
            Thinking::Budget(budget) => Some(Self {
                budget_tokens: Some(budget),
                kind: "enabled",
            }),
        }
    }
}

/// The one kind of cache breakpoint the API has.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum CacheControl {
    Ephemeral,
}

#[derive(Debug, Serialize)]
struct TextBlock<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
    /// Declared but kept out of the prompt until a `tool_reference` names it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
}

#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    content: Vec<WireBlock<'a>>,
    role: &'static str,
}

/// A content block, with the cache breakpoint it may carry.
#[derive(Debug, Serialize)]
struct WireBlock<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
    #[serde(flatten)]
    kind: BlockKind<'a>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum BlockKind<'a> {
    Text {
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    RedactedThinking {
        data: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolUse {
        id: &'a str,
        #[serde(serialize_with = "object_or_empty")]
        input: &'a Value,
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolResult(ToolResultBlock<'a>),
    Image {
        source: ImageSource<'a>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// A `tool_result` content block.
#[derive(Debug, Serialize)]
pub(crate) struct ToolResultBlock<'a> {
    content: Vec<ResultContent<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
    tool_use_id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text {
        text: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    /// Loads a tool the request declares deferred.
    ToolReference {
        tool_name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    data: &'a str,
    media_type: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> ImageSource<'a> {
    fn base64(media_type: &'a str, data: &'a str) -> Self {
        Self {
            data,
            media_type,
            kind: "base64",
        }
    }
}

/// The API takes only an object as a tool use's input; input that did not parse goes back
/// empty, and the tool's error result tells the model what was wrong with it.
fn object_or_empty<S: Serializer>(input: &&Value, serializer: S) -> Result<S::Ok, S::Error> {
    if input.is_object() {
        input.serialize(serializer)
    } else {
        serializer
            .serialize_map(Some(0))
            .and_then(serde::ser::SerializeMap::end)
    }
}

/// The body of a streaming request for `request`, sent to `model`.
pub(crate) fn request_body<'a>(request: &'a ModelRequest<'_>, model: &'a str) -> RequestBody<'a> {
    let system = request
        .system
        .iter()
        .enumerate()
        .map(|(i, text)| TextBlock {
            cache_control: (i == 0).then_some(CacheControl::Ephemeral),
            text,
            kind: "text",
        })
        .collect();
    RequestBody {
        max_tokens: request.max_tokens,
        messages: render_messages(&request.messages, &request.tools),
        model,
        stream: true,
        system,
        thinking: WireThinking::of(request.thinking),
        tools: wire_tools(&request.tools),
    }
}

/// The tools array, with a cache breakpoint on the last tool of the stable part: everything up
/// to it stays byte-identical from request to request, so the prompt cache keeps hitting. Tools
/// found with native activation follow it declared deferred, which the API keeps out of that
/// prefix (it shows each where a `tool_reference` loads it).
fn wire_tools(tools: &RequestTools) -> Vec<WireTool<'_>> {
    let deferred_from = tools.tools.len() - tools.deferred().len();
    tools
        .declarations()
        .into_iter()
        .enumerate()
        .map(|(i, tool)| WireTool {
            cache_control: (i + 1 == tools.stable_len).then_some(CacheControl::Ephemeral),
            defer_loading: i >= deferred_from,
            description: tool.description,
            input_schema: tool.input_schema,
            name: tool.name,
        })
        .collect()
}

/// The tools array as the API reads it.
pub fn render_tools(tools: &RequestTools) -> Value {
    serde_json::to_value(wire_tools(tools)).unwrap_or_default()
}

/// A `tool_result` content block.
pub(crate) fn tool_result_block(result: &ToolResult) -> ToolResultBlock<'_> {
    let content = result
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => ResultContent::Text { text, kind: "text" },
            Content::Image { media_type, data } => ResultContent::Image {
                source: ImageSource::base64(media_type, data),
                kind: "image",
            },
        })
        .collect();
    ToolResultBlock {
        content,
        is_error: result.is_error,
        tool_use_id: &result.tool_use_id,
        kind: "tool_result",
    }
}

/// The `tool_result` of a search that loaded tools natively: one `tool_reference` block per
/// tool the request declares deferred (the API refuses a reference to any other), and the
/// result's text apart, to go after the message's results. `None` when it references none.
fn referencing_block<'a>(
    result: &'a ToolResult,
    tools: &RequestTools,
) -> Option<(ToolResultBlock<'a>, Vec<&'a str>)> {
    let content: Vec<ResultContent<'a>> = tool_pool::tool_references(result)
        .into_iter()
        .filter(|name| tools.is_deferred(name))
        .map(|tool_name| ResultContent::ToolReference {
            tool_name,
            kind: "tool_reference",
        })
        .collect();
    if content.is_empty() {
        return None;
    }
    let texts = result
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let block = ToolResultBlock {
        content,
        is_error: result.is_error,
        tool_use_id: &result.tool_use_id,
        kind: "tool_result",
    };
    Some((block, texts))
}

/// A `tool_result` content block as JSON.
pub fn render_tool_result(result: &ToolResult) -> Value {
    serde_json::to_value(tool_result_block(result)).unwrap_or_default()
}

/// A message's blocks. The text of a result that loaded tools natively goes after the message's
/// other blocks: a `tool_result` of references carries nothing else.
fn message_blocks<'a>(message: &'a Message, tools: &RequestTools) -> Vec<WireBlock<'a>> {
    let mut moved = Vec::new();
    let mut blocks: Vec<WireBlock<'a>> = message
        .content
        .iter()
        .filter_map(|block| match block {
            Block::ToolResult(result) => match referencing_block(result, tools) {
                Some((block, texts)) => {
                    moved.extend(texts);
                    Some(BlockKind::ToolResult(block))
                }
                None => wire_block(block),
            },
            other => wire_block(other),
        })
        .map(|kind| WireBlock {
            cache_control: None,
            kind,
        })
        .collect();
    blocks.extend(moved.into_iter().map(|text| WireBlock {
        cache_control: None,
        kind: BlockKind::Text { text, kind: "text" },
    }));
    blocks
}

fn render_messages<'a>(messages: &'a [Message], tools: &RequestTools) -> Vec<WireMessage<'a>> {
    let mut rendered: Vec<WireMessage<'_>> = messages
        .iter()
        .map(|message| WireMessage {
            content: message_blocks(message, tools),
            role: match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
        })
        .collect();
    // A breakpoint on the newest user block caches the whole conversation for the next turn.
    if let Some(last) = rendered.last_mut()
        && last.role == "user"
        && let Some(block) = last.content.last_mut()
    {
        block.cache_control = Some(CacheControl::Ephemeral);
    }
    rendered
}

fn wire_block(block: &Block) -> Option<BlockKind<'_>> {
    Some(match block {
        // The API rejects empty text blocks.
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => BlockKind::Text { text, kind: "text" },
        Block::Thinking {
            thinking,
            signature,
        } => BlockKind::Thinking {
            signature,
            thinking,
            kind: "thinking",
        },
        Block::RedactedThinking { data } => BlockKind::RedactedThinking {
            data,
            kind: "redacted_thinking",
        },
        Block::ToolUse(ToolCall { id, name, input }) => BlockKind::ToolUse {
            id,
            input,
            name,
            kind: "tool_use",
        },
        Block::ToolResult(result) => BlockKind::ToolResult(tool_result_block(result)),
        Block::Image { media_type, data } => BlockKind::Image {
            source: ImageSource::base64(media_type, data),
            kind: "image",
        },
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_core::{Content, ToolCall, ToolResult};

    use std::borrow::Cow;

    use super::*;

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

    /// References name only tools the request declares deferred; the result's text follows the
    /// message's results; nothing is declared deferred when no tool would stay loaded.
    #[test]
    fn native_references_obey_the_api_rules() {
        let mut request = native_request();
        let body = serde_json::to_value(request_body(&request, "m")).unwrap_or_default();
        assert_eq!(body["tools"][0].get("defer_loading"), None);
        assert_eq!(body["tools"][1]["defer_loading"], true);
        let answer = &body["messages"][2]["content"];
        assert_eq!(
            answer[0]["content"],
            json!([{"type": "tool_reference", "tool_name": "found"}])
        );
        assert_eq!(answer[1]["text"], "Found 2 tool(s).");
        request.tools.stable_len = 0;
        let body = serde_json::to_value(request_body(&request, "m")).unwrap_or_default();
        assert!(!body.to_string().contains("defer_loading"));
        assert!(!body.to_string().contains("tool_reference"));
        assert_eq!(
            body["messages"][2]["content"][0]["content"][0]["text"],
            "Found 2 tool(s)."
        );
    }

    /// A conversation with every kind of block, a tool result with an image, an error result and
    /// input that did not parse.
    fn request() -> ModelRequest<'static> {
        let result = ToolResult {
            content: vec![
                Content::text("seen"),
                Content::Image {
                    media_type: "image/png".into(),
                    data: "aGk=".into(),
                },
            ],
            ..ToolResult::error("toolu_1", "x")
        };
        let ok = ToolResult {
            is_error: false,
            ..ToolResult::error("toolu_2", "fine")
        };
        ModelRequest {
            model: "claude".into(),
            system: vec!["stable".into(), "volatile".into()],
            messages: Cow::Owned(vec![
                Message::user_text("hello"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Thinking {
                            thinking: "hmm".into(),
                            signature: "sig".into(),
                        },
                        Block::RedactedThinking { data: "zz".into() },
                        Block::Text {
                            text: String::new(),
                        },
                        Block::Text { text: "ok".into() },
                        Block::ToolUse(ToolCall::new("toolu_1", "read_file", json!({"path": "a"}))),
                        Block::ToolUse(ToolCall::new("toolu_2", "shell", json!("{broken"))),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::ToolResult(result),
                        Block::ToolResult(ok),
                        Block::Image {
                            media_type: "image/jpeg".into(),
                            data: "anBn".into(),
                        },
                    ],
                },
            ]),
            tools: RequestTools::default(),
            max_tokens: 100,
            thinking: Thinking::Budget(2_048),
        }
    }

    /// The body's bytes are those of its JSON value with sorted keys: the bytes this client sent
    /// when it built the body as a `serde_json::Value`, so the prompt cache keeps its prefix.
    #[test]
    fn the_body_is_serialised_in_sorted_key_order() {
        let request = request();
        let body = request_body(&request, "claude");
        let bytes = serde_json::to_string(&body).unwrap();
        let sorted = serde_json::to_string(&serde_json::to_value(&body).unwrap()).unwrap();
        assert_eq!(bytes, sorted);
        let value: Value = serde_json::from_str(&bytes).unwrap();
        let assistant = &value["messages"][1]["content"];
        assert_eq!(assistant.as_array().unwrap().len(), 5, "{assistant}");
        assert_eq!(assistant[4]["input"], json!({}));
        let last = &value["messages"][2]["content"][2];
        assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(
            value["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(value["system"][1].get("cache_control").is_none());
        assert!(value.get("tools").is_none());
        assert_eq!(
            value["thinking"],
            json!({"type": "enabled", "budget_tokens": 2_048})
        );
        assert_eq!(value["messages"][2]["content"][0]["is_error"], json!(true));
        assert!(value["messages"][2]["content"][1].get("is_error").is_none());
    }
}
