//! One assistant message's calls, started as they arrive and scheduled by their concurrency
//! safety.

use std::fmt;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::context::ExecutionEvent;
use crate::executor::{Admitted, CANCELLED_BEFORE_START, Executor, Stop};
use crate::result::ToolResult;

const NEVER_STARTED: &str = "the message that asked for this call never completed, so the call did not start; nothing was done";

type Done = Shared<BoxFuture<'static, ()>>;

/// The calls of one assistant message, started as they arrive.
///
/// Concurrency-safe calls run together (up to the executor's limit, 10 by default); a call that
/// is not concurrency-safe waits for every earlier call and runs alone, and later calls wait for
/// it. Results come back in the order the calls were pushed.
pub struct Batch {
    executor: Executor,
    semaphore: Arc<Semaphore>,
    cancel: CancellationToken,
    events: Option<UnboundedSender<ExecutionEvent>>,
    last_exclusive: Option<Done>,
    since_exclusive: Vec<Done>,
    running: Vec<(String, JoinHandle<ToolResult>)>,
    /// Calls pushed while the message streams that wait for it to complete.
    held: Vec<(String, Result<Admitted, Stop>)>,
}

// The executor's batch entry points live beside the batch, so that the executor's own module
// needs nothing of this one.
impl Executor {
    /// Runs the calls of one message with the concurrency rules and returns their results in the
    /// order of `calls`.
    pub async fn execute_all(
        &self,
        calls: Vec<ToolCall>,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Vec<ToolResult> {
        let mut batch = self.batch(cancel, events);
        for call in calls {
            batch.push(call);
        }
        batch.finish().await
    }

    /// Starts a batch for one assistant message: push each call as soon as its block is complete
    /// (while the model is still streaming), then collect the results in order.
    pub fn batch(
        &self,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Batch {
        Batch::new(self.clone(), self.inner.max_concurrency, cancel, events)
    }
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("calls", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Batch {
    pub(crate) fn new(
        executor: Executor,
        max_concurrency: usize,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Self {
        Self {
            executor,
            semaphore: Arc::new(Semaphore::new(max_concurrency)),
            cancel,
            events,
            last_exclusive: None,
            since_exclusive: Vec::new(),
            running: Vec::new(),
            held: Vec::new(),
        }
    }

    /// Starts a call as soon as the concurrency rules allow. Must be called inside a tokio runtime.
    ///
    /// The call is looked up, validated against its schema and prepared (its input parsed once)
    /// here, so that its concurrency safety is known before it is scheduled.
    pub fn push(&mut self, call: ToolCall) {
        let id = call.id.clone();
        let admitted = self
            .executor
            .admit(call, self.cancel.clone(), self.events.clone());
        self.start(id, admitted);
    }

    /// Pushes a call of a message that is still streaming. A call that only reads (for its
    /// input) starts at once, unless an earlier call is held; any other call, and every call
    /// after it, is held until [`Batch::release`], when the message is complete: a stream that
    /// fails and is retried streams the message again, and a call that changed something must
    /// not have run for the void attempt.
    pub fn push_streamed(&mut self, call: ToolCall) {
        let id = call.id.clone();
        let admitted = self
            .executor
            .admit(call, self.cancel.clone(), self.events.clone());
        let reads_only = admitted.as_ref().is_ok_and(Admitted::is_read_only);
        if self.held.is_empty() && reads_only {
            self.start(id, admitted);
        } else {
            self.held.push((id, admitted));
        }
    }

    /// Starts the held calls, in the order they were pushed: the message is complete.
    pub fn release(&mut self) {
        for (id, admitted) in std::mem::take(&mut self.held) {
            self.start(id, admitted);
        }
    }

    fn start(&mut self, id: String, admitted: Result<Admitted, Stop>) {
        let safe = admitted
            .as_ref()
            .is_ok_and(|admitted| admitted.is_concurrency_safe());
        let waits = self.schedule(safe);
        let executor = self.executor.clone();
        let semaphore = Arc::clone(&self.semaphore);
        let cancel = self.cancel.clone();
        let events = self.events.clone();
        let task_id = id.clone();
        let handle = tokio::spawn(async move {
            // Dropping `done` at the end of this task (however it ends) releases the calls
            // waiting on this one.
            let (_done, waits) = waits;
            let waited = async {
                futures::future::join_all(waits).await;
                if safe {
                    semaphore.acquire_owned().await.ok()
                } else {
                    None
                }
            };
            let permit = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let result = ToolResult::error(task_id.clone(), CANCELLED_BEFORE_START);
                    if let Some(events) = &events {
                        let _ = events.send(ExecutionEvent::Finished { tool_use_id: task_id, is_error: true });
                    }
                    return result;
                }
                permit = waited => permit,
            };
            let result = executor.run_admitted(task_id, admitted, events).await;
            drop(permit);
            result
        });
        self.running.push((id, handle));
    }

    /// The calls a new call must wait for, and the signal it gives when done: a concurrency-safe
    /// call waits for the last exclusive one; any other call waits for everything before it.
    fn schedule(&mut self, safe: bool) -> (oneshot::Sender<()>, Vec<Done>) {
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let done: Done = done_rx.map(|_| ()).boxed().shared();
        let waits: Vec<Done> = if safe {
            self.last_exclusive.iter().cloned().collect()
        } else {
            self.last_exclusive
                .iter()
                .cloned()
                .chain(self.since_exclusive.drain(..))
                .collect()
        };
        if safe {
            self.since_exclusive.push(done);
        } else {
            self.last_exclusive = Some(done);
        }
        (done_tx, waits)
    }

    /// Waits for every call and returns the results in the order the calls were pushed; each
    /// result carries its call's `tool_use_id`. Calls still held (the message never completed)
    /// do not run: they are answered as not started.
    pub async fn finish(self) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(self.running.len() + self.held.len());
        for (id, handle) in self.running {
            results.push(match handle.await {
                Ok(result) => result,
                Err(err) => ToolResult::error(
                    id,
                    format!("the call ended abnormally ({err}); it may have done part of its work"),
                ),
            });
        }
        for (id, _) in self.held {
            results.push(ToolResult::error(id, NEVER_STARTED));
        }
        results
    }
}
