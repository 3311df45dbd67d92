//! Running one command: its own process group, a timeout that kills the whole group, output
//! capped while it is read, and the result text the model sees.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tool_core::{ToolContext, ToolError, ToolOutput};

use super::config::ShellConfig;
use super::launcher::{SETUP_FAILED, SETUP_FAILED_PREFIX};
use super::sandbox::{self, Policy, SpawnError};
use crate::text::cap_output;

/// How a run ended.
#[derive(Debug)]
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
}

/// A finished run.
#[derive(Debug)]
pub(crate) struct Run {
    ending: Ending,
    stdout: String,
    stderr: String,
    lingering: bool,
}

impl Run {
    /// The result text: exit code, notes, stdout and stderr. `sandbox` adds a note on refused
    /// writes when the command failed with one.
    pub(crate) fn into_output(self, timeout: Duration, sandbox: Option<&Policy>) -> ToolOutput {
        let (mut text, failed) = self.ending_text(timeout);
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
        let mut text = text.trim_end().to_owned();
        if let Some(policy) = sandbox.filter(|_| failed && self.mentions_refusal()) {
            text.push_str("\n\n");
            text.push_str(&policy.refusal_note());
        }
        let text = cap_output(&text);
        if failed {
            ToolOutput::error_text(text)
        } else {
            ToolOutput::text(text)
        }
    }

    /// The exit code line (or the timeout message), and whether the run failed.
    fn ending_text(&self, timeout: Duration) -> (String, bool) {
        match &self.ending {
            Ending::Exited(status) => {
                let text = match status.code() {
                    Some(code) => format!("exit code: {code}\n"),
                    None => {
                        use std::os::unix::process::ExitStatusExt;
                        let signal = status.signal().unwrap_or(0);
                        format!("exit code: none (killed by signal {signal})\n")
                    }
                };
                (text, !status.success())
            }
            Ending::TimedOut => (
                format!(
                    "The command timed out after {} ms and was killed together with every process it started. Run long jobs with a larger timeout_ms, or in the background with output to a file.\nexit code: none (timed out)\n",
                    timeout.as_millis()
                ),
                true,
            ),
        }
    }

    /// Whether the output carries the error a Landlock refusal gives (`EACCES`, or `EPERM` for
    /// some operations), or that of a connection the network namespace refused.
    fn mentions_refusal(&self) -> bool {
        const REFUSALS: &[&str] = &[
            "Permission denied",
            "Operation not permitted",
            "Read-only file system",
            "Network is unreachable",
            "Could not resolve host",
            "Temporary failure in name resolution",
            "cannot run",
        ];
        [&self.stdout, &self.stderr]
            .iter()
            .any(|text| REFUSALS.iter().any(|refusal| text.contains(refusal)))
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

/// Runs `command` in `cwd` with the configured shell, confined by `sandbox` when given.
pub(crate) async fn run(
    config: &ShellConfig,
    command: &str,
    cwd: &Path,
    timeout: Duration,
    sandbox: Option<&Policy>,
    ctx: &ToolContext,
) -> Result<Run, ToolError> {
    let mut child = start(config, command, cwd, sandbox).await?;
    let mut guard = GroupGuard {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    };
    let half = config.max_output_bytes / 2;
    let stdout = Arc::new(Mutex::new(CappedBuffer::new(half, half)));
    let stderr = Arc::new(Mutex::new(CappedBuffer::new(half, half)));
    let mut readers = JoinSet::new();
    if let Some(pipe) = child.stdout.take() {
        readers.spawn(drain(pipe, Arc::clone(&stdout)));
    }
    if let Some(pipe) = child.stderr.take() {
        readers.spawn(drain(pipe, Arc::clone(&stderr)));
    }
    let _tail = AbortOnDrop(tokio::spawn(tail(
        ctx.clone(),
        Arc::clone(&stdout),
        Arc::clone(&stderr),
    )));
    let deadline = Instant::now() + timeout;
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
    let lingering = finish(&ending, config, deadline, &mut guard, &mut child, readers).await;
    let text = |buffer: &Arc<Mutex<CappedBuffer>>| {
        buffer.lock().unwrap_or_else(|e| e.into_inner()).render()
    };
    let stderr_text = text(&stderr);
    if sandbox.is_some_and(|policy| policy.is_launched())
        && let Ending::Exited(status) = &ending
        && status.code() == Some(SETUP_FAILED)
        && let Some(why) = stderr_text.strip_prefix(SETUP_FAILED_PREFIX)
    {
        return Err(sandbox_failed(why.trim()));
    }
    Ok(Run {
        ending,
        stdout: text(&stdout),
        stderr: stderr_text,
        lingering,
    })
}

/// Starts the shell in its own process group with piped output, through the sandbox when
/// there is one, with the environment the configuration lets commands see.
async fn start(
    config: &ShellConfig,
    command: &str,
    cwd: &Path,
    sandbox: Option<&Policy>,
) -> Result<Child, ToolError> {
    let program = config.shell_program();
    let mut process = match sandbox {
        Some(policy) => policy.command(&program, command),
        None => {
            let mut process = tokio::process::Command::new(&program);
            process.arg("-c").arg(command);
            process
        }
    };
    config.environment.apply(&mut process);
    process
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawned = match sandbox {
        None => process.spawn().map_err(SpawnError::Spawn),
        Some(policy) => sandbox::spawn(process, policy).await,
    };
    spawned.map_err(|err| match err {
        SpawnError::Spawn(err) => ToolError::failed(format!(
            "could not start the shell {}: {err}; the command did not run",
            program.display()
        )),
        SpawnError::Sandbox(why) => sandbox_failed(&why),
    })
}

fn sandbox_failed(why: &str) -> ToolError {
    ToolError::failed(format!(
        "the shell sandbox could not be set up ({why}); the command did not run. Ask the user to check `agent-cli doctor` or to turn the sandbox off"
    ))
}

/// After the shell ended: on a timeout, kills the group and waits for the readers; on an exit,
/// gives background processes that still hold the pipes a moment, then stops them. Returns
/// whether such processes had to be stopped.
async fn finish(
    ending: &Ending,
    config: &ShellConfig,
    deadline: Instant,
    guard: &mut GroupGuard,
    child: &mut Child,
    mut readers: JoinSet<()>,
) -> bool {
    match ending {
        Ending::TimedOut => {
            guard.kill();
            let _ = child.wait().await;
            while readers.join_next().await.is_some() {}
            false
        }
        Ending::Exited(_) => {
            // The shell is done; its output is complete once the pipes close.
            let grace = config
                .pipe_grace
                .min(deadline.saturating_duration_since(Instant::now()));
            let closed = tokio::time::timeout(grace, async {
                while readers.join_next().await.is_some() {}
            })
            .await
            .is_ok();
            if closed {
                // Processes that detached from the pipes (`nohup ... > log &`) keep running.
                guard.pgid = None;
            } else {
                guard.kill();
                readers.abort_all();
            }
            !closed
        }
    }
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

/// How long a command runs before its latest output line is reported as progress, and how
/// often it is reported after that (when it changed): a long build can be watched as it goes.
const TAIL_EVERY: Duration = Duration::from_secs(1);

/// The most characters of an output line reported as progress.
const TAIL_CHARS: usize = 200;

/// Stops a task when dropped, on every way out of a run.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reports the latest line the command printed, from the stream that printed last, each
/// [`TAIL_EVERY`] while it runs.
async fn tail(
    ctx: ToolContext,
    stdout: Arc<Mutex<CappedBuffer>>,
    stderr: Arc<Mutex<CappedBuffer>>,
) {
    let mut seen = (0u64, 0u64);
    let mut ticks = tokio::time::interval_at(Instant::now() + TAIL_EVERY, TAIL_EVERY);
    loop {
        ticks.tick().await;
        let read = |buffer: &Arc<Mutex<CappedBuffer>>| {
            let buffer = buffer.lock().unwrap_or_else(|e| e.into_inner());
            (buffer.total, buffer.last_line())
        };
        let (out_total, out_line) = read(&stdout);
        let (err_total, err_line) = read(&stderr);
        let line = if err_total > seen.1 {
            err_line
        } else if out_total > seen.0 {
            out_line
        } else {
            None
        };
        seen = (out_total, err_total);
        if let Some(line) = line {
            ctx.progress(tool_core::head_chars(&line, TAIL_CHARS).0);
        }
    }
}

/// Keeps the first `head` and the last `tail` bytes of a stream and counts the rest, so memory
/// stays bounded however much a command prints.
#[derive(Debug)]
pub(crate) struct CappedBuffer {
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

    /// The last line with text in what is kept (a progress bar's latest state, after its
    /// carriage returns), trimmed.
    pub fn last_line(&self) -> Option<String> {
        const END: usize = 1024;
        // With bytes dropped between them, the head is not where the stream ends.
        let head = if self.total > self.held() as u64 {
            &[][..]
        } else {
            &self.head[..]
        };
        let kept = head.len() + self.tail.len();
        let end: Vec<u8> = head
            .iter()
            .chain(self.tail.iter())
            .skip(kept.saturating_sub(END))
            .copied()
            .collect();
        String::from_utf8_lossy(&end)
            .split(['\n', '\r'])
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .map(str::to_owned)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_the_latest_output() {
        let mut buffer = CappedBuffer::new(8, 8);
        assert_eq!(buffer.last_line(), None);
        buffer.push(b"Compiling a\n");
        assert_eq!(buffer.last_line().as_deref(), Some("Compiling a"));
        buffer.push(b"  50%\r  75%\r\n\n");
        assert_eq!(buffer.last_line().as_deref(), Some("75%"));
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
