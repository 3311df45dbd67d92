//! What the agent reports while it works: events for the front end, how a turn ended, and what it
//! spent.

use serde::Serialize;
use tool_core::{ExecutionEvent, ToolResult};

use crate::compaction::Trigger;
use crate::conversation::{Message, StopReason, Usage};
use crate::usage::Costed;

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
    /// A model request's token usage (a compaction's summary request too), as the provider
    /// counted it.
    Usage {
        /// The model the request went to.
        model: String,
        /// What it used.
        usage: Usage,
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
    pub(super) fn new() -> Self {
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

    pub(super) fn ended(mut self, outcome: Outcome) -> Self {
        self.outcome = outcome;
        self
    }

    /// Adds one request's usage.
    pub(super) fn add(&mut self, one: &Costed) {
        self.metered.absorb(one);
        self.usage = self.metered.usage;
        self.cost_usd = self.metered.cost_usd;
    }

    /// The turn's usage and cost.
    pub fn costed(&self) -> Costed {
        self.metered
    }
}
