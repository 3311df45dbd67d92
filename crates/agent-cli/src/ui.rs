//! The interactive terminal as a front end: the answer (rendered as markdown on a terminal),
//! live lines for the running tools and a spinner, permission questions (a menu on a terminal),
//! and the status lines of compactions and MCP servers.
//!
//! On a terminal whose output is coloured (see [`colour`]) the answer is rendered as it streams
//! and the live lines move; otherwise (a pipe, `NO_COLOR`) text is printed as it arrives and
//! each event is a plain line, as a log or a test reads it.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use tool_core::{PermissionRequest, PromptAnswer, RuleScope};

use crate::agent::AgentEvent;
use crate::frontend::FrontEnd;
use crate::input::Input;
use crate::live::Live;
use crate::menu::Choice;
use crate::settings::Paths;

pub use crate::tool_lines::{colour, print_event};

/// Standard input, shared by the conversation's prompt and the questions asked during a turn.
pub type InputLines = Arc<Input>;

/// Opens standard input: the line editor on a terminal (its history kept in the user directory
/// of `paths`), plain lines otherwise.
pub fn input_lines(paths: &Paths, cwd: &std::path::Path) -> InputLines {
    crate::input::open(paths, cwd)
}

/// The interactive terminal as a front end: streamed text on standard output; tool progress,
/// results, retries and compactions on standard error; permission questions asked there.
pub struct Terminal {
    input: InputLines,
    paths: Paths,
    project: PathBuf,
    /// The rendered, live terminal; `None` for plain output.
    live: Option<Live>,
    /// Streamed text stopped mid-line: a status line must start on a line of its own.
    mid_line: AtomicBool,
    /// The model is thinking, and that has been shown.
    thinking: AtomicBool,
    /// One question at a time: calls running side by side may each need one.
    asking: tokio::sync::Mutex<()>,
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
            live: colour().then(|| Live::new(crate::live::width())),
            mid_line: AtomicBool::new(false),
            thinking: AtomicBool::new(false),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// A turn starts: on a terminal the spinner runs until [`Terminal::end_turn`].
    pub fn start_turn(&self) {
        if let Some(live) = &self.live {
            live.start_turn();
        }
    }

    /// The turn ended: the rest of the answer is printed and the live lines go.
    pub fn end_turn(&self) {
        if let Some(live) = &self.live {
            live.end_turn();
        }
    }

    /// A note on a line of its own (above the live lines on a terminal).
    pub fn notice(&self, line: &str) {
        match &self.live {
            Some(live) => live.note(line),
            None => eprintln!("\n{line}"),
        }
    }

    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            println!();
        }
    }

    /// A line on standard error, above the live lines when there are some.
    fn note(&self, line: &str) {
        match &self.live {
            Some(live) => live.note(line),
            None => {
                self.end_line();
                eprintln!("{line}");
            }
        }
    }

    /// An event on plain output: text as it comes, everything else a line.
    fn plain_event(&self, event: AgentEvent) {
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
                crate::tool_lines::print_result(&name, &result);
            }
            other => self.status_event(&other),
        }
    }

    /// Retries and compactions: a line each.
    fn status_event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::Retrying { attempt, reason } => {
                self.note(&format!("  (retrying, attempt {attempt}: {reason})"))
            }
            AgentEvent::Compacted { .. } => self.note(&format!("  {}", compaction_text(event))),
            AgentEvent::CompactionFailed { reason } => self.note(&format!(
                "  (the conversation could not be compacted: {reason})"
            )),
            _ => {}
        }
    }

    /// The question as a menu of the answers, picked with the keyboard.
    async fn ask_menu(&self, request: &PermissionRequest) -> PromptAnswer {
        let header = permission_header(request, self.live.is_some());
        let rule = request.suggested_rule.to_string();
        let choices = permission_choices(&rule);
        let coloured = self.live.is_some();
        if let Some(live) = &self.live {
            live.pause();
        }
        let picked =
            tokio::task::spawn_blocking(move || crate::menu::choose(&header, &choices, coloured))
                .await;
        let answer = match picked {
            Ok(Ok(Some(picked))) => self.answer(request, ['y', 'a', 'p', 'n'][picked]).await,
            // Declined, or the terminal failed us: the safe answer is no.
            _ => PromptAnswer::Deny { feedback: None },
        };
        if let Some(live) = &self.live {
            live.resume();
        }
        answer
    }

    /// The answer for a letter; "n" asks what to do instead.
    async fn answer(&self, request: &PermissionRequest, key: char) -> PromptAnswer {
        match key {
            'y' => PromptAnswer::AllowOnce,
            'a' => PromptAnswer::AllowAlways {
                rule: request.suggested_rule.clone(),
                scope: RuleScope::Session,
            },
            'p' => self.keep_for_project(request),
            _ => {
                let feedback = self
                    .input
                    .line("  What should it do instead? (Enter to just decline) ")
                    .await
                    .ok()
                    .flatten()
                    .map(|f| f.trim().to_owned())
                    .filter(|f| !f.is_empty());
                PromptAnswer::Deny { feedback }
            }
        }
    }

    fn keep_for_project(&self, request: &PermissionRequest) -> PromptAnswer {
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
        PromptAnswer::AllowAlways {
            rule: request.suggested_rule.clone(),
            scope: RuleScope::Project,
        }
    }

    /// The question as a line of text, answered with a letter (a pipe, or no terminal).
    async fn ask_line(&self, request: &PermissionRequest) -> PromptAnswer {
        loop {
            let line = match self.input.line(&prompt_text(request)).await {
                Ok(Some(line)) => line,
                // End of input: nobody can answer, so the safe answer is no.
                _ => return PromptAnswer::Deny { feedback: None },
            };
            let answer = line.trim();
            let (key, rest) = answer.split_at(answer.chars().next().map_or(0, char::len_utf8));
            match key.to_ascii_lowercase().as_str() {
                "y" => return PromptAnswer::AllowOnce,
                "a" => return self.answer(request, 'a').await,
                "p" => return self.keep_for_project(request),
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

/// A menu of `labels` under `header`, picked with the arrow keys and Enter or a label's number;
/// `None` when the user declined. Standard input and error must be a terminal.
pub fn pick(header: &[String], labels: &[String]) -> std::io::Result<Option<usize>> {
    let choices: Vec<Choice> = labels
        .iter()
        .zip('1'..='9')
        .map(|(label, key)| Choice {
            key,
            label: label.clone(),
        })
        .collect();
    crate::menu::choose(header, &choices, colour())
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

/// The most lines of an edit or a command shown above a permission menu.
const PREVIEW_LINES: usize = 12;

/// The lines above a permission menu: what the call does (the command for a shell, the change
/// for an edit, the start of a file to be written) and why it asks.
pub(crate) fn permission_header(request: &PermissionRequest, coloured: bool) -> Vec<String> {
    let what = request
        .activity
        .clone()
        .unwrap_or_else(|| format!("{} {}", request.tool, request.input));
    let mut lines = vec![String::new(), format!("╭─ Permission needed: {what}")];
    let text = |key: &str| request.input.get(key).and_then(serde_json::Value::as_str);
    let (red, green, reset) = if coloured {
        ("\x1b[31m", "\x1b[32m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let mut preview = Vec::new();
    match request.tool.as_str() {
        "shell" | "bash" => {
            if let Some(command) = text("command") {
                preview.extend(command.lines().map(|l| format!("$ {l}")));
            }
        }
        "edit_file" => {
            for line in text("old_string").unwrap_or("").lines() {
                preview.push(format!("{red}- {line}{reset}"));
            }
            for line in text("new_string").unwrap_or("").lines() {
                preview.push(format!("{green}+ {line}{reset}"));
            }
        }
        "write_file" => {
            for line in text("content").unwrap_or("").lines() {
                preview.push(format!("{green}+ {line}{reset}"));
            }
        }
        _ => {}
    }
    let more = preview.len().saturating_sub(PREVIEW_LINES);
    lines.extend(
        preview
            .into_iter()
            .take(PREVIEW_LINES)
            .map(|l| format!("│  {l}")),
    );
    if more > 0 {
        lines.push(format!("│  … {more} more lines"));
    }
    lines.push(format!("│  {}", request.reason));
    lines
}

/// The answers of a permission menu, naming the rule that "always" adds.
pub(crate) fn permission_choices(rule: &str) -> Vec<Choice> {
    let choice = |key, label: String| Choice { key, label };
    vec![
        choice('y', "Yes, this once".to_owned()),
        choice('a', format!("Yes, and allow `{rule}` for this session")),
        choice(
            'p',
            format!("Yes, and allow `{rule}` in this project from now on"),
        ),
        choice('n', "No, and say what to do instead".to_owned()),
    ]
}

#[async_trait]
impl FrontEnd for Terminal {
    fn event(&self, event: AgentEvent) {
        if !matches!(event, AgentEvent::Thinking { .. }) {
            self.thinking.store(false, Ordering::Relaxed);
        }
        let Some(live) = &self.live else {
            return self.plain_event(event);
        };
        match event {
            AgentEvent::Thinking { text } => live.thinking(&text),
            AgentEvent::Text { text } => live.text(&text),
            AgentEvent::Tool { event } => live.tool(&event),
            AgentEvent::ToolResult { name, result } => live.result(&name, &result),
            AgentEvent::Usage { usage, .. } => live.tokens(usage.output_tokens),
            other => self.status_event(&other),
        }
    }

    fn can_ask(&self) -> bool {
        true
    }

    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        let _one_at_a_time = self.asking.lock().await;
        if self.input.is_terminal() && std::io::stderr().is_terminal() {
            self.ask_menu(request).await
        } else {
            self.ask_line(request).await
        }
    }
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
    terminal: Arc<Terminal>,
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
                terminal.note(&format!("  mcp: {server} {}", mcp_state_text(state)));
            }
        }
        seen = now;
    }
}
