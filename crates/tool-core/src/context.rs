//! What a running call can see: its session, cancellation, and a progress channel.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::mode::PermissionMode;

/// A session: its id, its directory (where oversized results are persisted), the working
/// directory, and the permission mode, which tools such as `enter_plan_mode` may change.
#[derive(Debug)]
pub struct Session {
    id: String,
    dir: PathBuf,
    cwd: PathBuf,
    mode: RwLock<PermissionMode>,
}

impl Session {
    /// A session with the given id, directory and working directory, in the default mode.
    pub fn new(id: impl Into<String>, dir: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            id: id.into(),
            dir: dir.into(),
            cwd: cwd.into(),
            mode: RwLock::new(PermissionMode::Default),
        }
    }

    /// Sets the starting permission mode.
    #[must_use]
    pub fn with_mode(self, mode: PermissionMode) -> Self {
        self.set_mode(mode);
        self
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The current permission mode.
    pub fn mode(&self) -> PermissionMode {
        // A poisoned lock still holds a valid mode: the value is a plain Copy enum.
        *self.mode.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the permission mode.
    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.write().unwrap_or_else(|e| e.into_inner()) = mode;
    }
}

/// Something that happened while executing a call, for a front end's status line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ExecutionEvent {
    /// The call passed its checks and started running.
    Started {
        /// The call's id.
        tool_use_id: String,
        /// The tool's name.
        tool: String,
        /// The tool's activity line, such as "Reading src/main.rs".
        activity: Option<String>,
    },
    /// The tool reported progress.
    Progress {
        /// The call's id.
        tool_use_id: String,
        /// What the tool said.
        message: String,
        /// Progress so far, when the tool knows it.
        progress: Option<f64>,
        /// The total, when known.
        total: Option<f64>,
    },
    /// The call finished (successfully or not).
    Finished {
        /// The call's id.
        tool_use_id: String,
        /// Whether the result is an error.
        is_error: bool,
    },
}

/// What a tool sees while it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub(crate) tool_use_id: String,
    pub(crate) tool_name: String,
    pub(crate) session: Arc<Session>,
    pub(crate) cancel: CancellationToken,
    pub(crate) events: Option<UnboundedSender<ExecutionEvent>>,
}

impl ToolContext {
    /// A context for calling a tool outside an executor (in tests, or from another tool).
    pub fn new(
        tool_use_id: impl Into<String>,
        tool_name: impl Into<String>,
        session: Arc<Session>,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            tool_name: tool_name.into(),
            session,
            cancel: CancellationToken::new(),
            events: None,
        }
    }

    /// Uses the given cancellation token.
    #[must_use]
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sends execution events to the given channel.
    #[must_use]
    pub fn with_events(mut self, events: UnboundedSender<ExecutionEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// The id of the `tool_use` block being answered.
    pub fn tool_use_id(&self) -> &str {
        &self.tool_use_id
    }

    /// The name of the tool being called (its canonical name, even when called by alias).
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The token that is cancelled when the user cancels the call.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Reports progress in words.
    pub fn progress(&self, message: impl Into<String>) {
        self.progress_with(message, None, None);
    }

    /// Reports progress with numbers, when the tool knows them.
    pub fn progress_with(
        &self,
        message: impl Into<String>,
        progress: Option<f64>,
        total: Option<f64>,
    ) {
        if let Some(events) = &self.events {
            // A closed channel means nobody is listening any more; progress is best-effort.
            let _ = events.send(ExecutionEvent::Progress {
                tool_use_id: self.tool_use_id.clone(),
                message: message.into(),
                progress,
                total,
            });
        }
    }

    pub(crate) fn emit(&self, event: ExecutionEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }
}
