//! A scripted model provider on loopback: it speaks Anthropic's Messages API, OpenAI's chat
//! completions and OpenAI's Responses API (chosen by the request path), plays back one scripted turn per request, and
//! records every request for assertions.
//!
//! ```ignore
//! let server = ScriptedServer::start(vec![
//!     Turn::error(529, json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
//!     Turn::tool_use("toolu_1", "read_file", json!({"path": "src/lib.rs"})),
//!     Turn::text("Done."),
//! ]).await;
//! // Anthropic base: server.url(); OpenAI base: server.openai_url().
//! ```
//!
//! Several conversations at once (a main agent and its sub-agents) each follow their own script,
//! told apart by their system prompt or first user message:
//!
//! ```ignore
//! let server = ScriptedServer::routed(
//!     vec![Turn::tool_use("toolu_1", "agent", json!({"description": "look", "prompt": "Find A"})), Turn::text("Done.")],
//!     vec![(Matcher::first_user("Find A"), vec![Turn::text("A is in a.txt")])],
//! ).await;
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use agent_cli::conversation::Block;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The turns to play, in order: one per request.
pub type Script = Vec<Turn>;

/// Token counts a scripted answer reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache (Anthropic only).
    pub cache_write: u64,
}

/// A successful scripted answer.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The blocks, in order: text and reasoning stream in a few pieces (OpenAI-style servers
    /// stream reasoning as `reasoning_content` and leave redacted reasoning out), and a tool
    /// call's input JSON is split across several deltas.
    pub blocks: Vec<Block>,
    /// The stop reason in Anthropic's words (`end_turn`, `tool_use`, `max_tokens`); mapped for
    /// OpenAI. Derived from the blocks when unset.
    pub stop: Option<String>,
    /// The usage to report.
    pub usage: ScriptUsage,
}

/// What the server does for one request.
#[derive(Debug, Clone)]
pub enum Turn {
    /// Stream an answer.
    Reply(Reply),
    /// Answer with an error status and JSON body.
    Error {
        /// The HTTP status.
        status: u16,
        /// The body.
        body: Value,
        /// Extra headers, such as `retry-after`.
        headers: Vec<(String, String)>,
    },
    /// Start streaming this answer, then stop sending (without closing) after its first text
    /// piece; for cancellation tests.
    Stall(Reply),
    /// Close the connection without answering.
    Disconnect,
    /// Start streaming this answer, then close the connection after its first text piece.
    Cut(Reply),
    /// Start streaming this answer, then report `error` (Anthropic's `{"type", "message"}`
    /// object) inside the stream after its first text piece: an `error` event for Anthropic,
    /// a chunk with an `error` object for OpenAI.
    StreamError {
        /// The answer that starts streaming.
        reply: Reply,
        /// The error object.
        error: Value,
    },
    /// Wait at `gate` until enough requests arrived there, then play `turn`; when they do not
    /// arrive in time, answer with a text saying so instead.
    Gated {
        /// Where the requests meet.
        gate: Gate,
        /// What to play once they have.
        turn: Box<Turn>,
    },
}

/// Holds requests until `needed` of them arrived: a scripted answer behind a gate of two is only
/// given when two conversations are waiting at the same time.
#[derive(Debug, Clone)]
pub struct Gate {
    needed: usize,
    arrived: Arc<tokio::sync::watch::Sender<usize>>,
}

impl Gate {
    /// A gate that opens once `needed` requests reached it.
    pub fn new(needed: usize) -> Self {
        Self {
            needed,
            arrived: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }

    /// Counts this request and waits (at most ten seconds) for the others; whether they came.
    async fn pass(&self) -> bool {
        self.arrived.send_modify(|count| *count += 1);
        let mut arrived = self.arrived.subscribe();
        let needed = self.needed;
        let waited = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            arrived.wait_for(|count| *count >= needed),
        )
        .await;
        matches!(waited, Ok(Ok(_)))
    }
}

/// Which conversation a request belongs to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// The system prompt contains this text.
    System(String),
    /// The first user message contains this text.
    FirstUser(String),
    /// The last message, a user's, contains this text (a compaction's summary request, say).
    LastUser(String),
}

impl Matcher {
    /// Requests whose system prompt contains `text`.
    pub fn system(text: impl Into<String>) -> Self {
        Self::System(text.into())
    }

    /// Requests whose first user message contains `text`.
    pub fn first_user(text: impl Into<String>) -> Self {
        Self::FirstUser(text.into())
    }

    /// Requests whose last message is a user's containing `text`.
    pub fn last_user(text: impl Into<String>) -> Self {
        Self::LastUser(text.into())
    }

    fn matches(&self, body: &Value) -> bool {
        match self {
            Self::System(text) => system_text(body).contains(text.as_str()),
            Self::FirstUser(text) => first_user_text(body).contains(text.as_str()),
            Self::LastUser(text) => body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| {
                    m["role"] == "user" && content_text(&m["content"]).contains(text.as_str())
                }),
        }
    }
}

/// The system prompt of a request in any wire format.
fn system_text(body: &Value) -> String {
    let anthropic = content_text(&body["system"]) + body["instructions"].as_str().unwrap_or("");
    let openai: Vec<String> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| content_text(&m["content"]))
        .collect();
    format!("{anthropic}{}", openai.join("\n"))
}

/// The first user message of a request in any wire format.
fn first_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().or(body["input"].as_array());
    messages
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

/// A string, or the text blocks of an array joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The scripts of a server: each route's turns, and the default turns for requests no route
/// matches.
#[derive(Debug, Default)]
struct Scripts {
    default: VecDeque<Turn>,
    routes: Vec<(Matcher, VecDeque<Turn>)>,
}

impl Scripts {
    /// The next turn of the conversation `body` belongs to.
    fn next(&mut self, body: &Value) -> Option<Turn> {
        match self.routes.iter_mut().find(|(m, _)| m.matches(body)) {
            Some((_, turns)) => turns.pop_front(),
            None => self.default.pop_front(),
        }
    }
}

impl Turn {
    /// An answer with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Reply(Reply::default()).then_text(text)
    }

    /// An answer with one tool call.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::Reply(Reply::default()).then_tool_use(id, name, input)
    }

    /// An answer that starts with reasoning.
    pub fn thinking(thinking: impl Into<String>, signature: impl Into<String>) -> Self {
        Self::Reply(Reply::default()).push(Block::Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        })
    }

    /// An error answer.
    pub fn error(status: u16, body: Value) -> Self {
        Self::Error {
            status,
            body,
            headers: Vec::new(),
        }
    }

    /// An answer that stalls after its first text piece.
    pub fn stall(text: impl Into<String>) -> Self {
        match Self::text(text) {
            Self::Reply(reply) => Self::Stall(reply),
            other => other,
        }
    }

    /// An answer whose connection closes after its first text piece.
    pub fn cut(text: impl Into<String>) -> Self {
        match Self::text(text) {
            Self::Reply(reply) => Self::Cut(reply),
            other => other,
        }
    }

    /// An answer that reports an error mid-stream, after its first text piece.
    pub fn stream_error(text: impl Into<String>, error: Value) -> Self {
        match Self::text(text) {
            Self::Reply(reply) => Self::StreamError { reply, error },
            other => other,
        }
    }

    /// This turn, played once `gate` opens.
    pub fn gated(self, gate: &Gate) -> Self {
        Self::Gated {
            gate: gate.clone(),
            turn: Box::new(self),
        }
    }

    /// Adds a text block.
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.push(Block::Text { text: text.into() })
    }

    /// Adds a tool call.
    pub fn then_tool_use(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Self {
        self.push(Block::ToolUse(tool_core::ToolCall {
            id: id.into(),
            name: name.into(),
            input,
        }))
    }

    /// Adds a redacted reasoning block.
    pub fn then_redacted(self, data: impl Into<String>) -> Self {
        self.push(Block::RedactedThinking { data: data.into() })
    }

    /// Sets the stop reason (Anthropic's words).
    pub fn stop(mut self, stop: &str) -> Self {
        if let Self::Reply(reply) | Self::Stall(reply) = &mut self {
            reply.stop = Some(stop.to_owned());
        }
        self
    }

    /// Sets the usage.
    pub fn usage(mut self, usage: ScriptUsage) -> Self {
        if let Self::Reply(reply) | Self::Stall(reply) = &mut self {
            reply.usage = usage;
        }
        self
    }

    /// Adds a response header to an error turn.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Error { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    fn push(mut self, block: Block) -> Self {
        if let Self::Reply(reply) | Self::Stall(reply) = &mut self {
            reply.blocks.push(block);
        }
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The HTTP method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The headers, names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
}

/// The running server; it stops when dropped with the test's runtime.
pub struct ScriptedServer {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    arrived: tokio::sync::watch::Receiver<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    Anthropic,
    OpenAi,
    /// The Responses API; `true` when the request declares the client tool search, whose calls
    /// then go out as `tool_search_call` items.
    Responses(bool),
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and starts serving the script.
    pub async fn start(script: Script) -> Self {
        Self::routed(script, Vec::new()).await
    }

    /// Serves several conversations at once: a request plays the next turn of the first route
    /// whose matcher it fits, and of `default` when it fits none.
    pub async fn routed(default: Script, routes: Vec<(Matcher, Script)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let turns = Arc::new(Mutex::new(Scripts {
            default: VecDeque::from(default),
            routes: routes
                .into_iter()
                .map(|(matcher, script)| (matcher, VecDeque::from(script)))
                .collect(),
        }));
        let recorded = Arc::clone(&requests);
        let (count, arrived) = tokio::sync::watch::channel(0usize);
        let count = Arc::new(count);
        tokio::spawn(async move {
            let mut sequence = 0u32;
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                sequence += 1;
                let turns = Arc::clone(&turns);
                let recorded = Arc::clone(&recorded);
                let count = Arc::clone(&count);
                tokio::spawn(serve(stream, turns, recorded, count, sequence));
            }
        });
        Self {
            url,
            requests,
            arrived,
        }
    }

    /// Waits until `n` requests have arrived (panics after a minute, naming what did arrive).
    pub async fn wait_for_requests(&self, n: usize) {
        let mut arrived = self.arrived.clone();
        let waited = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            arrived.wait_for(|count| *count >= n),
        )
        .await;
        assert!(
            matches!(waited, Ok(Ok(_))),
            "expected {n} requests, got {}",
            self.requests().len()
        );
    }

    /// The base URL for Anthropic (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The base URL for OpenAI-compatible clients (`http://127.0.0.1:PORT/v1`).
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The bodies of every request so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }
}

async fn serve(
    mut stream: TcpStream,
    turns: Arc<Mutex<Scripts>>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    count: Arc<tokio::sync::watch::Sender<usize>>,
    sequence: u32,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let wire = if request.path.ends_with("/chat/completions") {
        Wire::OpenAi
    } else if request.path.ends_with("/responses") {
        let search = request.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["type"] == "tool_search");
        Wire::Responses(search)
    } else {
        Wire::Anthropic
    };
    let model = request.body["model"].as_str().unwrap_or("model").to_owned();
    let turn = turns.lock().unwrap().next(&request.body);
    let seen = {
        let mut recorded = recorded.lock().unwrap();
        recorded.push(request);
        recorded.len()
    };
    count.send_replace(seen);
    let turn = match turn {
        Some(Turn::Gated { gate, turn }) => Some(if gate.pass().await {
            *turn
        } else {
            Turn::text(format!(
                "the gate timed out: fewer than {} requests arrived together",
                gate.needed
            ))
        }),
        other => other,
    };
    let Some(turn) = turn else {
        let body = json!({"error": {"type": "script_exhausted", "message": "the script has no more turns"}});
        write_error(&mut stream, 418, &body, &[]).await;
        return;
    };
    match turn {
        Turn::Error {
            status,
            body,
            headers,
        } => write_error(&mut stream, status, &body, &headers).await,
        Turn::Disconnect => {}
        Turn::Reply(reply) => {
            let events = render(wire, &reply, &model, sequence);
            let _ = write_stream(&mut stream, &events).await;
        }
        Turn::Stall(reply) => {
            let events = render(wire, &reply, &model, sequence);
            let _ = write_stream_open(&mut stream, until_first_text(&events)).await;
            // Hold the connection until the client hangs up.
            let mut sink = [0u8; 64];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
        Turn::Cut(reply) => {
            let events = render(wire, &reply, &model, sequence);
            let _ = write_stream(&mut stream, until_first_text(&events)).await;
        }
        Turn::StreamError { reply, error } => {
            let mut events = render(wire, &reply, &model, sequence);
            events.truncate(until_first_text(&events).len());
            events.push(match wire {
                Wire::Anthropic => sse("error", &json!({"type": "error", "error": error})),
                Wire::OpenAi => format!("data: {}\n\n", json!({"error": error})),
                Wire::Responses(_) => sse(
                    "error",
                    &json!({"type": "error", "code": error["type"], "message": error["message"]}),
                ),
            });
            let _ = write_stream(&mut stream, &events).await;
        }
        // A gate inside a gate is not scripted; the outer one was passed above.
        Turn::Gated { .. } => {
            let body = json!({"error": {"type": "script_error", "message": "a gated turn inside a gated turn"}});
            write_error(&mut stream, 500, &body, &[]).await;
        }
    }
}

/// The events up to and including the first piece of text.
fn until_first_text(events: &[String]) -> &[String] {
    let first_text = events
        .iter()
        .position(|e| {
            e.contains("text_delta")
                || e.contains("output_text.delta")
                || (e.contains("\"content\":\"") && !e.contains("\"content\":\"\""))
        })
        .unwrap_or(0);
    &events[..=first_text]
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[header_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn write_error(
    stream: &mut TcpStream,
    status: u16,
    body: &Value,
    headers: &[(String, String)],
) {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn write_stream_open(stream: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n")
        .await?;
    for event in events {
        // Each event goes out in two writes split mid-line, so the client's decoder must
        // reassemble lines that arrive in pieces.
        let bytes = event.as_bytes();
        let mut middle = bytes.len() / 2;
        while !event.is_char_boundary(middle) {
            middle += 1;
        }
        stream.write_all(&bytes[..middle]).await?;
        stream.flush().await?;
        stream.write_all(&bytes[middle..]).await?;
        stream.flush().await?;
    }
    Ok(())
}

async fn write_stream(stream: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    write_stream_open(stream, events).await?;
    stream.shutdown().await
}

/// Splits text into three pieces at character boundaries (fewer when it is short).
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 3 {
        return vec![text.to_owned()];
    }
    let third = chars.len() / 3;
    vec![
        chars[..third].iter().collect(),
        chars[third..2 * third].iter().collect(),
        chars[2 * third..].iter().collect(),
    ]
}

fn stop_of(reply: &Reply) -> String {
    reply.stop.clone().unwrap_or_else(|| {
        if reply.blocks.iter().any(|b| matches!(b, Block::ToolUse(_))) {
            "tool_use".to_owned()
        } else {
            "end_turn".to_owned()
        }
    })
}

fn render(wire: Wire, reply: &Reply, model: &str, sequence: u32) -> Vec<String> {
    match wire {
        Wire::Anthropic => render_anthropic(reply, model, sequence),
        Wire::OpenAi => render_openai(reply, model, sequence),
        Wire::Responses(search) => render_responses(reply, sequence, search),
    }
}

/// An output item of the Responses API for one block; `None` for blocks a model never sends.
fn responses_item(block: &Block, index: usize, search: bool) -> Option<Value> {
    Some(match block {
        Block::Text { text } => json!({"type": "message", "id": format!("msg_{index}"),
            "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Block::Thinking {
            thinking,
            signature,
        } => json!({"type": "reasoning", "id": format!("rs_{index}"),
            "encrypted_content": signature,
            "summary": [{"type": "summary_text", "text": thinking}]}),
        Block::RedactedThinking { data } => json!({"type": "reasoning",
            "id": format!("rs_{index}"), "encrypted_content": data, "summary": []}),
        Block::ToolUse(tool_core::ToolCall { id, name, input })
            if search && name == "tool_search" =>
        {
            json!({"type": "tool_search_call", "id": format!("ts_{index}"), "call_id": id,
                   "execution": "client", "status": "completed", "arguments": input})
        }
        Block::ToolUse(tool_core::ToolCall { id, name, input }) => json!({"type": "function_call",
            "id": format!("fc_{index}"), "call_id": id, "name": name,
            "arguments": input.to_string(), "status": "completed"}),
        Block::ToolResult(_) | Block::Image { .. } => return None,
    })
}

fn render_responses(reply: &Reply, sequence: u32, search: bool) -> Vec<String> {
    let event = |data: Value| sse(data["type"].as_str().unwrap_or("event"), &data);
    let id = format!("resp_scripted_{sequence}");
    let mut out = vec![event(
        json!({"type": "response.created", "response": {"id": id}}),
    )];
    for (index, block) in reply.blocks.iter().enumerate() {
        let Some(item) = responses_item(block, index, search) else {
            continue;
        };
        let mut added = item.clone();
        if added["type"] == "function_call" {
            added["arguments"] = json!("");
        }
        out.push(event(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        ));
        match block {
            Block::Text { text } => {
                for piece in pieces(text) {
                    out.push(event(json!({"type": "response.output_text.delta",
                        "output_index": index, "content_index": 0, "delta": piece})));
                }
            }
            Block::Thinking { thinking, .. } => {
                for piece in pieces(thinking) {
                    out.push(event(
                        json!({"type": "response.reasoning_summary_text.delta",
                        "output_index": index, "summary_index": 0, "delta": piece}),
                    ));
                }
            }
            Block::ToolUse(call) if item["type"] == "function_call" => {
                for piece in pieces(&call.input.to_string()) {
                    out.push(event(
                        json!({"type": "response.function_call_arguments.delta",
                        "output_index": index, "delta": piece}),
                    ));
                }
            }
            _ => {}
        }
        out.push(event(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    let usage = reply.usage;
    let kind = if stop_of(reply) == "max_tokens" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    out.push(event(json!({"type": kind, "response": {"id": id,
        "incomplete_details": {"reason": "max_output_tokens"},
        "usage": {"input_tokens": usage.input + usage.cache_read, "output_tokens": usage.output,
                  "input_tokens_details": {"cached_tokens": usage.cache_read}}}})));
    out
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn render_anthropic(reply: &Reply, model: &str, sequence: u32) -> Vec<String> {
    let usage = reply.usage;
    let mut out = vec![
        sse(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": format!("msg_scripted_{sequence}"), "type": "message", "role": "assistant",
                "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": usage.input, "cache_creation_input_tokens": usage.cache_write,
                          "cache_read_input_tokens": usage.cache_read, "output_tokens": 1},
            }}),
        ),
        sse("ping", &json!({"type": "ping"})),
    ];
    for (index, block) in reply.blocks.iter().enumerate() {
        let start = |content_block: Value| {
            sse(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
            )
        };
        let delta = |delta: Value| {
            sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        match block {
            Block::Text { text } => {
                out.push(start(json!({"type": "text", "text": ""})));
                for piece in pieces(text) {
                    out.push(delta(json!({"type": "text_delta", "text": piece})));
                }
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                out.push(start(
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ));
                for piece in pieces(thinking) {
                    out.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                out.push(delta(
                    json!({"type": "signature_delta", "signature": signature}),
                ));
            }
            Block::RedactedThinking { data } => {
                out.push(start(json!({"type": "redacted_thinking", "data": data})));
            }
            // A model never answers with a tool result.
            Block::ToolResult(_) | Block::Image { .. } => continue,
            Block::ToolUse(tool_core::ToolCall { id, name, input }) => {
                out.push(start(
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                ));
                // The API opens with an empty piece, then splits the JSON anywhere.
                out.push(delta(
                    json!({"type": "input_json_delta", "partial_json": ""}),
                ));
                for piece in pieces(&input.to_string()) {
                    out.push(delta(
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
            }
        }
        out.push(sse(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push(sse(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_of(reply), "stop_sequence": null},
                "usage": {"output_tokens": usage.output}}),
    ));
    out.push(sse("message_stop", &json!({"type": "message_stop"})));
    out
}

fn render_openai(reply: &Reply, model: &str, sequence: u32) -> Vec<String> {
    let id = format!("chatcmpl-scripted-{sequence}");
    let chunk = |delta: Value, finish: Value| {
        let data = json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {data}\n\n")
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut call_index = 0;
    for block in &reply.blocks {
        match block {
            Block::Text { text } => {
                for piece in pieces(text) {
                    out.push(chunk(json!({"content": piece}), Value::Null));
                }
            }
            Block::Thinking { thinking, .. } => {
                for piece in pieces(thinking) {
                    out.push(chunk(json!({"reasoning_content": piece}), Value::Null));
                }
            }
            Block::RedactedThinking { .. } | Block::ToolResult(_) | Block::Image { .. } => {}
            Block::ToolUse(tool_core::ToolCall { id, name, input }) => {
                out.push(chunk(
                    json!({"tool_calls": [{"index": call_index, "id": id, "type": "function",
                                           "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for piece in pieces(&input.to_string()) {
                    out.push(chunk(
                        json!({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
                call_index += 1;
            }
        }
    }
    let finish = match stop_of(reply).as_str() {
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        _ => "stop",
    };
    out.push(chunk(json!({}), json!(finish)));
    let usage = reply.usage;
    let usage_chunk = json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [],
        "usage": {
            "prompt_tokens": usage.input + usage.cache_read,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.cache_read + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        },
    });
    out.push(format!("data: {usage_chunk}\n\n"));
    out.push("data: [DONE]\n\n".to_owned());
    out
}
