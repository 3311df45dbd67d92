//! The bookkeeping of one model message's tool calls: the calls started while it streams, the
//! attempts a retry made void, and the structured answer's reminders.

use std::sync::Arc;

use futures::StreamExt as _;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tool_core::{Batch, CancellationToken, ExecutionEvent, Executor, ToolCall, ToolResult};

use super::events::{AgentEvent, Outcome};
use crate::conversation::{Block, Message};
use crate::frontend::FrontEnd;
use crate::provider::{ProviderError, Response, StreamEvent};
use crate::structured::{self, Slot};

/// What a round trip leaves to do.
pub(crate) enum Step {
    /// Another request.
    Next,
    /// The turn is over.
    End(Outcome),
}

/// How often a model that ends its turn without the expected structured answer is reminded.
pub(crate) const MAX_REMINDERS: u32 = 3;

/// The structured answer a turn must end with.
pub(crate) struct Expected {
    pub(crate) slot: Slot,
    /// Reminders sent this turn.
    pub(crate) reminders: u32,
}

/// The finished response of a stream whose other events are not needed.
/// Whether this message's `structured_output` call was accepted (its result is no error).
pub(crate) fn structured_answer_accepted(uses: &[(String, String)], results: &Message) -> bool {
    uses.iter()
        .filter(|(_, name)| name == structured::NAME)
        .any(|(id, _)| {
            results.content.iter().any(|block| {
                matches!(block, Block::ToolResult(result) if result.tool_use_id == *id && !result.is_error)
            })
        })
}

pub(crate) async fn finished(
    mut events: crate::provider::EventStream<'_>,
) -> Result<Response, ProviderError> {
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
pub(crate) fn tool_use_names(message: &Message) -> Vec<(String, String)> {
    message
        .tool_uses()
        .map(|(id, name, _)| (id.to_owned(), name.to_owned()))
        .collect()
}

/// The tool calls of one assistant message, each started as soon as the provider reports it.
pub(crate) struct MessageCalls {
    pub(crate) executor: Executor,
    /// The turn's token; each attempt's calls run under a child of it.
    pub(crate) turn: CancellationToken,
    pub(crate) attempt: CancellationToken,
    pub(crate) batch: Batch,
    /// How many calls this attempt started.
    pub(crate) started: usize,
    /// The batches of attempts a retry made void: cancelled, still to be awaited.
    pub(crate) discarded: Vec<Batch>,
    pub(crate) progress: UnboundedSender<ExecutionEvent>,
    /// Passes the calls' progress on to the front end.
    pub(crate) forward: JoinHandle<()>,
}

impl MessageCalls {
    pub(crate) fn new(
        executor: &Executor,
        turn: &CancellationToken,
        front_end: &Arc<dyn FrontEnd>,
    ) -> Self {
        let (progress, mut events) = unbounded_channel::<ExecutionEvent>();
        let front_end = Arc::clone(front_end);
        let forward = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                front_end.event(AgentEvent::Tool { event });
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
    pub(crate) fn start(&mut self, call: ToolCall) {
        self.started += 1;
        self.batch.push_streamed(call);
    }

    /// The message is complete: starts the held calls.
    pub(crate) fn release(&mut self) {
        self.batch.release();
    }

    /// A retry voids the failed attempt: the calls it started are cancelled and their results
    /// dropped.
    pub(crate) fn discard_attempt(&mut self) {
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
    /// front end; returns the results of the calls of the attempt that counted.
    pub(crate) async fn finish(self) -> Vec<ToolResult> {
        for old in self.discarded {
            let _ = old.finish().await;
        }
        let results = self.batch.finish().await;
        drop(self.progress);
        let _ = self.forward.await;
        results
    }
}
