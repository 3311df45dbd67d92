//! shell: runs a command through the user's shell in its own process group, with a timeout that
//! kills the whole group and output capped while it is read.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tool_core::{PermissionCheck, ToolContext, ToolError, ToolOutput, ToolSpec, TypedTool};

use crate::text::cap_output;
use crate::workspace::Workspace;

/// How the shell tool runs commands.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// The shell program, run as `program -c command`; `None` uses `$SHELL`, else `/bin/sh`.
    pub program: Option<PathBuf>,
    /// The timeout when the call gives none.
    pub default_timeout: Duration,
    /// The longest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Bytes kept of each of stdout and stderr (half from the start, half from the end); the
    /// rest is counted and dropped while it is read.
    pub max_output_bytes: usize,
    /// How long to wait for the output pipes to close after the shell exits, for background
    /// processes that still hold them; after that the process group is killed.
    pub pipe_grace: Duration,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            program: None,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 30_000,
            pipe_grace: Duration::from_secs(2),
        }
    }
}

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
impl TypedTool for Shell {
    type Input = ShellInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "shell",
            "Runs a shell command in the working directory and returns its exit code, stdout and stderr. The timeout (default 120 s, at most 600 s) kills the command with every process it started. Long output keeps its start and end. Use it for builds, tests, git and other programs; use read_file, edit_file, glob and grep for files instead of cat, sed, find or grep.",
            input_schema,
        )
        .with_search_hint("run shell command bash terminal")
    }

    fn is_read_only(&self, input: &ShellInput) -> bool {
        is_read_only_command(&input.command)
    }

    fn is_concurrency_safe(&self, input: &ShellInput) -> bool {
        is_read_only_command(&input.command)
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

    async fn check_permissions(&self, input: &ShellInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Ask {
            reason: format!("shell wants to run `{}`", input.command.trim()),
        }
    }

    fn prompt(&self) -> Option<String> {
        Some("Each shell call starts a fresh shell in the working directory: `cd` does not carry over to the next call. Quote paths with spaces. Prefer the file tools over cat, sed, find and grep.".to_owned())
    }

    fn activity(&self, input: &ShellInput) -> Option<String> {
        Some(match &input.description {
            Some(d) if !d.trim().is_empty() => d.trim().to_owned(),
            _ => format!("Running {}", first_line(&input.command)),
        })
    }

    fn permission_subject(&self, input: &ShellInput) -> Option<String> {
        Some(input.command.trim().to_owned())
    }

    async fn call(&self, input: ShellInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let cwd = self.workspace.roots(ctx).cwd().to_path_buf();
        let timeout = input
            .timeout_ms
            .map_or(self.config.default_timeout, Duration::from_millis)
            .min(self.config.max_timeout);
        let run = run(&self.config, &input.command, &cwd, timeout, ctx).await?;
        Ok(run.into_output(timeout))
    }
}

fn first_line(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or("");
    let short: String = line.chars().take(80).collect();
    if short.len() < command.trim().len() {
        format!("`{short}…`")
    } else {
        format!("`{short}`")
    }
}

/// How a run ended.
#[derive(Debug)]
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
}

/// A finished run.
#[derive(Debug)]
struct Run {
    ending: Ending,
    stdout: String,
    stderr: String,
    lingering: bool,
}

impl Run {
    fn into_output(self, timeout: Duration) -> ToolOutput {
        let mut text = String::new();
        let failed = match &self.ending {
            Ending::Exited(status) => {
                match status.code() {
                    Some(code) => text.push_str(&format!("exit code: {code}\n")),
                    None => {
                        use std::os::unix::process::ExitStatusExt;
                        let signal = status.signal().unwrap_or(0);
                        text.push_str(&format!("exit code: none (killed by signal {signal})\n"));
                    }
                }
                !status.success()
            }
            Ending::TimedOut => {
                text.push_str(&format!(
                    "The command timed out after {} ms and was killed together with every process it started. Run long jobs with a larger timeout_ms, or in the background with output to a file.\nexit code: none (timed out)\n",
                    timeout.as_millis()
                ));
                true
            }
        };
        if self.lingering {
            text.push_str("(Background processes kept the output open after the shell exited; they were stopped. Redirect their output to a file to keep them running.)\n");
        }
        if self.stdout.is_empty() && self.stderr.is_empty() {
            text.push_str("(no output)");
        } else {
            if !self.stdout.is_empty() {
                text.push_str("stdout:\n");
                text.push_str(&self.stdout);
                if !self.stdout.ends_with('\n') {
                    text.push('\n');
                }
            }
            if !self.stderr.is_empty() {
                text.push_str("stderr:\n");
                text.push_str(&self.stderr);
            }
        }
        let text = cap_output(text.trim_end());
        if failed {
            ToolOutput::error_text(text)
        } else {
            ToolOutput::text(text)
        }
    }
}

/// Kills the process group when dropped while armed: a call whose future is dropped (cancelled)
/// or that fails halfway leaves no process behind.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // The group may be gone already; there is nothing else to do either way.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn run(
    config: &ShellConfig,
    command: &str,
    cwd: &std::path::Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<Run, ToolError> {
    let program = config
        .program
        .clone()
        .or_else(|| std::env::var_os("SHELL").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"));
    let mut child = tokio::process::Command::new(&program)
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| {
            ToolError::failed(format!(
                "could not start the shell {}: {err}; the command did not run",
                program.display()
            ))
        })?;
    let mut guard = GroupGuard {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    };
    let half = config.max_output_bytes / 2;
    let stdout = Arc::new(Mutex::new(CappedBuffer::new(half, half)));
    let stderr = Arc::new(Mutex::new(CappedBuffer::new(half, half)));
    let mut readers = tokio::task::JoinSet::new();
    if let Some(pipe) = child.stdout.take() {
        readers.spawn(drain(pipe, Arc::clone(&stdout)));
    }
    if let Some(pipe) = child.stderr.take() {
        readers.spawn(drain(pipe, Arc::clone(&stderr)));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let ending = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => Ending::Exited(status),
            Err(err) => return Err(ToolError::failed(format!("waiting for the command failed: {err}"))),
        },
        () = tokio::time::sleep_until(deadline) => Ending::TimedOut,
        () = ctx.cancellation().cancelled() => {
            guard.kill();
            let _ = child.wait().await;
            return Err(ToolError::Cancelled);
        }
    };
    let mut lingering = false;
    match ending {
        Ending::TimedOut => {
            guard.kill();
            let _ = child.wait().await;
            while readers.join_next().await.is_some() {}
        }
        Ending::Exited(_) => {
            // The shell is done; its output is complete once the pipes close. Background
            // processes may still hold them: give them a moment, then stop them.
            let grace = config
                .pipe_grace
                .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let closed = tokio::time::timeout(grace, async {
                while readers.join_next().await.is_some() {}
            })
            .await
            .is_ok();
            if closed {
                // Processes that detached from the pipes (`nohup ... > log &`) keep running.
                guard.pgid = None;
            } else {
                lingering = true;
                guard.kill();
                readers.abort_all();
            }
        }
    }
    let text = |buffer: &Arc<Mutex<CappedBuffer>>| {
        buffer.lock().unwrap_or_else(|e| e.into_inner()).render()
    };
    Ok(Run {
        ending,
        stdout: text(&stdout),
        stderr: text(&stderr),
        lingering,
    })
}

async fn drain(mut pipe: impl AsyncRead + Unpin, buffer: Arc<Mutex<CappedBuffer>>) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buffer
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&chunk[..n]),
        }
    }
}

/// Keeps the first `head` and the last `tail` bytes of a stream and counts the rest, so memory
/// stays bounded however much a command prints.
#[derive(Debug)]
pub struct CappedBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl CappedBuffer {
    /// A buffer keeping `head` bytes from the start and `tail` from the end.
    pub fn new(head: usize, tail: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap: head,
            tail_cap: tail,
            total: 0,
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap.saturating_sub(self.head.len());
        let to_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            self.tail.extend(bytes);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    /// Bytes held now (at most head + tail).
    pub fn held(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// The kept text, with `[... N bytes truncated ...]` where bytes were dropped.
    pub fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        let dropped = self.total - self.held() as u64;
        if dropped > 0 {
            out.push_str(&format!("\n[... {dropped} bytes truncated ...]\n"));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// Commands that only read, by name; some only without certain options.
const READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "find",
    "fd",
    "tree",
    "file",
    "stat",
    "du",
    "df",
    "which",
    "type",
    "whoami",
    "id",
    "date",
    "uname",
    "hostname",
    "uptime",
    "printenv",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "diff",
    "cmp",
    "true",
    "false",
    "nproc",
    "ps",
    "test",
    "[",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "cut",
    "tr",
    "uniq",
    "column",
    "nl",
    "less",
    "more",
    "jq",
];

/// git subcommands that only read.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
    "grep",
    "ls-tree",
    "cat-file",
    "reflog",
    "rev-list",
    "merge-base",
    "branch",
    "tag",
    "remote",
];

/// Options that make an otherwise read-only command write, delete or run other programs.
fn has_writing_option(program: &str, args: &[&str]) -> bool {
    args.iter().any(|arg| match program {
        "find" => matches!(
            *arg,
            "-exec"
                | "-execdir"
                | "-ok"
                | "-okdir"
                | "-delete"
                | "-fprint"
                | "-fprint0"
                | "-fprintf"
                | "-fls"
        ),
        "rg" => arg.starts_with("--pre"),
        "fd" => matches!(*arg, "-x" | "--exec" | "-X" | "--exec-batch"),
        "tree" => *arg == "-o",
        "git" => arg.starts_with("--output") || *arg == "-o",
        _ => false,
    })
}

/// Whether a command line only reads: every command in it (split at `&&`, `||`, `;` and `|`)
/// is on the read-only list, and there is no redirection or substitution. Anything unsure is
/// not read-only: a wrong "no" costs a confirmation, a wrong "yes" an unchecked write.
pub fn is_read_only_command(command: &str) -> bool {
    let command = command.trim();
    if command.is_empty() || command.contains(['>', '<', '`', '\n', '\r']) || command.contains("$(")
    {
        return false;
    }
    command
        .split(['&', '|', ';'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .all(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            let Some((&program, args)) = words.split_first() else {
                return false;
            };
            if program.contains('=') || has_writing_option(program, args) {
                return false;
            }
            if program == "git" {
                let Some(sub) = args.iter().find(|a| !a.starts_with('-')) else {
                    return false;
                };
                if !GIT_READ_ONLY.contains(sub) {
                    return false;
                }
                // branch, tag and remote read only when they list.
                let listing = |allowed: &[&str]| {
                    args.iter()
                        .skip_while(|a| *a != sub)
                        .skip(1)
                        .all(|a| allowed.contains(a))
                };
                return match *sub {
                    "branch" => {
                        listing(&["-a", "-r", "-v", "-vv", "--list", "--all", "--show-current"])
                    }
                    "tag" => listing(&["-l", "--list"]),
                    "remote" => listing(&["-v", "--verbose"]),
                    _ => true,
                };
            }
            READ_ONLY.contains(&program)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_commands() {
        for cmd in [
            "ls -la",
            "git status",
            "git log --oneline -5",
            "cat a.txt | grep x | wc -l",
            "git branch",
            "pwd && ls",
        ] {
            assert!(is_read_only_command(cmd), "{cmd}");
        }
        for cmd in [
            "rm -rf x",
            "ls > out.txt",
            "git commit -m x",
            "git branch -D main",
            "find . -delete",
            "echo $(rm x)",
            "FOO=1 ls",
            "cat x; rm y",
            "git diff --output=x",
            "",
        ] {
            assert!(!is_read_only_command(cmd), "{cmd}");
        }
    }

    #[test]
    fn capped_buffer_keeps_head_and_tail() {
        let mut buffer = CappedBuffer::new(4, 4);
        for _ in 0..1000 {
            buffer.push(b"0123456789");
        }
        buffer.push(b"END");
        assert_eq!(buffer.held(), 8);
        assert_eq!(
            buffer.render(),
            "0123\n[... 9995 bytes truncated ...]\n9END"
        );
    }
}
