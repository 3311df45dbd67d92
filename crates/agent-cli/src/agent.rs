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

use crate::compaction::{self, Trigger, Window};
use crate::conversation::{Block, Message, Role, StopReason, Usage};
use crate::provider::{ModelRequest, Provider, ProviderError, Response, StreamEvent};
use crate::runtime::ToolRuntime;
use crate::structured::{self, Slot};
use crate::transcript::Transcript;
use crate::usage::{Costed, Meter};

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
    /// The conversation was replaced by a summary and its most recent messages.
    Compacted {
        /// Why.
        trigger: Trigger,
        /// The context's estimated size before, in tokens.
        tokens_before: u64,
        /// And after.
        tokens_after: u64,
        /// How many recent messages were kept verbatim.
        kept: usize,
    },
    /// An automatic compaction failed; the conversation goes on as it was.
    CompactionFailed {
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
    /// Token usage summed over the requests (a compaction's request included).
    pub usage: Usage,
    /// What the turn cost in dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Why the model stopped, when it did.
    pub stop_reason: Option<StopReason>,
    /// The answer the `structured_output` tool accepted, when one was expected.
    pub structured: Option<serde_json::Value>,
    metered: Costed,
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
            cost_usd: None,
            stop_reason: None,
            structured: None,
            metered: Costed::default(),
        }
    }

    fn ended(mut self, outcome: Outcome) -> Self {
        self.outcome = outcome;
        self
    }

    /// Adds one request's usage.
    fn add(&mut self, one: &Costed) {
        self.metered.absorb(one);
        self.usage = self.metered.usage;
        self.cost_usd = self.metered.cost_usd;
    }

    /// The turn's usage and cost.
    pub fn costed(&self) -> Costed {
        self.metered
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
    /// The context window and when to compact.
    pub window: Window,
    meter: Meter,
    /// The project instructions' share of the system prompt, in bytes.
    instructions: usize,
    /// The structured answer each turn must end with, when one is expected.
    structured: Option<Expected>,
    /// Blocks the next user message carries after its text (`@path` attachments).
    attachments: Vec<Block>,
    /// The input tokens the provider counted for the last request, and how many messages that
    /// request carried: the base of the next request's size.
    last_input: Option<(u64, usize)>,
}

impl Agent {
    /// An agent continuing `messages` (empty for a new session); the runtime takes up the tools
    /// and skills they show were found ([`ToolRuntime::resume_from`]).
    pub fn new(
        provider: Arc<dyn Provider>,
        runtime: ToolRuntime,
        transcript: Transcript,
        messages: Vec<Message>,
        model: String,
    ) -> Self {
        runtime.resume_from(&messages);
        let system = runtime.system_prompt();
        let window = Window {
            tokens: crate::usage::context_window(&model, None),
            threshold: compaction::DEFAULT_THRESHOLD,
        };
        Self {
            provider,
            runtime,
            transcript,
            messages,
            model,
            system,
            max_turns: 50,
            max_tokens: 8_192,
            window,
            meter: Meter::default(),
            instructions: 0,
            structured: None,
            attachments: Vec::new(),
            last_input: None,
        }
    }

    /// Counts usage and cost on `meter` (shared with whatever else spends for this session).
    #[must_use]
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = meter;
        self
    }

    /// Adds the project instructions (see [`crate::instructions`]) to the system prompt. Call it
    /// before the first turn: the system prompt then stays the same for the whole session.
    #[must_use]
    pub fn with_instructions(mut self, section: Option<String>) -> Self {
        if let Some(section) = section {
            self.instructions += section.len();
            self.system.push_str(&section);
        }
        self
    }

    /// The estimated tokens of the project instructions in the system prompt.
    pub fn instructions_tokens(&self) -> u64 {
        (self.instructions as u64).div_ceil(4)
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

    /// The system prompt, fixed for the session.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// The model requests go to.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Sends later requests to `model`.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.model = model.into();
    }

    /// The session's usage and cost so far.
    pub fn session_usage(&self) -> Costed {
        self.meter.total()
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
        let mut limit_compacted = false;
        // Once a compaction fails, or leaves the context past the threshold (the system prompt,
        // tools and latest messages alone come near the window), compacting again before every
        // request would only summarise the summary: the turn goes on without.
        let mut auto_compaction = true;
        if let Some(expected) = &mut self.structured {
            expected.reminders = 0;
        }
        while report.requests < self.max_turns {
            if auto_compaction && self.window.needs_compaction(self.context_tokens()) {
                let compacted = self
                    .compact(Trigger::Auto, None, cancel, observer, &mut report)
                    .await;
                let failure = match compacted {
                    Err(_) if cancel.is_cancelled() => {
                        return Ok(report.ended(Outcome::Cancelled));
                    }
                    Err(error) => Some(format!("{error:#}")),
                    Ok(()) if self.window.needs_compaction(self.context_tokens()) => Some(
                        "the context is still past the threshold after compacting; no more \
                         compactions this turn (a smaller system prompt or fewer tools would help)"
                            .to_owned(),
                    ),
                    Ok(()) => None,
                };
                if let Some(reason) = failure {
                    // The request may still fit; if it does not, the provider says so and the
                    // turn compacts once more or ends with that error.
                    auto_compaction = false;
                    observer(AgentEvent::CompactionFailed { reason });
                }
            }
            report.requests += 1;
            let step = self
                .step(cancel, observer, &mut report, &mut limit_compacted)
                .await?;
            if let Step::End(outcome) = step {
                return Ok(report.ended(outcome));
            }
        }
        Ok(report)
    }

    /// One round trip: the request, the streamed message and its calls' results. A context
    /// length error compacts the conversation once per turn and asks for the next round.
    async fn step(
        &mut self,
        cancel: &CancellationToken,
        observer: &Observer,
        report: &mut TurnReport,
        limit_compacted: &mut bool,
    ) -> anyhow::Result<Step> {
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
                    ProviderError::Cancelled => Ok(Step::End(Outcome::Cancelled)),
                    ProviderError::ContextTooLong { .. } if !*limit_compacted => {
                        *limit_compacted = true;
                        self.compact(Trigger::ContextLimit, None, cancel, observer, report)
                            .await?;
                        Ok(Step::Next)
                    }
                    error => Err(error.into()),
                };
            }
        };
        self.account(&response.usage, request.messages.len(), report);
        let text = response.message.text();
        if !text.is_empty() {
            report.text = text;
        }
        let uses = tool_use_names(&response.message);
        self.record(response.message, observer)?;
        if uses.is_empty() {
            calls.finish().await;
            report.stop_reason = Some(response.stop_reason);
            return self.model_ended(observer);
        }
        let results = self.finish_calls(calls, &uses, observer).await;
        // Only an answer this message gave counts: one left by a voided attempt of a retried
        // stream is dropped.
        let answered = structured_answer_accepted(&uses, &results);
        self.record(results, observer)?;
        let value = self.structured.as_ref().and_then(|e| e.slot.take());
        if let Some(value) = value.filter(|_| answered) {
            report.structured = Some(value);
            return Ok(Step::End(Outcome::Done));
        }
        Ok(if cancel.is_cancelled() {
            Step::End(Outcome::Cancelled)
        } else {
            Step::Next
        })
    }

    /// The model ended its turn: done, unless a structured answer is expected and has not come,
    /// in which case the model is reminded (a few times at most).
    fn model_ended(&mut self, observer: &Observer) -> anyhow::Result<Step> {
        match &mut self.structured {
            Some(expected) if expected.reminders < MAX_REMINDERS => {
                expected.reminders += 1;
                self.record(Message::user_text(structured::reminder()), observer)?;
                Ok(Step::Next)
            }
            _ => Ok(Step::End(Outcome::Done)),
        }
    }

    /// Adds blocks (attached files, see [`crate::attachments`]) to the next user message.
    pub fn attach(&mut self, blocks: Vec<Block>) {
        self.attachments.extend(blocks);
    }

    /// Makes each turn end with a value the `structured_output` tool accepted (see
    /// [`crate::structured`]); the value is the report's `structured`.
    pub fn expect_structured_output(&mut self, slot: Slot) {
        self.structured = Some(Expected { slot, reminders: 0 });
    }

    /// The next request's size in tokens: what the provider counted for the last request plus
    /// an estimate of the messages since; an estimate of everything before the first answer.
    pub fn context_tokens(&self) -> u64 {
        match self.last_input {
            Some((tokens, sent)) if tokens > 0 && sent <= self.messages.len() => {
                tokens + compaction::estimate_tokens(&self.messages[sent..])
            }
            _ => {
                self.fixed_tokens().0
                    + self.fixed_tokens().1
                    + compaction::estimate_tokens(&self.messages)
            }
        }
    }

    /// Estimated tokens of the system prompt and of the tools array, which every request
    /// carries unchanged.
    pub fn fixed_tokens(&self) -> (u64, u64) {
        let tools = serde_json::to_string(&self.runtime.pool.request_tools())
            .map_or(0, |t| compaction::estimate_text_tokens(&t));
        (compaction::estimate_text_tokens(&self.system), tools)
    }

    /// Counts a response's usage for the turn and the session, and remembers its input size.
    fn account(&mut self, usage: &Usage, sent: usize, report: &mut TurnReport) {
        report.add(&self.meter.record(&self.model, *usage));
        let input =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        self.last_input = Some((input, sent));
    }

    /// Compacts the conversation now (`/compact`); returns what the summary request cost.
    pub async fn compact_now(
        &mut self,
        keep: Option<&str>,
        cancel: &CancellationToken,
        observer: &Observer,
    ) -> anyhow::Result<Costed> {
        let mut report = TurnReport::new();
        self.compact(Trigger::Manual, keep, cancel, observer, &mut report)
            .await?;
        Ok(report.costed())
    }

    /// Replaces the conversation by the model's summary of it and its most recent messages
    /// (`keep` says what the summary must keep in particular), and records that in the
    /// transcript. The system prompt and the tools stay as they are, so the prompt cache of
    /// their prefix still serves the next request.
    async fn compact(
        &mut self,
        trigger: Trigger,
        keep: Option<&str>,
        cancel: &CancellationToken,
        observer: &Observer,
        report: &mut TurnReport,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.messages.is_empty(),
            "there is nothing to compact yet: the conversation is empty"
        );
        let before = self.context_tokens();
        let budget = self
            .window
            .keep_budget(compaction::estimate_tokens(&self.messages));
        let from = compaction::kept_from(&self.messages, budget);
        let (summary, usage) = self.summarize(keep, cancel).await?;
        report.add(&self.meter.record(&self.model, usage));
        let kept = self.messages.len() - from;
        self.transcript.compaction(trigger, &summary, kept)?;
        self.messages = compaction::compacted(&summary, &self.messages, from);
        self.last_input = None;
        observer(AgentEvent::Compacted {
            trigger,
            tokens_before: before,
            tokens_after: self.context_tokens(),
            kept,
        });
        Ok(())
    }

    /// Asks the model for the summary, with the same system prompt and tools as every request
    /// (so the cached prefix serves it). When even that request is too long, the oldest half
    /// of what is left is left out, a few times at most.
    async fn summarize(
        &self,
        keep: Option<&str>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(String, Usage)> {
        let mut history: &[Message] = &self.messages;
        let mut shortened = false;
        loop {
            let mut messages = Vec::with_capacity(history.len() + 2);
            if shortened {
                messages.push(Message::user_text(
                    "[The oldest messages of this conversation were left out here: they no longer fit in the context window.]",
                ));
            }
            messages.extend_from_slice(history);
            messages.push(compaction::summary_request(keep));
            let request = ModelRequest {
                messages,
                ..self.request()
            };
            match finished(self.provider.stream(&request, cancel)).await {
                Ok(response) => {
                    let text = response.message.text();
                    anyhow::ensure!(
                        !text.trim().is_empty(),
                        "the model answered the summary request without text; the conversation was left as it was"
                    );
                    return Ok((text, response.usage));
                }
                Err(ProviderError::ContextTooLong { message }) => {
                    let cut =
                        compaction::kept_from(history, compaction::estimate_tokens(history) / 2);
                    if cut == 0 || cut >= history.len() {
                        anyhow::bail!(
                            "the conversation cannot be summarised: even its latest messages do not fit ({message}); use /clear to start afresh"
                        );
                    }
                    history = &history[cut..];
                    shortened = true;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Starts the conversation afresh (`/clear`); the transcript records it.
    pub fn clear(&mut self) -> anyhow::Result<()> {
        self.transcript.append(&crate::transcript::Entry::Clear)?;
        self.messages.clear();
        self.last_input = None;
        Ok(())
    }

    /// Records the user's message, with what changed among the deferred tools and the tools
    /// and skills prefetched for it. What a skill allowed in the previous turn ends here.
    fn begin_turn(&mut self, user_text: &str, observer: &Observer) -> anyhow::Result<()> {
        self.runtime.skills.end_turn();
        let first = !self.messages.iter().any(|m| m.role == Role::User);
        let mut content = vec![Block::Text {
            text: user_text.to_owned(),
        }];
        content.append(&mut self.attachments);
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
        let skills = self.runtime.skills.suggest(user_text);
        if let Some(text) = crate::skills::discovery_note(&skills) {
            content.push(Block::Text { text });
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

/// What a round trip leaves to do.
enum Step {
    /// Another request.
    Next,
    /// The turn is over.
    End(Outcome),
}

/// How often a model that ends its turn without the expected structured answer is reminded.
const MAX_REMINDERS: u32 = 3;

/// The structured answer a turn must end with.
struct Expected {
    slot: Slot,
    /// Reminders sent this turn.
    reminders: u32,
}

/// The finished response of a stream whose other events are not needed.
/// Whether this message's `structured_output` call was accepted (its result is no error).
fn structured_answer_accepted(uses: &[(String, String)], results: &Message) -> bool {
    uses.iter()
        .filter(|(_, name)| name == structured::NAME)
        .any(|(id, _)| {
            results.content.iter().any(|block| {
                matches!(block, Block::ToolResult(result) if result.tool_use_id == *id && !result.is_error)
            })
        })
}

async fn finished(mut events: crate::provider::EventStream<'_>) -> Result<Response, ProviderError> {
    while let Some(event) = events.next().await {
        if let StreamEvent::Finished(response) = event? {
            return Ok(response);
        }
    }
    Err(ProviderError::Stream(
        "the response stream ended without an answer".to_owned(),
    ))
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
