//! The one tool contract: [`Tool`], its fail-closed defaults, and [`CallInfo`], what the
//! lifecycle needs to know about one call, computed once from its parsed input.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::output::{ToolError, ToolOutput};
use crate::spec::ToolSpec;

/// A tool's own verdict on a call, before the user's rules and the permission mode are applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionCheck {
    /// The call is safe to run without asking (for example a read inside the working directory).
    Allow,
    /// The call needs approval unless a rule or the permission mode allows it.
    Ask {
        /// Why approval is needed, shown to the user and, on denial, to the model.
        reason: String,
    },
    /// The call must not run, whatever the rules say.
    Deny {
        /// Why, shown to the model with what to do instead.
        reason: String,
    },
}

impl PermissionCheck {
    /// The fail-closed default: ask.
    pub fn ask_default(tool: &str) -> Self {
        Self::Ask {
            reason: format!("{tool} needs the user's approval"),
        }
    }
}

/// What the lifecycle needs to know about one call, as plain values computed once from the
/// parsed input: whether it only reads, whether it may do something irreversible, whether it may
/// run alongside other calls, the file it touches, the text permission rules match, and a line
/// for progress display.
///
/// It is fail-closed by construction: [`CallInfo::writes`] (also the [`Default`]) is not
/// read-only, destructive and not concurrency-safe; [`CallInfo::reads`] is read-only and not
/// destructive, and still runs alone unless [`CallInfo::with_concurrency_safe`] says otherwise.
/// A wrong answer costs a needless confirmation, never an unchecked write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    read_only: bool,
    destructive: bool,
    concurrency_safe: bool,
    path: Option<PathBuf>,
    subject: Option<String>,
    activity: Option<String>,
}

impl Default for CallInfo {
    fn default() -> Self {
        Self::writes()
    }
}

impl CallInfo {
    /// A call that may change something: not read-only, destructive, not concurrency-safe.
    pub fn writes() -> Self {
        Self {
            read_only: false,
            destructive: true,
            concurrency_safe: false,
            path: None,
            subject: None,
            activity: None,
        }
    }

    /// A call that only reads: read-only and not destructive (still not concurrency-safe).
    pub fn reads() -> Self {
        Self {
            read_only: true,
            destructive: false,
            ..Self::writes()
        }
    }

    /// [`CallInfo::reads`] if `read_only`, else [`CallInfo::writes`].
    pub fn reads_if(read_only: bool) -> Self {
        if read_only {
            Self::reads()
        } else {
            Self::writes()
        }
    }

    /// Whether the call may do something irreversible (deleting, overwriting, sending); an
    /// additive write (creating a file that did not exist) is not.
    #[must_use]
    pub fn with_destructive(mut self, destructive: bool) -> Self {
        self.destructive = destructive;
        self
    }

    /// Whether the call may run at the same time as other concurrency-safe calls.
    #[must_use]
    pub fn with_concurrency_safe(mut self, safe: bool) -> Self {
        self.concurrency_safe = safe;
        self
    }

    /// The file the call touches, for permission rules such as `read_file(src/**)`.
    #[must_use]
    pub fn with_path(mut self, path: Option<PathBuf>) -> Self {
        self.path = path;
        self
    }

    /// The text permission rule contents match, when it is not the path: a shell tool gives its
    /// command, so that `shell(git status:*)` can match it.
    #[must_use]
    pub fn with_subject(mut self, subject: Option<String>) -> Self {
        self.subject = subject;
        self
    }

    /// A short line for progress display, such as "Reading src/main.rs".
    #[must_use]
    pub fn with_activity(mut self, activity: Option<String>) -> Self {
        self.activity = activity;
        self
    }

    /// Whether the call only reads.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the call may do something irreversible.
    pub fn is_destructive(&self) -> bool {
        self.destructive
    }

    /// Whether the call may run at the same time as other concurrency-safe calls.
    pub fn is_concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }

    /// The file the call touches.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The text permission rule contents match: the subject if one was given, else the path.
    pub fn permission_subject(&self) -> Option<String> {
        self.subject
            .clone()
            .or_else(|| self.path.as_ref().map(|p| p.to_string_lossy().into_owned()))
    }

    /// The progress line.
    pub fn activity(&self) -> Option<&str> {
        self.activity.as_deref()
    }
}

/// A tool: a typed input, a spec, and behaviour. The input type gives both the JSON Schema sent
/// to the model and the parsing, so the two can never disagree; each call's input is parsed once,
/// and every question the lifecycle asks of it is answered from the parsed value ([`Tool::info`]).
/// A tool that reads its input as JSON (an MCP server's) takes `Input = serde_json::Value` and
/// puts its own schema in its spec.
///
/// Register a tool wrapped in [`crate::AnyTool`]. The defaults are fail-closed: a call is not
/// read-only, is destructive, is not safe to run concurrently, and asks for permission.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The input type; its JSON Schema is derived with schemars.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;

    /// The spec, given the schema derived from [`Tool::Input`] (a tool with `Input = Value`
    /// passes its own schema instead). Asked once, when the tool is wrapped.
    fn spec(&self, input_schema: Value) -> ToolSpec;

    /// Whether the tool is available at all (a disabled tool is not sent to the model).
    fn is_enabled(&self) -> bool {
        true
    }

    /// Guidance for the system prompt, if the tool has any.
    fn prompt(&self) -> Option<String> {
        None
    }

    /// What a call with this input is (read-only? concurrency-safe? its path, permission
    /// subject and progress line); the default, [`CallInfo::writes`], is fail-closed.
    fn info(&self, _input: &Self::Input) -> CallInfo {
        CallInfo::writes()
    }

    /// Cheap in-memory checks after schema validation, before any permission prompt or disk I/O.
    async fn validate_input(
        &self,
        _input: &Self::Input,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        Ok(())
    }

    /// The tool's own permission verdict for this call; the default asks.
    async fn check_permissions(&self, _input: &Self::Input, ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::ask_default(ctx.tool_name())
    }

    /// Runs the call. Report progress with [`ToolContext::progress`]; observe
    /// [`ToolContext::cancellation`]. The executor also stops waiting when the call is cancelled
    /// and drops the future, so a tool must leave nothing behind when dropped.
    async fn call(&self, input: Self::Input, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// For a proxy tool (such as tool-pool's `execute_tool`), the call this one stands for. The
    /// executor looks the target up and runs every later stage (validation, hooks, permission,
    /// the call with its progress, the target's result budget) for the target, once. The
    /// default, `None`, is an ordinary tool.
    fn proxy_target(&self, _input: &Self::Input) -> Option<Result<ProxyTarget, ToolError>> {
        None
    }
}

/// The tool and input a proxy call stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxyTarget {
    /// The target tool's name.
    pub name: String,
    /// The target's input.
    pub input: Value,
}
