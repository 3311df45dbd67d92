//! Pre- and post-tool hooks: callbacks, or a user's command that reads the call as JSON.

use std::fmt;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::error::CoreError;
use crate::output::ToolOutput;

/// The call a hook sees.
#[derive(Debug, Clone, Serialize)]
pub struct HookCall {
    /// The call's id.
    pub tool_use_id: String,
    /// The tool's canonical name.
    pub tool_name: String,
    /// The input, validated against the tool's schema.
    pub tool_input: Value,
    /// The session's id.
    pub session_id: String,
    /// The working directory.
    pub cwd: String,
}

/// What a pre-tool hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum PreHookOutcome {
    /// No opinion: the call goes on to the permission stage.
    Continue,
    /// Allow without a prompt; deny rules and the tool's own denial still apply.
    Allow,
    /// Block the call; the reason is shown to the model.
    Deny {
        /// Why.
        reason: String,
    },
    /// Replace the input (it is validated against the schema again).
    Rewrite {
        /// The new input.
        input: Value,
    },
}

/// What a post-tool hook decides.
#[derive(Debug, Clone, PartialEq)]
pub enum PostHookOutcome {
    /// Leave the result as it is.
    Continue,
    /// Append this text to the result for the model.
    AddContext {
        /// The text.
        text: String,
    },
    /// Mark the result as an error and tell the model why.
    Block {
        /// Why.
        reason: String,
    },
}

/// A callback run before the permission stage of every call it matches.
#[async_trait]
pub trait PreToolHook: Send + Sync {
    /// Decides about a call.
    async fn before(&self, call: &HookCall) -> PreHookOutcome;
}

/// A callback run after a call, before its result is mapped.
#[async_trait]
pub trait PostToolHook: Send + Sync {
    /// Looks at a finished call.
    async fn after(&self, call: &HookCall, output: &ToolOutput) -> PostHookOutcome;
}

/// The JSON a command hook may print on standard output (all fields optional).
#[derive(Debug, Default, Deserialize)]
struct CommandHookReply {
    /// `allow`, `deny` (or `block`), or `continue`.
    decision: Option<String>,
    reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// A hook that runs a user's command through `sh -c`, writes the call as JSON on its standard
/// input, and reads its decision from standard output.
///
/// Standard input is `{"hook_event_name": "PreToolUse" | "PostToolUse", "tool_use_id",
/// "tool_name", "tool_input", "session_id", "cwd"}` (plus `"tool_response"` after a call).
/// The command answers with exit code 0 and optionally
/// `{"decision": "allow" | "deny" | "continue", "reason": "...", "updated_input": {...},
/// "additional_context": "..."}`; exit code 2 denies (blocks) with standard error as the reason.
/// Any other failure (the command cannot start, exits with another code, prints something that is
/// not JSON, or times out) denies the call: a safety hook that breaks must not let calls through.
#[derive(Clone)]
pub struct CommandHook {
    command: String,
    matcher: Option<GlobSet>,
    matcher_text: Option<String>,
    timeout: Duration,
}

impl fmt::Debug for CommandHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandHook")
            .field("command", &self.command)
            .field("matcher", &self.matcher_text)
            .field("timeout", &self.timeout)
            .finish()
    }
}

enum HookRun {
    Reply(CommandHookReply),
    Blocked(String),
    Failed(String),
}

impl CommandHook {
    /// The default time a hook command may take.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

    /// A hook running `command` for every tool.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            matcher: None,
            matcher_text: None,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// Runs only for tools whose name matches one of the `|`-separated globs, such as
    /// `shell|write_file` or `mcp__github__*`.
    pub fn with_matcher(mut self, matcher: &str) -> Result<Self, CoreError> {
        let mut builder = GlobSetBuilder::new();
        for part in matcher.split('|').map(str::trim).filter(|p| !p.is_empty()) {
            let glob = Glob::new(part).map_err(|err| CoreError::InvalidRule {
                rule: matcher.to_owned(),
                reason: format!("the hook matcher is not a valid glob: {err}"),
            })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|err| CoreError::InvalidRule {
            rule: matcher.to_owned(),
            reason: format!("the hook matcher is not a valid glob: {err}"),
        })?;
        self.matcher = Some(set);
        self.matcher_text = Some(matcher.to_owned());
        Ok(self)
    }

    /// Sets the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_match(tool))
    }

    async fn run(&self, payload: Value) -> HookRun {
        let mut process = tokio::process::Command::new("sh");
        crate::child_env::scrub(&mut process);
        let mut child = match process
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
        {
            Ok(child) => child,
            Err(err) => return HookRun::Failed(format!("could not start: {err}")),
        };
        if let Some(mut stdin) = child.stdin.take() {
            let bytes = payload.to_string().into_bytes();
            // A hook that does not read its input closes the pipe early; that is its choice.
            let _ = stdin.write_all(&bytes).await;
        }
        let output = match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Err(_) => {
                return HookRun::Failed(format!("timed out after {} s", self.timeout.as_secs()));
            }
            Ok(Err(err)) => return HookRun::Failed(format!("failed while running: {err}")),
            Ok(Ok(output)) => output,
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) if stdout.trim().is_empty() => HookRun::Reply(CommandHookReply::default()),
            Some(0) => match serde_json::from_str(stdout.trim()) {
                Ok(reply) => HookRun::Reply(reply),
                Err(err) => HookRun::Failed(format!(
                    "printed output that is not the expected JSON ({err})"
                )),
            },
            Some(2) => HookRun::Blocked(stderr.trim().to_owned()),
            Some(code) => HookRun::Failed(format!("exited with code {code}: {}", stderr.trim())),
            None => HookRun::Failed("was killed by a signal".to_owned()),
        }
    }

    fn payload(event: &str, call: &HookCall) -> Value {
        serde_json::json!({
            "hook_event_name": event,
            "tool_use_id": call.tool_use_id,
            "tool_name": call.tool_name,
            "tool_input": call.tool_input,
            "session_id": call.session_id,
            "cwd": call.cwd,
        })
    }

    fn failure(&self, what: String) -> String {
        format!(
            "the hook command `{}` {what}; the call was blocked because a failing hook cannot vouch for it. Fix the hook or remove it from the settings",
            self.command
        )
    }
}

#[async_trait]
impl PreToolHook for CommandHook {
    async fn before(&self, call: &HookCall) -> PreHookOutcome {
        if !self.applies_to(&call.tool_name) {
            return PreHookOutcome::Continue;
        }
        match self.run(Self::payload("PreToolUse", call)).await {
            HookRun::Failed(what) => PreHookOutcome::Deny {
                reason: self.failure(what),
            },
            HookRun::Blocked(reason) => PreHookOutcome::Deny {
                reason: if reason.is_empty() {
                    "a pre-tool hook blocked this call".to_owned()
                } else {
                    reason
                },
            },
            HookRun::Reply(reply) => {
                let decision = reply.decision.as_deref().map(str::to_ascii_lowercase);
                match decision.as_deref() {
                    Some("deny" | "block") => PreHookOutcome::Deny {
                        reason: reply
                            .reason
                            .unwrap_or_else(|| "a pre-tool hook blocked this call".to_owned()),
                    },
                    _ if reply.updated_input.is_some() => PreHookOutcome::Rewrite {
                        input: reply.updated_input.unwrap_or_default(),
                    },
                    Some("allow" | "approve") => PreHookOutcome::Allow,
                    None | Some("continue" | "") => PreHookOutcome::Continue,
                    Some(other) => PreHookOutcome::Deny {
                        reason: self.failure(format!(
                            "answered with the unknown decision `{other}` (use allow, deny or continue)"
                        )),
                    },
                }
            }
        }
    }
}

#[async_trait]
impl PostToolHook for CommandHook {
    async fn after(&self, call: &HookCall, output: &ToolOutput) -> PostHookOutcome {
        if !self.applies_to(&call.tool_name) {
            return PostHookOutcome::Continue;
        }
        let mut payload = Self::payload("PostToolUse", call);
        if let Some(object) = payload.as_object_mut() {
            object.insert(
                "tool_response".to_owned(),
                serde_json::to_value(output).unwrap_or(Value::Null),
            );
        }
        match self.run(payload).await {
            HookRun::Failed(what) => PostHookOutcome::Block {
                reason: self.failure(what),
            },
            HookRun::Blocked(reason) => PostHookOutcome::Block { reason },
            HookRun::Reply(reply) => match reply.decision.as_deref() {
                Some("deny" | "block") => PostHookOutcome::Block {
                    reason: reply.reason.unwrap_or_default(),
                },
                _ => match reply.additional_context {
                    Some(text) if !text.is_empty() => PostHookOutcome::AddContext { text },
                    _ => PostHookOutcome::Continue,
                },
            },
        }
    }
}
