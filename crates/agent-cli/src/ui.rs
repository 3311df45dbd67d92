//! The terminal side: permission prompts, tool status lines, diffs.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::Mutex;

use tool_core::{ExecutionEvent, PermissionRequest, PromptAnswer, RuleScope};

use crate::agent::AgentEvent;
use crate::frontend::FrontEnd;
use crate::settings::Paths;

/// Standard input's lines, shared by the conversation prompt and permission prompts.
pub type InputLines = Arc<Mutex<Lines<BufReader<Stdin>>>>;

/// Opens standard input for line reading.
pub fn input_lines() -> InputLines {
    Arc::new(Mutex::new(BufReader::new(tokio::io::stdin()).lines()))
}

/// The interactive terminal as a front end: streamed text on standard output; tool progress,
/// results, retries and compactions on standard error; permission questions asked there.
pub struct Terminal {
    input: InputLines,
    paths: Paths,
    project: PathBuf,
    /// Streamed text stopped mid-line: a status line must start on a line of its own.
    mid_line: AtomicBool,
    /// The model is thinking, and that has been shown.
    thinking: AtomicBool,
}

impl Terminal {
    /// A front end reading answers from `input`; "always allow it in this project" is kept for
    /// the folder `project` in the user directory of `paths` (see [`crate::trust`]), never in
    /// the project's own files, which are untrusted on the next start.
    pub fn new(input: InputLines, paths: Paths, project: PathBuf) -> Self {
        Self {
            input,
            paths,
            project,
            mid_line: AtomicBool::new(false),
            thinking: AtomicBool::new(false),
        }
    }

    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            println!();
        }
    }
}

/// The trust prompt: what the folder's own files would enable, each on a line.
pub fn trust_prompt_text(folder: &std::path::Path, items: &[crate::trust::Widening]) -> String {
    let mut text = format!(
        "\n╭─ {} is not trusted. Its own settings would enable:\n",
        folder.display()
    );
    for item in items {
        text.push_str(&format!("│  • {item}\n"));
    }
    text.push_str("│  [t] trust this folder   [n] not now (run without them)\n╰─ > ");
    text
}

/// The text of a permission prompt.
pub(crate) fn prompt_text(request: &PermissionRequest) -> String {
    let what = request
        .activity
        .clone()
        .unwrap_or_else(|| format!("{} {}", request.tool, request.input));
    format!(
        "\n╭─ Permission needed: {what}\n│  {}\n│  [y] allow once   [a] always allow `{}` this session\n│  [p] always allow it in this project   [n] deny (optionally: n <what to do instead>)\n╰─ > ",
        request.reason, request.suggested_rule
    )
}

#[async_trait]
impl FrontEnd for Terminal {
    fn event(&self, event: AgentEvent) {
        if !matches!(event, AgentEvent::Thinking { .. }) {
            self.thinking.store(false, Ordering::Relaxed);
        }
        match event {
            AgentEvent::Thinking { .. } => {
                if !self.thinking.swap(true, Ordering::Relaxed) {
                    self.end_line();
                    eprintln!("✻ thinking…");
                }
            }
            AgentEvent::Text { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                self.mid_line
                    .store(!text.ends_with('\n'), Ordering::Relaxed);
            }
            AgentEvent::Tool { event } => {
                self.end_line();
                print_event(&event);
            }
            AgentEvent::ToolResult { name, result } => {
                self.end_line();
                print_result(&name, &result);
            }
            AgentEvent::Retrying { attempt, reason } => {
                eprintln!("  (retrying, attempt {attempt}: {reason})")
            }
            AgentEvent::Compacted { .. } => {
                self.end_line();
                eprintln!("  {}", compaction_text(&event));
            }
            AgentEvent::CompactionFailed { reason } => {
                self.end_line();
                eprintln!("  (the conversation could not be compacted: {reason})");
            }
            AgentEvent::Message { .. } | AgentEvent::Usage { .. } => {}
        }
    }

    fn can_ask(&self) -> bool {
        true
    }

    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        let mut input = self.input.lock().await;
        loop {
            eprint!("{}", prompt_text(request));
            let _ = std::io::stderr().flush();
            let line = match input.next_line().await {
                Ok(Some(line)) => line,
                // End of input: nobody can answer, so the safe answer is no.
                _ => return PromptAnswer::Deny { feedback: None },
            };
            let answer = line.trim();
            let (key, rest) = answer.split_at(answer.chars().next().map_or(0, char::len_utf8));
            match key.to_ascii_lowercase().as_str() {
                "y" => return PromptAnswer::AllowOnce,
                "a" => {
                    return PromptAnswer::AllowAlways {
                        rule: request.suggested_rule.clone(),
                        scope: RuleScope::Session,
                    };
                }
                "p" => {
                    let rule = &request.suggested_rule;
                    match crate::trust::keep_project_rule(&self.paths, &self.project, rule) {
                        Ok(path) => eprintln!(
                            "  `{rule}` is allowed in this project from now on (kept in {})",
                            path.display()
                        ),
                        Err(err) => eprintln!(
                            "  `{rule}` is allowed for this session only: it could not be kept for this project: {err:#}"
                        ),
                    }
                    return PromptAnswer::AllowAlways {
                        rule: request.suggested_rule.clone(),
                        scope: RuleScope::Project,
                    };
                }
                "n" => {
                    let feedback = rest.trim();
                    return PromptAnswer::Deny {
                        feedback: (!feedback.is_empty()).then(|| feedback.to_owned()),
                    };
                }
                _ => eprintln!("  answer y, a, p or n"),
            }
        }
    }
}

/// Prints execution events as status lines on standard error.
pub fn print_event(event: &ExecutionEvent) {
    match event {
        ExecutionEvent::Started { tool, activity, .. } => {
            let text = activity
                .clone()
                .unwrap_or_else(|| format!("Running {tool}"));
            eprintln!("⏺ {text}");
        }
        ExecutionEvent::Progress {
            message,
            progress,
            total,
            ..
        } => match (progress, total) {
            (Some(p), Some(t)) => eprintln!("  ⎿ {message} ({p}/{t})"),
            _ => eprintln!("  ⎿ {message}"),
        },
        ExecutionEvent::Finished { .. } => {}
    }
}

/// Prints a finished call for the user: edits show their diff, errors their message, anything
/// else a one-line summary.
/// The most lines of a failed call's reason shown, and the most characters of each.
const FAILURE_LINES: usize = 4;
const FAILURE_LINE_CHARS: usize = 160;

/// A failed call as a person reads it: the reason's first lines (a schema error's fields and
/// what they should be), each cut to a line of the terminal, and how much more there was.
fn failure_lines(name: &str, text: &str) -> Vec<String> {
    let reason: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines = Vec::new();
    for (i, line) in reason.iter().take(FAILURE_LINES).enumerate() {
        let (cut, more) = tool_core::head_chars(line.trim_end(), FAILURE_LINE_CHARS);
        let cut = if more > 0 {
            format!("{cut}…")
        } else {
            cut.to_owned()
        };
        lines.push(if i == 0 {
            format!("  ⎿ {name} failed: {cut}")
        } else {
            format!("    {cut}")
        });
    }
    if lines.is_empty() {
        lines.push(format!("  ⎿ {name} failed"));
    }
    if reason.len() > FAILURE_LINES {
        lines.push(format!("    … {} more lines", reason.len() - FAILURE_LINES));
    }
    lines
}

pub(crate) fn print_result(name: &str, result: &tool_core::ToolResult) {
    let text = result.text();
    if result.is_error {
        for line in failure_lines(name, &text) {
            eprintln!("{line}");
        }
    } else if name == "edit_file" || name == "write_file" {
        let colour_on = colour();
        for line in text.lines() {
            let colour = if !colour_on {
                ""
            } else if line.starts_with('+') && !line.starts_with("+++") {
                "\x1b[32m"
            } else if line.starts_with('-') && !line.starts_with("---") {
                "\x1b[31m"
            } else {
                ""
            };
            let reset = if colour.is_empty() { "" } else { "\x1b[0m" };
            eprintln!("  {colour}{line}{reset}");
        }
    } else {
        let lines = text.lines().count();
        let first: String = text
            .lines()
            .next()
            .unwrap_or("(no output)")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!(
            "  ⎿ {} ({lines} lines)",
            tool_core::head_chars(&first, 100).0
        );
    }
}

/// Whether to colour what goes to the terminal: only when both standard output and standard
/// error are terminals and `NO_COLOR` is unset or empty (<https://no-color.org>).
pub fn colour() -> bool {
    use std::io::IsTerminal as _;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
}

/// The status line of a compaction.
pub fn compaction_text(event: &crate::agent::AgentEvent) -> String {
    let crate::agent::AgentEvent::Compacted {
        trigger,
        tokens_before,
        tokens_after,
        kept,
    } = event
    else {
        return String::new();
    };
    let why = match trigger {
        crate::compaction::Trigger::Auto => "the context neared the window",
        crate::compaction::Trigger::ContextLimit => "the provider said the context was too long",
        crate::compaction::Trigger::Manual => "as asked",
    };
    format!(
        "(conversation compacted, {why}: {} → {} tokens, the last {kept} messages kept verbatim)",
        crate::usage::tokens(*tokens_before),
        crate::usage::tokens(*tokens_after)
    )
}

/// The status line for an MCP server's state.
pub fn mcp_state_text(state: &tool_mcp::ServerState) -> String {
    match state {
        tool_mcp::ServerState::Connecting => "connecting".to_owned(),
        tool_mcp::ServerState::Connected { tools } => format!("connected, {tools} tools"),
        tool_mcp::ServerState::Failed { reason } => format!("failed: {reason}"),
        tool_mcp::ServerState::Down { reason } => format!("down, reconnecting: {reason}"),
    }
}

/// Prints a line on standard error each time an MCP server's state changes, until the manager
/// goes away: servers connect in the background, and the user should see when their tools arrive
/// or leave.
pub async fn report_mcp_states(
    mut states: tokio::sync::watch::Receiver<
        std::collections::BTreeMap<String, tool_mcp::ServerState>,
    >,
) {
    let mut seen = states.borrow_and_update().clone();
    while states.changed().await.is_ok() {
        let now = states.borrow_and_update().clone();
        for (server, state) in &now {
            if seen.get(server) != Some(state)
                && !matches!(state, tool_mcp::ServerState::Connecting)
            {
                eprintln!("  mcp: {server} {}", mcp_state_text(state));
            }
        }
        seen = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_call_shows_its_reason_not_just_its_first_line() {
        let schema = "the input to read_file does not match its schema:\n- at `/path`: 42 is not of type \"string\"\n- at the input: \"limit\" is a required property\nFix these and call the tool again";
        insta::assert_snapshot!(failure_lines("read_file", schema).join("\n"), @r#"
          ⎿ read_file failed: the input to read_file does not match its schema:
            - at `/path`: 42 is not of type "string"
            - at the input: "limit" is a required property
            Fix these and call the tool again
        "#);
        let long = format!("{}\n\nb\nc\nd\ne", "a".repeat(300));
        let lines = failure_lines("shell", &long);
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[0].ends_with('…'));
        assert_eq!(lines[4], "    … 1 more lines");
        assert_eq!(failure_lines("grep", ""), ["  ⎿ grep failed"]);
    }
}
