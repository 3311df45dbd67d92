//! shell: runs a command through the user's shell in its own process group, with a timeout that
//! kills the whole group, output capped while it is read, and (on Linux) a Landlock sandbox.
//!
//! # Which commands run without a prompt
//!
//! A command is read-only, concurrency-safe and allowed without asking when the shell would
//! read it as a list of simple commands joined by `;`, `&&`, `||`, `|` or newlines, each a known
//! read-only program (`ls`, `cat`, `grep`, `git status`, `git log`, ...) with none of the options
//! that make it write or run another program (`find -exec`, `sed -i`, `sort -o`, `rg --pre`,
//! `git diff --ext-diff`, `git -c`, ...). Words are cut and unquoted as the shell does (the
//! `shlex` crate removes the quotes), so `ls ';' x` is one command and `ls;rm x` two. Anything
//! the classifier does not model asks as before: command or variable substitution, process
//! substitution, here-documents, subshells, background jobs, comments, an unknown program or
//! one named by a path, variable assignments other than locale and formatting ones, a glob
//! given to a program that has dangerous options (it could expand to one), and any redirection
//! other than into `/dev/null`, between descriptors (`2>&1`) or from a file. Long options count
//! in their abbreviated forms too (`sort --out=f`), as GNU getopt and git accept them.
//!
//! A read-only command still asks when a word in it names a path outside the session's roots
//! (an absolute path, `~`, `..`, or a symlink leading out, resolved like read_file's paths).
//!
//! # The parser decides when to ask; the sandbox enforces
//!
//! The rule above only decides whether to ask. A parser can be fooled (brace expansion, a glob
//! over a committed link, a repository's git configuration that names a program), so what a
//! command can do is enforced by the kernel, in two tiers:
//!
//! - **Commands that run without asking** run in a read-only sandbox, whatever the mode: they
//!   read only the session's roots, the system's program, library and configuration folders and
//!   the user's git configuration (never the rest of the home directory, another process's
//!   `/proc/*/environ`, or a path a read deny rule names, which is hidden), write nothing, use no
//!   network (an empty network namespace), and execute only the shell and the known read-only
//!   programs. git runs behind a guard that lets it execute nothing but git, so no external diff,
//!   textconv, filter, pager, fsmonitor, hook or helper from any repository's configuration runs.
//!   Where this sandbox cannot be built (no Landlock, no user namespaces, no launcher), nothing
//!   runs without asking.
//! - **Approved commands** (by the user, a rule or a mode) run in [`SandboxMode`]: `read-only`
//!   writes nothing; `workspace-write` (the default) writes only under the roots and the temporary
//!   directories, with the repository's `.git/config` and `.git/hooks` mounted read-only; `off`
//!   runs them unconfined. [`NetworkPolicy`] (`allow` by default) can cut them off the network.
//!
//! Both tiers start through the launcher (see [`run_if_launcher`]): a fresh process that enters
//! its namespaces, applies Landlock to itself, and then becomes the command. A refused write,
//! read or connection fails with the kernel's error, and the result then tells the model what
//! the sandbox allows. Commands see the environment without the variables the process withholds
//! (the provider's key) and, by default, without names that look like secrets
//! ([`ShellEnvironment`]).
//!
//! Known limits: approved commands may read anywhere the user may (only writes and the network
//! are confined); a pathname UNIX socket the user may write (a Docker socket) stays reachable, as
//! Landlock confines those connections only from ABI 9; `/proc/*/cmdline` of other processes is
//! readable.

mod config;
mod confine;
mod environment;
mod launcher;
mod lex;
mod mode;
mod plan;
mod programs;
mod run;
mod safety;
mod sandbox;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::roots::AllowedRoots;
use crate::workspace::Workspace;

pub use config::ShellConfig;
pub use confine::Landlock;
pub use environment::ShellEnvironment;
pub use launcher::LAUNCH_FLAG;
pub use launcher::run_if_launcher;
pub use mode::{NetworkPolicy, ParseSandboxModeError, SandboxMode};
use safety::is_read_only_command;
pub use sandbox::{Enforcement, SandboxSupport, enforcement, sandbox_support, sandbox_warning};

/// The shell tool.
pub struct Shell {
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) config: ShellConfig,
}

/// shell's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellInput {
    /// The command line, run with the user's shell (`$SHELL -c`) in the working directory.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A few words on what the command does, shown to the user.
    #[serde(default)]
    pub description: Option<String>,
}

#[async_trait]
impl Tool for Shell {
    type Input = ShellInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "shell",
            "Runs a shell command in the working directory and returns its exit code, stdout and stderr. The timeout (default 120 s, at most 600 s) kills the command with every process it started. Long output keeps its start and end. Use it for builds, tests, git and other programs; use read_file, edit_file, glob and grep for files instead of cat, sed, find or grep.",
            input_schema,
        )
        .with_search_hint("run shell command bash terminal")
    }

    fn info(&self, input: &ShellInput) -> CallInfo {
        let activity = match &input.description {
            Some(d) if !d.trim().is_empty() => d.trim().to_owned(),
            _ => format!("Running {}", first_line(&input.command)),
        };
        let read_only = is_read_only_command(&input.command);
        CallInfo::reads_if(read_only)
            .with_concurrency_safe(read_only)
            .with_subject(Some(input.command.trim().to_owned()))
            .with_activity(Some(activity))
    }

    async fn validate_input(&self, input: &ShellInput, _: &ToolContext) -> Result<(), ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::invalid(
                "the command is empty: pass the command line to run, such as \"cargo test\"",
            ));
        }
        if let Some(ms) = input.timeout_ms {
            let max = self.config.max_timeout.as_millis();
            if ms == 0 || u128::from(ms) > max {
                return Err(ToolError::invalid(format!(
                    "timeout_ms must be between 1 and {max}; leave it out for the default of {}",
                    self.config.default_timeout.as_millis()
                )));
            }
        }
        Ok(())
    }

    async fn check_permissions(&self, input: &ShellInput, ctx: &ToolContext) -> PermissionCheck {
        // The parser decides when to ask; the sandbox enforces (see the module doc).
        let command = input.command.trim();
        let roots = self.workspace.roots(ctx);
        if !is_read_only_command(command) {
            return PermissionCheck::Ask {
                reason: format!("shell wants to run `{command}`"),
            };
        }
        if safety::reaches_outside(command, &roots) {
            return PermissionCheck::Ask {
                reason: format!(
                    "shell wants to run `{command}`, which reads outside the allowed directories"
                ),
            };
        }
        match self.unasked_policy(&roots) {
            Ok(_) => PermissionCheck::Allow,
            Err(why) => PermissionCheck::Ask {
                reason: format!(
                    "shell wants to run `{command}`; it only reads, but commands run without asking only in the read-only sandbox, which cannot be built here ({why})"
                ),
            },
        }
    }

    fn prompt(&self) -> Option<String> {
        // The sandbox is not described here: the prompt stays the same on every machine and in
        // every mode, and a refused write explains itself in the result.
        Some("Each shell call starts a fresh shell in the working directory: `cd` does not carry over to the next call. Quote paths with spaces. Prefer the file tools over cat, sed, find and grep.".to_owned())
    }

    async fn call(&self, input: ShellInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.roots(ctx);
        let cwd = roots.cwd().to_path_buf();
        let command = input.command.trim();
        let unasked = is_read_only_command(command) && !safety::reaches_outside(command, &roots);
        let sandbox = match unasked.then(|| self.unasked_policy(&roots)) {
            Some(Ok(policy)) => Some(policy),
            _ => self.approved_policy(&roots),
        };
        let unhidden = sandbox
            .as_ref()
            .is_none_or(|policy| !policy.hides_denied_paths());
        if unhidden && self.names_denied(command, &roots) {
            return Err(ToolError::failed(
                "the command names a path a read deny rule keeps from the tools, and the sandbox cannot hide it here; read something else",
            ));
        }
        let timeout = input
            .timeout_ms
            .map_or(self.config.default_timeout, Duration::from_millis)
            .min(self.config.max_timeout);
        let run = run::run(
            &self.config,
            &input.command,
            &cwd,
            timeout,
            sandbox.as_ref(),
            ctx,
        )
        .await?;
        Ok(run.into_output(timeout, sandbox.as_ref()))
    }
}

impl Shell {
    /// The read-only sandbox for a command that runs without asking, or why it cannot be built.
    fn unasked_policy(&self, roots: &AllowedRoots) -> Result<sandbox::Policy, String> {
        let hidden = self.workspace.denies.existing(roots.cwd())?;
        sandbox::Policy::unasked(&self.config, roots.roots(), hidden)
    }

    /// The sandbox for an approved command; `None` when commands run unconfined.
    fn approved_policy(&self, roots: &AllowedRoots) -> Option<sandbox::Policy> {
        let hidden = self
            .workspace
            .denies
            .existing(roots.cwd())
            .unwrap_or_default();
        sandbox::Policy::approved(&self.config, roots.roots(), hidden)
    }

    /// Whether the command may read a path a read deny rule names, when no sandbox hides them.
    fn names_denied(&self, command: &str, roots: &AllowedRoots) -> bool {
        let denies = &self.workspace.denies;
        if denies.is_empty() {
            return false;
        }
        let existing = denies.existing(roots.cwd()).unwrap_or_default();
        safety::names_denied(command, roots, denies, &existing)
    }
}

fn first_line(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or("");
    let (short, _) = tool_core::head_chars(line, 80);
    if short.len() < command.trim().len() {
        format!("`{short}…`")
    } else {
        format!("`{short}`")
    }
}
