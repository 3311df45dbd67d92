//! The [`Tool`] trait and its fail-closed defaults, and [`PreparedCall`]: one call's input,
//! parsed once, answering the per-input questions the lifecycle asks.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
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

/// A tool: a spec plus behaviour. Every behaviour takes the parsed input, because the same tool
/// can differ by input (`shell` with `ls` is read-only, with `rm` it is not).
///
/// The defaults are fail-closed: a tool is not read-only, is destructive unless read-only, is not
/// safe to run concurrently, and asks for permission. A wrong default costs a needless
/// confirmation, never an unchecked write.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Whether the tool is available at all (a disabled tool is not sent to the model).
    fn is_enabled(&self) -> bool {
        true
    }

    /// Whether this call only reads.
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    /// Whether this call may do something irreversible (deleting, overwriting, sending).
    fn is_destructive(&self, input: &Value) -> bool {
        !self.is_read_only(input)
    }

    /// Whether this call may run at the same time as other concurrency-safe calls.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    /// Cheap in-memory checks after schema validation, before any permission prompt or disk I/O.
    async fn validate_input(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }

    /// The tool's own permission verdict for this call.
    async fn check_permissions(&self, _input: &Value, _ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::ask_default(&self.spec().name)
    }

    /// Guidance for the system prompt, if the tool has any.
    fn prompt(&self) -> Option<String> {
        None
    }

    /// A short line for progress display, such as "Reading src/main.rs".
    fn activity(&self, _input: &Value) -> Option<String> {
        None
    }

    /// The file this call touches, for permission rules such as `read_file(src/**)`.
    fn path(&self, _input: &Value) -> Option<PathBuf> {
        None
    }

    /// The text that permission rule contents match for this call: by default the path; a shell
    /// tool returns its command, so that `shell(git status:*)` can match it.
    fn permission_subject(&self, input: &Value) -> Option<String> {
        self.path(input).map(|p| p.to_string_lossy().into_owned())
    }

    /// Runs the call. Report progress with [`ToolContext::progress`]; observe
    /// [`ToolContext::cancellation`]. The executor also stops waiting when the call is cancelled
    /// and drops the future, so a tool must leave nothing behind when dropped.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Parses a schema-valid input once into a [`PreparedCall`] that answers every per-input
    /// question of the lifecycle and then runs. A tool with a typed input ([`crate::Typed`])
    /// returns one; the default, `None`, makes the executor ask the methods above with the JSON
    /// input, which suits tools that read their input as JSON anyway (MCP tools).
    fn prepare(&self, _input: &Value) -> Option<Result<Box<dyn PreparedCall>, ToolError>> {
        None
    }

    /// For a proxy tool (such as tool-pool's `execute_tool`), the call this one stands for. The
    /// executor looks the target up and runs every later stage (validation, hooks, permission,
    /// the call with its progress, the target's result budget) for the target, once. The
    /// default, `None`, is an ordinary tool.
    fn proxy_target(&self, _input: &Value) -> Option<Result<ProxyTarget, ToolError>> {
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

/// One call's input, parsed once, with the tool that runs it: every per-input question of the
/// lifecycle ([`Tool::is_read_only`], [`Tool::path`], the permission subject, ...) is answered
/// from the parsed value, and [`PreparedCall::call`] consumes it.
#[async_trait]
pub trait PreparedCall: Send + Sync {
    /// The input as JSON, as hooks and permission prompts show it.
    fn input(&self) -> &Value;

    /// See [`Tool::is_read_only`].
    fn is_read_only(&self) -> bool;

    /// See [`Tool::is_destructive`].
    fn is_destructive(&self) -> bool;

    /// See [`Tool::is_concurrency_safe`].
    fn is_concurrency_safe(&self) -> bool;

    /// See [`Tool::validate_input`].
    async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError>;

    /// See [`Tool::check_permissions`].
    async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck;

    /// See [`Tool::activity`].
    fn activity(&self) -> Option<String>;

    /// See [`Tool::path`].
    fn path(&self) -> Option<PathBuf>;

    /// See [`Tool::permission_subject`].
    fn permission_subject(&self) -> Option<String>;

    /// See [`Tool::call`].
    async fn call(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Prepares a call of `tool`: its own [`Tool::prepare`], or the JSON input as it is.
pub(crate) fn prepare(
    tool: &Arc<dyn Tool>,
    input: Value,
) -> Result<Box<dyn PreparedCall>, ToolError> {
    match tool.prepare(&input) {
        Some(prepared) => prepared,
        None => Ok(Box::new(JsonCall {
            tool: Arc::clone(tool),
            input: Cow::Owned(input),
        })),
    }
}

/// [`prepare`] for a borrowed tool and input, for one-off questions such as
/// [`crate::Permissions::decide`].
pub(crate) fn prepare_borrowed<'a>(
    tool: &'a dyn Tool,
    input: &'a Value,
) -> Result<Box<dyn PreparedCall + 'a>, ToolError> {
    match tool.prepare(input) {
        Some(prepared) => prepared.map(|call| call as Box<dyn PreparedCall + 'a>),
        None => Ok(Box::new(JsonCall {
            tool,
            input: Cow::Borrowed(input),
        })),
    }
}

/// An owned or borrowed tool.
trait ToolHandle: Send + Sync {
    fn tool(&self) -> &dyn Tool;
}

impl ToolHandle for Arc<dyn Tool> {
    fn tool(&self) -> &dyn Tool {
        self.as_ref()
    }
}

impl ToolHandle for &dyn Tool {
    fn tool(&self) -> &dyn Tool {
        *self
    }
}

/// A call of a tool that reads its input as JSON.
struct JsonCall<'a, T> {
    tool: T,
    input: Cow<'a, Value>,
}

#[async_trait]
impl<T: ToolHandle> PreparedCall for JsonCall<'_, T> {
    fn input(&self) -> &Value {
        &self.input
    }

    fn is_read_only(&self) -> bool {
        self.tool.tool().is_read_only(&self.input)
    }

    fn is_destructive(&self) -> bool {
        self.tool.tool().is_destructive(&self.input)
    }

    fn is_concurrency_safe(&self) -> bool {
        self.tool.tool().is_concurrency_safe(&self.input)
    }

    async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        self.tool.tool().validate_input(&self.input, ctx).await
    }

    async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck {
        self.tool.tool().check_permissions(&self.input, ctx).await
    }

    fn activity(&self) -> Option<String> {
        self.tool.tool().activity(&self.input)
    }

    fn path(&self) -> Option<PathBuf> {
        self.tool.tool().path(&self.input)
    }

    fn permission_subject(&self) -> Option<String> {
        self.tool.tool().permission_subject(&self.input)
    }

    async fn call(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Self { tool, input } = *self;
        tool.tool().call(input.into_owned(), ctx).await
    }
}
