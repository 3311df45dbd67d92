//! Both providers against the scripted server on loopback: streaming, tool calls, reasoning,
//! usage, retries, errors, cancellation, and snapshots of the request bodies they send.

use std::sync::Arc;
use std::time::Duration;

use crate::support::scripted::{ScriptUsage, ScriptedServer, Turn};
use agent_cli::conversation::{Block, Message, Role, StopReason, Usage};
use agent_cli::provider::{
    EventStream, ModelRequest, Provider, ProviderConfig, ProviderError, ProviderKind, Response,
    StreamEvent, build,
};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{CancellationToken, Content, ToolCall, ToolResult};
use tool_pool::RequestTools;

const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::OpenAi];

fn config(kind: ProviderKind, server: &ScriptedServer) -> ProviderConfig {
    let base = match kind {
        ProviderKind::Anthropic => server.url(),
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => server.openai_url(),
    };
    fast(ProviderConfig::new(
        kind,
        base,
        Some("test-key".to_owned()),
        "test-model",
    ))
}

fn fast(mut config: ProviderConfig) -> ProviderConfig {
    config.max_retries = 3;
    config.base_delay = Duration::from_millis(1);
    config.max_delay = Duration::from_millis(5);
    config
}

/// One tool, `read_file`, the whole of the stable part.
fn tools() -> RequestTools {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    });
    let spec = tool_core::ToolSpec::new("read_file", "Reads a file.", schema);
    RequestTools {
        tools: vec![tool_core::AnyTool::new(Declared(spec))],
        stable_len: 1,
        ..RequestTools::default()
    }
}

fn request(messages: Vec<Message>) -> ModelRequest<'static> {
    ModelRequest {
        model: "test-model".to_owned(),
        system: vec![
            "You are a coding agent.".to_owned(),
            "The working directory is /repo.".to_owned(),
        ],
        messages: messages.into(),
        tools: tools(),
        max_tokens: 1024,
        thinking: agent_cli::provider::Thinking::Off,
    }
}

fn ask() -> ModelRequest<'static> {
    request(vec![Message::user_text("What is in src/lib.rs?")])
}

async fn run(
    provider: &Arc<dyn Provider>,
    request: &ModelRequest<'_>,
) -> (Result<Response, ProviderError>, Vec<StreamEvent>) {
    collect(provider.stream(request, &CancellationToken::new())).await
}

/// The events before the end, and how the stream ended: its answer or its error.
async fn collect(
    mut stream: EventStream<'_>,
) -> (Result<Response, ProviderError>, Vec<StreamEvent>) {
    let mut seen = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::Finished(response)) => {
                assert!(stream.next().await.is_none(), "events after Finished");
                return (Ok(response), seen);
            }
            Ok(event) => seen.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "events after an error");
                return (Err(error), seen);
            }
        }
    }
    panic!("the stream ended without an answer or an error: {seen:?}");
}

async fn serve_one(
    kind: ProviderKind,
    script: Vec<Turn>,
) -> (
    ScriptedServer,
    Result<Response, ProviderError>,
    Vec<StreamEvent>,
) {
    let server = ScriptedServer::start(script).await;
    let provider = build(&config(kind, &server)).unwrap();
    let (result, events) = run(&provider, &ask()).await;
    (server, result, events)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn retries(events: &[StreamEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_streams_in_pieces_and_ends_the_turn() {
    for kind in KINDS {
        let (server, result, events) = serve_one(kind, vec![Turn::text("Hello, wörld! ✓")]).await;
        let response = result.unwrap();
        let deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
            .count();
        assert!(deltas >= 3, "{kind}: {events:?}");
        assert_eq!(text_of(&events), "Hello, wörld! ✓", "{kind}");
        assert_eq!(response.message.role, Role::Assistant);
        assert_eq!(response.message.text(), "Hello, wörld! ✓");
        assert_eq!(response.stop_reason, StopReason::EndTurn, "{kind}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn providers_render_the_tools_in_their_own_format() {
    for kind in KINDS {
        let (server, result, _) = serve_one(kind, vec![Turn::text("ok")]).await;
        result.unwrap();
        let sent = &server.bodies()[0]["tools"];
        let expected = match kind {
            ProviderKind::Anthropic => agent_cli::provider::anthropic::render_tools(&tools()),
            ProviderKind::OpenAi => agent_cli::provider::openai::render_tools(&tools()),
            ProviderKind::OpenAiResponses => agent_cli::provider::responses::render_tools(&tools()),
        };
        assert_eq!(sent, &expected, "{kind}");
    }
}

#[tokio::test]
async fn tool_input_split_across_deltas_is_reassembled() {
    let input = json!({"path": "src/lib.rs", "limit": 20, "note": "ünïcode \"quoted\""});
    for kind in KINDS {
        let script = vec![
            Turn::text("Let me look.")
                .then_tool_use("call_1", "read_file", input.clone())
                .then_tool_use("call_2", "read_file", json!({"path": "Cargo.toml"})),
        ];
        let (_server, result, events) = serve_one(kind, script).await;
        let response = result.unwrap();
        let tool_events: Vec<&StreamEvent> = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    StreamEvent::ToolUseStarted { .. } | StreamEvent::ToolCall(_)
                )
            })
            .collect();
        assert_eq!(
            tool_events,
            vec![
                &StreamEvent::ToolUseStarted {
                    id: "call_1".into(),
                    name: "read_file".into()
                },
                &StreamEvent::ToolCall(ToolCall::new("call_1", "read_file", input.clone())),
                &StreamEvent::ToolUseStarted {
                    id: "call_2".into(),
                    name: "read_file".into()
                },
                &StreamEvent::ToolCall(ToolCall::new(
                    "call_2",
                    "read_file",
                    json!({"path": "Cargo.toml"})
                )),
            ],
            "{kind}"
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{kind}");
        let calls: Vec<(&str, &str, &Value)> = response.message.tool_uses().collect();
        assert_eq!(
            calls,
            vec![
                ("call_1", "read_file", &input),
                ("call_2", "read_file", &json!({"path": "Cargo.toml"})),
            ],
            "{kind}"
        );
        assert_eq!(response.message.text(), "Let me look.");
    }
}

#[tokio::test]
async fn anthropic_thinking_streams_and_goes_back_with_its_signature() {
    let kind = ProviderKind::Anthropic;
    let server = ScriptedServer::start(vec![
        Turn::thinking("The user wants the file.", "sig-abc123")
            .then_redacted("opaque-redacted")
            .then_tool_use("toolu_1", "read_file", json!({"path": "src/lib.rs"})),
        Turn::text("It defines the crate."),
    ])
    .await;
    let provider = build(&config(kind, &server)).unwrap();
    let mut req = ask();
    let (result, events) = run(&provider, &req).await;
    let response = result.unwrap();
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "The user wants the file.");
    assert_eq!(
        response.message.content[..2],
        [
            Block::Thinking {
                thinking: "The user wants the file.".into(),
                signature: "sig-abc123".into()
            },
            Block::RedactedThinking {
                data: "opaque-redacted".into()
            },
        ]
    );
    req.messages.to_mut().push(response.message);
    req.messages.to_mut().push(Message {
        role: Role::User,
        content: vec![Block::ToolResult(text_result("toolu_1", "//! The crate."))],
    });
    let (result, _) = run(&provider, &req).await;
    result.unwrap();
    let second = &server.bodies()[1];
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "The user wants the file.", "signature": "sig-abc123"})
    );
    assert_eq!(
        second["messages"][1]["content"][1],
        json!({"type": "redacted_thinking", "data": "opaque-redacted"})
    );
}

#[tokio::test]
async fn openai_reasoning_streams_but_is_not_sent_back() {
    let kind = ProviderKind::OpenAi;
    let server = ScriptedServer::start(vec![
        Turn::thinking("Think first.", "").then_text("Answer."),
        Turn::text("Again."),
    ])
    .await;
    let provider = build(&config(kind, &server)).unwrap();
    let mut req = ask();
    let (result, events) = run(&provider, &req).await;
    let response = result.unwrap();
    let thinking: Vec<&StreamEvent> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ThinkingDelta(_)))
        .collect();
    assert_eq!(thinking.len(), 3, "{events:?}");
    assert_eq!(
        response.message.content,
        vec![
            Block::Thinking {
                thinking: "Think first.".into(),
                signature: String::new()
            },
            Block::Text {
                text: "Answer.".into()
            },
        ]
    );
    req.messages.to_mut().push(response.message);
    req.messages.to_mut().push(Message::user_text("And?"));
    run(&provider, &req).await.0.unwrap();
    assert_eq!(
        server.bodies()[1]["messages"][2],
        json!({"role": "assistant", "content": "Answer."})
    );
}

#[tokio::test]
async fn stop_reasons_are_mapped() {
    for kind in KINDS {
        let (_s, result, _) =
            serve_one(kind, vec![Turn::text("cut off mid").stop("max_tokens")]).await;
        assert_eq!(result.unwrap().stop_reason, StopReason::MaxTokens, "{kind}");
    }
    let (_s, result, _) = serve_one(
        ProviderKind::Anthropic,
        vec![Turn::text("done").stop("stop_sequence")],
    )
    .await;
    assert_eq!(result.unwrap().stop_reason, StopReason::StopSequence);
}

#[tokio::test]
async fn usage_includes_cache_reads_and_writes() {
    let usage = ScriptUsage {
        input: 12,
        output: 34,
        cache_read: 5000,
        cache_write: 700,
    };
    // OpenAI reports cached tokens inside prompt_tokens and says nothing of cache writes.
    for (kind, cache_writes) in [(ProviderKind::Anthropic, 700), (ProviderKind::OpenAi, 0)] {
        let (_s, result, _) = serve_one(kind, vec![Turn::text("hi").usage(usage)]).await;
        assert_eq!(
            result.unwrap().usage,
            Usage {
                input_tokens: 12,
                output_tokens: 34,
                cache_read_input_tokens: 5000,
                cache_creation_input_tokens: cache_writes,
            },
            "{kind}"
        );
    }
}

fn overloaded() -> Value {
    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
}

fn rate_limited() -> Value {
    json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}})
}

#[tokio::test]
async fn retries_after_429_and_529_then_succeeds() {
    for kind in KINDS {
        let script = vec![
            Turn::error(429, rate_limited()),
            Turn::error(529, overloaded()),
            Turn::text("finally"),
        ];
        let (server, result, events) = serve_one(kind, script).await;
        assert_eq!(result.unwrap().message.text(), "finally", "{kind}");
        assert_eq!(retries(&events), vec![2, 3], "{kind}");
        let StreamEvent::Retrying {
            reason, delay_ms, ..
        } = &events[1]
        else {
            panic!("{events:?}");
        };
        assert_eq!(reason, "529: Overloaded");
        assert!(
            (2..=4).contains(delay_ms),
            "the second retry waits twice the base delay, plus up to as much again of jitter: {delay_ms}"
        );
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 3);
        assert_eq!(bodies[0], bodies[2], "a retry sends the same request");
    }
}

#[tokio::test]
async fn overloaded_error_body_is_retried_whatever_the_status() {
    let (_s, result, events) = serve_one(
        ProviderKind::Anthropic,
        vec![Turn::error(500, overloaded()), Turn::text("ok")],
    )
    .await;
    result.unwrap();
    assert_eq!(retries(&events), vec![2]);
}

#[tokio::test]
async fn retry_after_is_honoured_but_capped() {
    let (_s, result, events) = serve_one(
        ProviderKind::Anthropic,
        vec![
            Turn::error(429, rate_limited()).header("retry-after", "120"),
            Turn::text("ok"),
        ],
    )
    .await;
    result.unwrap();
    assert!(matches!(
        events[0],
        StreamEvent::Retrying {
            attempt: 2,
            delay_ms: 5,
            ..
        }
    ));
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    for kind in KINDS {
        let (_s, result, events) =
            serve_one(kind, vec![Turn::Disconnect, Turn::text("back")]).await;
        assert_eq!(result.unwrap().message.text(), "back", "{kind}");
        assert_eq!(retries(&events), vec![2], "{kind}");
    }
}

#[tokio::test]
async fn exhausted_retries_report_the_status_and_attempts() {
    for kind in KINDS {
        let script = (0..4).map(|_| Turn::error(529, overloaded())).collect();
        let (server, result, events) = serve_one(kind, script).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::Exhausted {
                status: 529,
                attempts: 4,
                message: "Overloaded".into()
            },
            "{kind}"
        );
        assert_eq!(retries(&events), vec![2, 3, 4]);
        assert_eq!(server.requests().len(), 4);
    }
}

#[tokio::test]
async fn unauthorized_is_an_authentication_error_with_a_hint() {
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    for (kind, env) in [
        (ProviderKind::Anthropic, "ANTHROPIC_API_KEY"),
        (ProviderKind::OpenAi, "OPENAI_API_KEY"),
    ] {
        let (server, result, events) = serve_one(kind, vec![Turn::error(401, body.clone())]).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::Authentication {
                status: 401,
                message: format!("invalid x-api-key; check {env}")
            }
        );
        assert!(retries(&events).is_empty(), "authentication is not retried");
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn context_too_long_is_recognised() {
    let anthropic = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 212345 tokens > 200000 maximum"}});
    let openai = json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    for (kind, body) in [
        (ProviderKind::Anthropic, anthropic),
        (ProviderKind::OpenAi, openai),
    ] {
        let (_s, result, _) = serve_one(kind, vec![Turn::error(400, body.clone())]).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::ContextTooLong {
                message: body["error"]["message"].as_str().unwrap().to_owned()
            }
        );
    }
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    let body = json!({"error": {"type": "not_found_error", "message": "model: nope"}});
    let (_s, result, events) = serve_one(ProviderKind::OpenAi, vec![Turn::error(404, body)]).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Api {
            status: 404,
            message: "model: nope".into()
        }
    );
    assert!(events.is_empty());
}

/// A loopback address where nothing listens.
async fn dead_address() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{address}")
}

#[tokio::test]
async fn nothing_listening_is_unreachable_with_advice() {
    let base = format!("{}/v1", dead_address().await);
    let config = fast(ProviderConfig::new(
        ProviderKind::OpenAi,
        base.clone(),
        None,
        "qwen2.5-coder",
    ));
    let provider = build(&config).unwrap();
    let (result, events) = run(&provider, &ask()).await;
    let error = result.unwrap_err();
    let ProviderError::Unreachable { url, reason } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(url, &base);
    assert!(reason.starts_with("nothing answers there"), "{reason}");
    assert!(reason.contains("`ollama serve`"), "{reason}");
    assert!(
        reason.contains("ANTHROPIC_API_KEY / OPENAI_API_KEY"),
        "{reason}"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("cannot reach {base}: "))
    );
    assert_eq!(
        retries(&events),
        vec![2, 3],
        "refused connections are retried only twice"
    );
}

#[tokio::test]
async fn cancelling_mid_stream_stops_the_request() {
    for kind in KINDS {
        let server = ScriptedServer::start(vec![Turn::stall("Hello there, this never ends")]).await;
        let provider = build(&config(kind, &server)).unwrap();
        let cancel = CancellationToken::new();
        let request = ask();
        let mut stream = provider.stream(&request, &cancel);
        let mut seen = Vec::new();
        let result = loop {
            match stream.next().await.unwrap() {
                Ok(event) => {
                    if matches!(event, StreamEvent::TextDelta(_)) {
                        cancel.cancel();
                    }
                    seen.push(event);
                }
                Err(error) => break error,
            }
        };
        assert_eq!(result, ProviderError::Cancelled, "{kind}");
        assert_eq!(seen.len(), 1, "{kind}: {seen:?}");
    }
}

#[tokio::test]
async fn cancelling_during_backoff_stops_the_retries() {
    let server =
        ScriptedServer::start(vec![Turn::error(529, overloaded()), Turn::text("late")]).await;
    let mut config = config(ProviderKind::Anthropic, &server);
    config.base_delay = Duration::from_secs(3600);
    config.max_delay = Duration::from_secs(3600);
    let provider = build(&config).unwrap();
    let cancel = CancellationToken::new();
    let request = ask();
    let mut stream = provider.stream(&request, &cancel);
    let result = loop {
        match stream.next().await.unwrap() {
            Ok(StreamEvent::Retrying { .. }) => cancel.cancel(),
            Ok(_) => {}
            Err(error) => break error,
        }
    };
    assert_eq!(result, ProviderError::Cancelled);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_cancelled_token_sends_nothing() {
    let server = ScriptedServer::start(vec![Turn::text("unused")]).await;
    let provider = build(&config(ProviderKind::OpenAi, &server)).unwrap();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let request = ask();
    let (result, events) = collect(provider.stream(&request, &cancel)).await;
    assert_eq!(result.unwrap_err(), ProviderError::Cancelled);
    assert!(events.is_empty());
    assert!(server.requests().is_empty());
}

fn text_result(id: &str, text: &str) -> ToolResult {
    ToolResult {
        tool_use_id: id.to_owned(),
        content: vec![Content::text(text)],
        structured: None,
        is_error: false,
    }
}

/// A conversation with a tool call, a successful result and a failed one.
fn conversation_with_tools() -> Vec<Message> {
    vec![
        Message::user_text("What does src/lib.rs export?"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "Read the file first.".into(),
                    signature: "sig-1".into(),
                },
                Block::Text {
                    text: "Let me read it.".into(),
                },
                Block::ToolUse(tool_core::ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    input: json!({"path": "src/lib.rs"}),
                }),
                Block::ToolUse(tool_core::ToolCall {
                    id: "call_2".into(),
                    name: "read_file".into(),
                    input: json!({"path": "missing.rs"}),
                }),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult(text_result("call_1", "pub mod provider;")),
                Block::ToolResult(ToolResult::error("call_2", "no such file: missing.rs")),
            ],
        },
    ]
}

async fn sent_body(kind: ProviderKind) -> (Value, std::collections::BTreeMap<String, String>) {
    let server = ScriptedServer::start(vec![Turn::text("It exports the provider module.")]).await;
    let provider = build(&config(kind, &server)).unwrap();
    run(&provider, &request(conversation_with_tools()))
        .await
        .0
        .unwrap();
    let recorded = server.requests().remove(0);
    (recorded.body, recorded.headers)
}

#[tokio::test]
async fn anthropic_request_body_snapshot() {
    let (body, headers) = sent_body(ProviderKind::Anthropic).await;
    assert_eq!(headers["x-api-key"], "test-key");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["content-type"], "application/json");
    insta::assert_json_snapshot!("anthropic_request_with_tool_results", body);
}

#[tokio::test]
async fn openai_request_body_snapshot() {
    let (body, headers) = sent_body(ProviderKind::OpenAi).await;
    assert_eq!(headers["authorization"], "Bearer test-key");
    assert_eq!(headers["content-type"], "application/json");
    insta::assert_json_snapshot!("openai_request_with_tool_results", body);
}

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization() {
    let server = ScriptedServer::start(vec![Turn::text("local")]).await;
    let mut config = config(ProviderKind::OpenAi, &server);
    config.api_key = None;
    let provider = build(&config).unwrap();
    run(&provider, &ask()).await.0.unwrap();
    let recorded = server.requests().remove(0);
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.method, "POST");
    assert!(!recorded.headers.contains_key("authorization"));
    assert_eq!(recorded.body["max_tokens"], 1024);
}

#[tokio::test]
async fn an_overload_reported_mid_stream_is_retried_from_scratch() {
    for kind in KINDS {
        let error = json!({"type": "overloaded_error", "message": "Overloaded"});
        let script = vec![
            Turn::stream_error("Partial answer", error),
            Turn::text("Whole answer"),
        ];
        let (server, result, events) = serve_one(kind, script).await;
        assert_eq!(result.unwrap().message.text(), "Whole answer", "{kind}");
        let retry = events
            .iter()
            .position(|e| matches!(e, StreamEvent::Retrying { attempt: 2, .. }))
            .expect("a retry");
        assert!(
            matches!(&events[retry], StreamEvent::Retrying { reason, .. } if reason == "529: Overloaded"),
            "{events:?}"
        );
        // What came before the retry is void; what came after is the answer.
        assert_eq!(text_of(&events[retry..]), "Whole answer", "{kind}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn an_invalid_request_reported_mid_stream_is_not_retried() {
    for kind in KINDS {
        let error = json!({"type": "invalid_request_error", "message": "bad block"});
        let (server, result, events) =
            serve_one(kind, vec![Turn::stream_error("Partial", error)]).await;
        let error = result.unwrap_err();
        assert!(
            matches!(&error, ProviderError::Stream(m) if m.contains("bad block")),
            "{kind}: {error:?}"
        );
        assert!(retries(&events).is_empty());
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_stream_cut_short_is_retried() {
    for kind in KINDS {
        let (server, result, events) =
            serve_one(kind, vec![Turn::cut("Half an ans"), Turn::text("Answer")]).await;
        assert_eq!(result.unwrap().message.text(), "Answer", "{kind}");
        assert_eq!(retries(&events), vec![2], "{kind}");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_stream_always_cut_short_ends_in_a_stream_error() {
    let script = (0..4).map(|_| Turn::cut("Half")).collect();
    let (_s, result, _) = serve_one(ProviderKind::Anthropic, script).await;
    let error = result.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Stream(
            "the response stream ended before message_stop (after 4 attempts)".into()
        )
    );
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    let body = json!({"type": "error", "error": {"type": "api_error", "message": "Internal"}});
    let (server, result, _) = serve_one(
        ProviderKind::Anthropic,
        vec![Turn::error(500, body.clone()).header("x-should-retry", "false")],
    )
    .await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Api {
            status: 500,
            message: "Internal".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
    let (_s, result, events) = serve_one(
        ProviderKind::Anthropic,
        vec![
            Turn::error(409, body).header("x-should-retry", "true"),
            Turn::text("ok"),
        ],
    )
    .await;
    result.unwrap();
    assert_eq!(retries(&events), vec![2]);
}

/// A tool that only declares itself; the rendering tests never call it.
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

fn declared(name: &str, description: &str) -> tool_core::AnyTool {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string", "description": "The file path"}},
        "required": ["path"],
    });
    tool_core::AnyTool::new(Declared(tool_core::ToolSpec::new(
        name,
        description,
        schema,
    )))
}

/// The core built-ins and one MCP server, with the default pool: always defer, the proxy.
fn default_pool() -> tool_pool::ToolPool {
    let registry = Arc::new(tool_core::ToolRegistry::new());
    for (name, description) in [
        ("read_file", "Reads a file from the local filesystem."),
        ("write_file", "Writes a file to the local filesystem."),
        ("edit_file", "Replaces text in a file."),
        ("glob", "Finds files by name pattern."),
        ("grep", "Searches file contents with a regular expression."),
        ("shell", "Runs a shell command."),
    ] {
        registry.register(declared(name, description)).unwrap();
    }
    let pool = tool_pool::ToolPool::new(registry, tool_pool::PoolConfig::default()).unwrap();
    let spec = tool_core::ToolSpec::new(
        "mcp__slack__send_message",
        "Send a message to a Slack channel.",
        json!({"type": "object"}),
    )
    .with_origin(tool_core::Origin::Mcp {
        server: "slack".into(),
        tool: "send_message".into(),
    });
    assert!(pool.add_mcp_tool(Declared(spec)).unwrap());
    pool
}

#[test]
fn anthropic_tools_mark_the_last_stable_tool() {
    let tools = default_pool().request_tools();
    insta::assert_json_snapshot!(
        "anthropic_tools_always_defer_proxy",
        agent_cli::provider::anthropic::render_tools(&tools)
    );
}

#[test]
fn openai_tools_are_function_tools() {
    let tools = default_pool().request_tools();
    insta::assert_json_snapshot!(
        "openai_tools_always_defer_proxy",
        agent_cli::provider::openai::render_tools(&tools)
    );
}

#[test]
fn anthropic_tools_after_the_stable_part_carry_no_breakpoint() {
    let mut tools = default_pool().request_tools();
    let stable_len = tools.stable_len;
    tools
        .tools
        .push(declared("mcp__slack__send_message", "Found."));
    let rendered = agent_cli::provider::anthropic::render_tools(&tools);
    assert!(rendered[stable_len - 1].get("cache_control").is_some());
    assert!(rendered[stable_len].get("cache_control").is_none());
}

/// A result with structured output (already given as text by the executor) and an image.
fn result_with_image() -> ToolResult {
    ToolResult {
        tool_use_id: "toolu_01".into(),
        content: vec![
            Content::text("{\"height\":1,\"width\":1}"),
            Content::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ],
        structured: Some(json!({"width": 1, "height": 1})),
        is_error: false,
    }
}

#[test]
fn anthropic_tool_results_carry_images() {
    insta::assert_json_snapshot!(
        "anthropic_tool_result_with_image",
        agent_cli::provider::anthropic::render_tool_result(&result_with_image())
    );
}

#[test]
fn openai_tool_results_describe_images_in_words() {
    insta::assert_json_snapshot!(
        "openai_tool_result_with_image",
        agent_cli::provider::openai::render_tool_result(&result_with_image())
    );
}
