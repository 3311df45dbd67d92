//! The agent loop: stream the model's message, start each tool call as soon as its block is
//! complete, send the results back, and repeat until the model ends its turn.
//!
//! [`Agent::run_turn`] is the turn in a few lines: `begin_turn` records the user's message, then
//! each round trip is `request` (the conversation and the pool's tools), `stream_message` (text
//! to the observer, each [`StreamEvent::ToolCall`] started at once, the calls of an attempt a
//! retry made void cancelled), `finish_calls` (the results, matched to the message's `tool_use`
//! blocks by id) and `record`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use serde::Serialize;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tool_core::{Batch, CancellationToken, ExecutionEvent, Executor, ToolCall, ToolResult};

use crate::conversation::{Block, Message, Role, StopReason, Usage};
use crate::provider::{ModelRequest, Provider, ProviderError, Response, StreamEvent};
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

impl TurnReport {
    /// A turn that has made no request yet; it ends at the turn limit unless something else
    /// ends it first.
    fn new() -> Self {
        Self {
            outcome: Outcome::MaxTurns,
            text: String::new(),
            requests: 0,
            usage: Usage::default(),
            stop_reason: None,
        }
    }

    fn ended(mut self, outcome: Outcome) -> Self {
        self.outcome = outcome;
        self
    }
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

    /// Uses `system` as the system prompt instead of the runtime's (a sub-agent's is its agent
    /// type's instructions).
    #[must_use]
    pub fn with_system_prompt(mut self, system: String) -> Self {
        self.system = system;
        self
    }

    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Runs one user turn to its end.
    pub async fn run_turn(
        &mut self,
        user_text: &str,
        cancel: &CancellationToken,
        observer: &Observer,
    ) -> Result<TurnReport, anyhow::Error> {
        self.begin_turn(user_text, observer)?;
        let mut report = TurnReport::new();
        while report.requests < self.max_turns {
            report.requests += 1;
            let request = self.request();
            let mut calls = MessageCalls::new(&self.runtime.executor, cancel, observer);
            let streamed = self
                .stream_message(&request, &mut calls, cancel, observer)
                .await;
            let response = match streamed {
                Ok(response) => response,
                Err(error) => {
                    // The message never completed: its calls are cancelled and it is not kept.
                    calls.finish().await;
                    return match error {
                        ProviderError::Cancelled => Ok(report.ended(Outcome::Cancelled)),
                        error => Err(error.into()),
                    };
                }
            };
            report.usage += response.usage;
            let text = response.message.text();
            if !text.is_empty() {
                report.text = text;
            }
            let uses = tool_use_names(&response.message);
            self.record(response.message, observer)?;
            if uses.is_empty() {
                calls.finish().await;
                report.stop_reason = Some(response.stop_reason);
                return Ok(report.ended(Outcome::Done));
            }
            let results = self.finish_calls(calls, &uses, observer).await;
            self.record(results, observer)?;
            if cancel.is_cancelled() {
                return Ok(report.ended(Outcome::Cancelled));
            }
        }
        Ok(report)
    }

    /// Records the user's message, with what changed among the deferred tools and the tools
    /// prefetched for it.
    fn begin_turn(&mut self, user_text: &str, observer: &Observer) -> anyhow::Result<()> {
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
        )
    }

    /// The next request: the whole conversation and the tools the pool chooses now.
    fn request(&self) -> ModelRequest {
        ModelRequest {
            model: self.model.clone(),
            system: vec![self.system.clone()],
            messages: self.messages.clone(),
            tools: self.runtime.pool.request_tools(),
            max_tokens: self.max_tokens,
        }
    }

    /// Streams one assistant message: text and reasoning go to the observer, and each call
    /// starts as soon as the provider reports it complete.
    async fn stream_message(
        &self,
        request: &ModelRequest,
        calls: &mut MessageCalls,
        cancel: &CancellationToken,
        observer: &Observer,
    ) -> Result<Response, ProviderError> {
        let mut events = self.provider.stream(request, cancel);
        while let Some(event) = events.next().await {
            match event? {
                StreamEvent::TextDelta(text) => observer(AgentEvent::Text { text }),
                StreamEvent::ThinkingDelta(text) => observer(AgentEvent::Thinking { text }),
                StreamEvent::ToolUseStarted { .. } => {}
                StreamEvent::ToolCall(call) => calls.start(call),
                StreamEvent::Retrying {
                    attempt, reason, ..
                } => {
                    // What the failed attempt streamed is void, and the retry streams it again.
                    calls.discard_attempt();
                    observer(AgentEvent::Retrying { attempt, reason });
                }
                StreamEvent::Finished(response) => {
                    // The message is complete: the calls held back until now may start.
                    calls.release();
                    return Ok(response);
                }
            }
        }
        Err(ProviderError::Stream(
            "the response stream ended without an answer".to_owned(),
        ))
    }

    /// Waits for the message's calls and answers each `tool_use` block, in the message's order,
    /// with the result of the call of the same id.
    async fn finish_calls(
        &self,
        calls: MessageCalls,
        uses: &[(String, String)],
        observer: &Observer,
    ) -> Message {
        let mut results: BTreeMap<String, ToolResult> = calls
            .finish()
            .await
            .into_iter()
            .map(|result| (result.tool_use_id.clone(), result))
            .collect();
        let mut content = Vec::with_capacity(uses.len());
        for (id, name) in uses {
            let result = results.remove(id).unwrap_or_else(|| {
                ToolResult::error(id, "the call did not run; the provider never reported it")
            });
            observer(AgentEvent::ToolResult {
                name: name.clone(),
                result: result.clone(),
            });
            content.push(Block::ToolResult(result));
        }
        content.extend(self.pool_notes());
        Message {
            role: Role::User,
            content,
        }
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
}

/// The id and tool name of each `tool_use` block of a message, in order.
fn tool_use_names(message: &Message) -> Vec<(String, String)> {
    message
        .tool_uses()
        .map(|(id, name, _)| (id.to_owned(), name.to_owned()))
        .collect()
}

/// The tool calls of one assistant message, each started as soon as the provider reports it.
struct MessageCalls {
    executor: Executor,
    /// The turn's token; each attempt's calls run under a child of it.
    turn: CancellationToken,
    attempt: CancellationToken,
    batch: Batch,
    /// How many calls this attempt started.
    started: usize,
    /// The batches of attempts a retry made void: cancelled, still to be awaited.
    discarded: Vec<Batch>,
    progress: UnboundedSender<ExecutionEvent>,
    /// Passes the calls' progress on to the observer.
    forward: JoinHandle<()>,
}

impl MessageCalls {
    fn new(executor: &Executor, turn: &CancellationToken, observer: &Observer) -> Self {
        let (progress, mut events) = unbounded_channel::<ExecutionEvent>();
        let observer = Arc::clone(observer);
        let forward = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                observer(AgentEvent::Tool { event });
            }
        });
        let attempt = turn.child_token();
        Self {
            batch: executor.batch(attempt.clone(), Some(progress.clone())),
            executor: executor.clone(),
            turn: turn.clone(),
            attempt,
            started: 0,
            discarded: Vec::new(),
            progress,
            forward,
        }
    }

    /// Starts a call that only reads at once; holds any other (and every later one) until the
    /// message is complete, so that a retried stream cannot repeat a side effect.
    fn start(&mut self, call: ToolCall) {
        self.started += 1;
        self.batch.push_streamed(call);
    }

    /// The message is complete: starts the held calls.
    fn release(&mut self) {
        self.batch.release();
    }

    /// A retry voids the failed attempt: the calls it started are cancelled and their results
    /// dropped.
    fn discard_attempt(&mut self) {
        if self.started == 0 {
            return;
        }
        self.attempt.cancel();
        self.attempt = self.turn.child_token();
        let fresh = self
            .executor
            .batch(self.attempt.clone(), Some(self.progress.clone()));
        self.discarded
            .push(std::mem::replace(&mut self.batch, fresh));
        self.started = 0;
    }

    /// Waits for every call, the cancelled ones too, and for their progress to reach the
    /// observer; returns the results of the calls of the attempt that counted.
    async fn finish(self) -> Vec<ToolResult> {
        for old in self.discarded {
            let _ = old.finish().await;
        }
        let results = self.batch.finish().await;
        drop(self.progress);
        let _ = self.forward.await;
        results
    }
}
