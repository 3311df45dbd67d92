//! The agent loop: stream the model's message, start each tool call as soon as its block is
//! complete, send the results back, and repeat until the model ends its turn.
//!
//! [`Agent::run_turn`] is the turn in a few lines: `begin_turn` records the user's message, then
//! each round trip is `request` (the conversation and the pool's tools), `stream_message` (text
//! to the front end, each [`StreamEvent::ToolCall`] started at once, the calls of an attempt a
//! retry made void cancelled), `finish_calls` (the results, matched to the message's `tool_use`
//! blocks by id) and `record`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt as _;
use tool_core::{CancellationToken, ToolResult};

use crate::compaction::{self, Trigger, Window};
use crate::conversation::{Block, Message, Role, Usage};
use crate::frontend::FrontEnd;
use crate::provider::{ModelRequest, Provider, ProviderError, Response, StreamEvent, Thinking};
use crate::runtime::ToolRuntime;
use crate::structured::{self, Slot};
use crate::transcript::Transcript;
use crate::usage::{Costed, Meter};

mod calls;
mod compacting;
mod events;

use calls::*;
pub use events::{AgentEvent, Outcome, TurnReport};

/// The answer's `max_tokens` for a model the table of known models does not know.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The smallest output limit a request gets, however full the context.
const MIN_ANSWER_TOKENS: u32 = 1_024;

/// A conversation with a model and its tools.
pub struct Agent {
    provider: Arc<dyn Provider>,
    /// The tools.
    pub runtime: ToolRuntime,
    transcript: Transcript,
    messages: compaction::History,
    model: String,
    system: String,
    /// The most model requests per user turn.
    pub max_turns: usize,
    /// The most output tokens per request (of the answer: a thinking budget comes on top).
    pub max_tokens: u32,
    /// How much the model may think before it answers.
    pub thinking: Thinking,
    /// The context window and when to compact.
    pub window: Window,
    meter: Meter,
    /// The project instructions' share of the system prompt, in characters.
    instructions: usize,
    /// The structured answer each turn must end with, when one is expected.
    structured: Option<Expected>,
    /// Blocks the next user message carries after its text (`@path` attachments).
    attachments: Vec<Block>,
    /// The input tokens the provider counted for the last request, and how many messages that
    /// request carried: the base of the next request's size.
    last_input: Option<(u64, usize)>,
    /// Where events go (the runtime's front end).
    front_end: Arc<dyn FrontEnd>,
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
        let front_end = Arc::clone(runtime.front_end());
        let max_tokens = crate::usage::max_output_tokens(&model).unwrap_or(DEFAULT_MAX_TOKENS);
        let window = Window {
            tokens: crate::usage::context_window(&model, None),
            threshold: compaction::DEFAULT_THRESHOLD,
        };
        Self {
            provider,
            runtime,
            transcript,
            messages: compaction::History::new(messages),
            model,
            system,
            max_turns: 50,
            max_tokens,
            thinking: Thinking::Off,
            window,
            meter: Meter::default(),
            instructions: 0,
            structured: None,
            attachments: Vec::new(),
            last_input: None,
            front_end,
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
            self.instructions += section.chars().count();
            self.system.push_str(&section);
        }
        self
    }

    /// The estimated tokens of the project instructions in the system prompt.
    pub fn instructions_tokens(&self) -> u64 {
        compaction::estimate_chars_tokens(self.instructions)
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

    /// The estimated tokens of the conversation (each message estimated once, when it joined).
    pub(crate) fn messages_tokens(&self) -> u64 {
        self.messages.tokens_from(0)
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
    ) -> Result<TurnReport, anyhow::Error> {
        self.begin_turn(user_text)?;
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
                let compacted = self.compact(Trigger::Auto, None, cancel, &mut report).await;
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
                    self.front_end
                        .event(AgentEvent::CompactionFailed { reason });
                }
            }
            report.requests += 1;
            let step = self.step(cancel, &mut report, &mut limit_compacted).await?;
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
        report: &mut TurnReport,
        limit_compacted: &mut bool,
    ) -> anyhow::Result<Step> {
        let request = self.request();
        let mut calls = MessageCalls::new(&self.runtime.executor, cancel, &self.front_end);
        let streamed = self.stream_message(&request, &mut calls, cancel).await;
        let response = match streamed {
            Ok(response) => response,
            Err(error) => {
                // The message never completed: its calls are cancelled and it is not kept.
                calls.finish().await;
                return match error {
                    ProviderError::Cancelled => Ok(Step::End(Outcome::Cancelled)),
                    ProviderError::ContextTooLong { .. } if !*limit_compacted => {
                        *limit_compacted = true;
                        self.compact(Trigger::ContextLimit, None, cancel, report)
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
        self.record(response.message)?;
        if uses.is_empty() {
            calls.finish().await;
            report.stop_reason = Some(response.stop_reason);
            return self.model_ended();
        }
        let results = self.finish_calls(calls, &uses).await;
        // Only an answer this message gave counts: one left by a voided attempt of a retried
        // stream is dropped.
        let answered = structured_answer_accepted(&uses, &results);
        self.record(results)?;
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
    fn model_ended(&mut self) -> anyhow::Result<Step> {
        match &mut self.structured {
            Some(expected) if expected.reminders < MAX_REMINDERS => {
                expected.reminders += 1;
                self.record(Message::user_text(structured::reminder()))?;
                Ok(Step::Next)
            }
            _ => Ok(Step::End(Outcome::Done)),
        }
    }

    /// Adds blocks (attached files, see [`crate::attachments`]) to the next user message.
    pub fn attach(&mut self, blocks: Vec<Block>) {
        self.attachments.extend(blocks);
    }

    /// Attaches the files that `prompt`'s `@path` words name to the next user message (see
    /// [`crate::attachments`]), except those a `read_file` deny rule covers; returns a note for
    /// each word that could not be attached, saying why.
    pub fn attach_files(&mut self, prompt: &str) -> Vec<String> {
        let cwd = self.runtime.session.cwd().to_path_buf();
        let rules = self.permission_rules();
        let read_file = self.runtime.registry.get("read_file");
        let denied = |path: &std::path::Path| {
            read_file.as_ref().is_some_and(|entry| {
                let input = serde_json::json!({ "path": path });
                rules
                    .deny
                    .iter()
                    .any(|rule| rule.matches(entry.tool(), &input, &cwd))
            })
        };
        let (blocks, notes) = crate::attachments::attach(prompt, &cwd, &denied);
        self.attach(blocks);
        notes
    }

    /// The permission rules in force now ("always allow" answers included).
    pub fn permission_rules(&self) -> tool_core::PermissionRules {
        self.runtime.permissions.rules()
    }

    /// Makes each turn end with a value the `structured_output` tool accepted (see
    /// [`crate::structured`]); the value is the report's `structured`.
    pub fn expect_structured_output(&mut self, slot: Slot) {
        self.structured = Some(Expected { slot, reminders: 0 });
    }

    /// Records the user's message, with what changed among the deferred tools and the tools
    /// and skills prefetched for it. What a skill allowed in the previous turn ends here.
    fn begin_turn(&mut self, user_text: &str) -> anyhow::Result<()> {
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
        self.record(Message {
            role: Role::User,
            content,
        })
    }

    /// The next request: the whole conversation and the tools the pool chooses now.
    fn request(&self) -> ModelRequest<'_> {
        ModelRequest {
            model: self.model.clone(),
            system: vec![self.system.clone()],
            messages: Cow::Borrowed(&self.messages[..]),
            tools: self.runtime.pool.request_tools(),
            max_tokens: self.output_limit(),
            thinking: self.thinking,
        }
    }

    /// The request's output limit: the answer's `max_tokens` (with the thinking budget on top),
    /// within the room the context window leaves past the input, since an API may refuse input
    /// and output limit together over the window. Never below what one answer needs (the
    /// thinking budget plus [`MIN_ANSWER_TOKENS`]): past that, it is compaction's turn.
    fn output_limit(&self) -> u32 {
        let wanted = self.thinking.max_tokens(self.max_tokens);
        let room = self.window.tokens.saturating_sub(self.context_tokens());
        let floor = match self.thinking {
            Thinking::Budget(budget) => budget.saturating_add(MIN_ANSWER_TOKENS),
            _ => MIN_ANSWER_TOKENS,
        };
        wanted.min(u32::try_from(room).unwrap_or(u32::MAX).max(floor))
    }

    /// Streams one assistant message: text and reasoning go to the front end, and each call
    /// starts as soon as the provider reports it complete.
    async fn stream_message(
        &self,
        request: &ModelRequest<'_>,
        calls: &mut MessageCalls,
        cancel: &CancellationToken,
    ) -> Result<Response, ProviderError> {
        let mut events = self.provider.stream(request, cancel);
        while let Some(event) = events.next().await {
            match event? {
                StreamEvent::TextDelta(text) => self.front_end.event(AgentEvent::Text { text }),
                StreamEvent::ThinkingDelta(text) => {
                    self.front_end.event(AgentEvent::Thinking { text })
                }
                StreamEvent::ToolUseStarted { .. } => {}
                StreamEvent::ToolCall(call) => calls.start(call),
                StreamEvent::Retrying {
                    attempt, reason, ..
                } => {
                    // What the failed attempt streamed is void, and the retry streams it again.
                    calls.discard_attempt();
                    self.front_end
                        .event(AgentEvent::Retrying { attempt, reason });
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
    async fn finish_calls(&self, calls: MessageCalls, uses: &[(String, String)]) -> Message {
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
            self.front_end.event(AgentEvent::ToolResult {
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

    fn record(&mut self, message: Message) -> anyhow::Result<()> {
        self.transcript.message(&message)?;
        self.front_end.event(AgentEvent::Message {
            message: message.clone(),
        });
        self.messages.push(message);
        Ok(())
    }

    /// Blocks for what changed among the deferred tools since the last request. The pool first
    /// catches up with the registry, so that tools an MCP server brought a moment ago are
    /// announced in this request rather than whenever the background follower gets to them.
    fn pool_notes(&self) -> Vec<Block> {
        self.runtime.sync_pool();
        self.runtime
            .pool
            .take_deltas()
            .into_iter()
            .map(|text| Block::Text { text })
            .collect()
    }
}
