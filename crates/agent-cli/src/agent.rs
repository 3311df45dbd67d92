//! The agent loop: stream the model's message, start each tool call as soon as its block is
//! complete, send the results back, and repeat until the model ends its turn.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Serialize;
use tool_core::{CancellationToken, ExecutionEvent, ToolCall, ToolResult};

use crate::conversation::{Block, Message, Role, StopReason, Usage};
use crate::provider::{
    ModelRequest, Provider, ProviderError, StreamEvent, ToolFormat, anthropic, openai,
};
use crate::runtime::ToolRuntime;
use crate::transcript::Transcript;

/// What the agent reports while it works.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// Streamed text.
    Text {
        /// The piece.
        text: String,
    },
    /// Streamed reasoning.
    Thinking {
        /// The piece.
        text: String,
    },
    /// A tool call's progress.
    Tool {
        /// What happened.
        event: ExecutionEvent,
    },
    /// A complete message was added to the conversation.
    Message {
        /// The message.
        message: Message,
    },
    /// A tool's result, with the tool's name.
    ToolResult {
        /// The tool.
        name: String,
        /// Its result.
        result: ToolResult,
    },
    /// The provider request is being retried.
    Retrying {
        /// The next attempt.
        attempt: u32,
        /// Why.
        reason: String,
    },
}

/// Receives agent events (from the loop and from running tools).
pub type Observer = Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model ended its turn.
    Done,
    /// The turn limit was reached while the model still wanted tools.
    MaxTurns,
    /// The user cancelled.
    Cancelled,
}

/// The result of one user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    /// How it ended.
    pub outcome: Outcome,
    /// The last assistant text.
    pub text: String,
    /// Model requests made.
    pub requests: usize,
    /// Token usage summed over the requests.
    pub usage: Usage,
    /// Why the model stopped, when it did.
    pub stop_reason: Option<StopReason>,
}

/// A conversation with a model and its tools.
pub struct Agent {
    provider: Arc<dyn Provider>,
    /// The tools.
    pub runtime: ToolRuntime,
    transcript: Transcript,
    messages: Vec<Message>,
    model: String,
    system: String,
    /// The most model requests per user turn.
    pub max_turns: usize,
    /// The most output tokens per request.
    pub max_tokens: u32,
}

impl Agent {
    /// An agent continuing `messages` (empty for a new session).
    pub fn new(
        provider: Arc<dyn Provider>,
        runtime: ToolRuntime,
        transcript: Transcript,
        messages: Vec<Message>,
        model: String,
    ) -> Self {
        let system = runtime.system_prompt();
        Self {
            provider,
            runtime,
            transcript,
            messages,
            model,
            system,
            max_turns: 50,
            max_tokens: 8_192,
        }
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        self.transcript.id()
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn record(&mut self, message: Message, observer: &Observer) -> anyhow::Result<()> {
        self.transcript.message(&message)?;
        observer(AgentEvent::Message {
            message: message.clone(),
        });
        self.messages.push(message);
        Ok(())
    }

    /// Blocks for what changed among the deferred tools since the last request. The pool first
    /// catches up with the registry, so that tools an MCP server brought a moment ago are
    /// announced in this request rather than whenever the background follower gets to them.
    fn pool_notes(&self) -> Vec<Block> {
        self.runtime.pool.sync();
        self.runtime
            .pool
            .take_deltas()
            .into_iter()
            .map(|text| Block::Text { text })
            .collect()
    }

    /// Runs one user turn to its end.
    pub async fn run_turn(
        &mut self,
        user_text: &str,
        cancel: &CancellationToken,
        observer: &Observer,
    ) -> Result<TurnReport, anyhow::Error> {
        let first = !self.messages.iter().any(|m| m.role == Role::User);
        let mut content = vec![Block::Text {
            text: user_text.to_owned(),
        }];
        content.extend(self.pool_notes());
        let prefetched = self.runtime.pool.prefetch(user_text, first);
        if !prefetched.is_empty() {
            content.push(Block::Text {
                text: format!(
                    "<tool-discovery>Deferred tools that may help, already loaded: {}</tool-discovery>",
                    prefetched.join(", ")
                ),
            });
        }
        self.record(
            Message {
                role: Role::User,
                content,
            },
            observer,
        )?;

        let mut report = TurnReport {
            outcome: Outcome::MaxTurns,
            text: String::new(),
            requests: 0,
            usage: Usage::default(),
            stop_reason: None,
        };
        while report.requests < self.max_turns {
            report.requests += 1;
            let tools = self.runtime.pool.request_tools();
            let request = ModelRequest {
                model: self.model.clone(),
                system: vec![self.system.clone()],
                messages: self.messages.clone(),
                tools: match self.provider.format() {
                    ToolFormat::Anthropic => anthropic::render_tools(&tools),
                    ToolFormat::OpenAi => openai::render_tools(&tools),
                },
                max_tokens: self.max_tokens,
            };
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ExecutionEvent>();
            let forward = {
                let observer = Arc::clone(observer);
                tokio::spawn(async move {
                    while let Some(event) = rx.recv().await {
                        observer(AgentEvent::Tool { event });
                    }
                })
            };
            let mut attempt = cancel.child_token();
            let mut batch = self
                .runtime
                .executor
                .batch(attempt.clone(), Some(tx.clone()));
            let mut discarded = Vec::new();
            let mut started: BTreeSet<String> = BTreeSet::new();
            let response = {
                let observer = Arc::clone(observer);
                let executor = self.runtime.executor.clone();
                let mut on_event = |event: StreamEvent| match event {
                    StreamEvent::TextDelta(text) => observer(AgentEvent::Text { text }),
                    StreamEvent::ThinkingDelta(text) => observer(AgentEvent::Thinking { text }),
                    StreamEvent::ToolUseStarted { .. } => {}
                    StreamEvent::ToolUseComplete {
                        id,
                        name,
                        input_json,
                    } => {
                        started.insert(id.clone());
                        batch.push(ToolCall::from_json_text(id, name, &input_json));
                    }
                    StreamEvent::Retrying {
                        attempt: number,
                        reason,
                        ..
                    } => {
                        // What the failed attempt streamed is void: calls it started are
                        // cancelled and their results dropped; the retry starts afresh.
                        if !started.is_empty() {
                            attempt.cancel();
                            attempt = cancel.child_token();
                            let old = std::mem::replace(
                                &mut batch,
                                executor.batch(attempt.clone(), Some(tx.clone())),
                            );
                            discarded.push(old);
                            started.clear();
                        }
                        observer(AgentEvent::Retrying {
                            attempt: number,
                            reason,
                        });
                    }
                };
                self.provider.stream(&request, &mut on_event, cancel).await
            };
            drop(tx);
            for old in discarded {
                let _ = old.finish().await;
            }
            let response = match response {
                Ok(response) => response,
                Err(ProviderError::Cancelled) => {
                    // The message never completed: its calls are cancelled and it is not kept.
                    let _ = batch.finish().await;
                    let _ = forward.await;
                    report.outcome = Outcome::Cancelled;
                    return Ok(report);
                }
                Err(err) => {
                    let _ = batch.finish().await;
                    let _ = forward.await;
                    return Err(err.into());
                }
            };
            add_usage(&mut report.usage, &response.usage);
            let calls: Vec<(String, String, serde_json::Value)> = response
                .message
                .tool_uses()
                .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
                .collect();
            for (id, name, input) in &calls {
                if !started.contains(id) {
                    batch.push(ToolCall::new(id.clone(), name.clone(), input.clone()));
                }
            }
            let text = response.message.text();
            if !text.is_empty() {
                report.text = text;
            }
            self.record(response.message, observer)?;
            if calls.is_empty() {
                let _ = batch.finish().await;
                let _ = forward.await;
                report.outcome = Outcome::Done;
                report.stop_reason = Some(response.stop_reason);
                return Ok(report);
            }
            let results = batch.finish().await;
            let _ = forward.await;
            for ((_, name, _), result) in calls.iter().zip(&results) {
                observer(AgentEvent::ToolResult {
                    name: name.clone(),
                    result: result.clone(),
                });
            }
            let mut content: Vec<Block> = results.into_iter().map(Block::ToolResult).collect();
            content.extend(self.pool_notes());
            self.record(
                Message {
                    role: Role::User,
                    content,
                },
                observer,
            )?;
            if cancel.is_cancelled() {
                report.outcome = Outcome::Cancelled;
                return Ok(report);
            }
        }
        Ok(report)
    }
}

fn add_usage(total: &mut Usage, more: &Usage) {
    total.input_tokens += more.input_tokens;
    total.output_tokens += more.output_tokens;
    total.cache_read_input_tokens += more.cache_read_input_tokens;
    total.cache_creation_input_tokens += more.cache_creation_input_tokens;
}
