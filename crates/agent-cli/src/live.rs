//! The terminal while a turn runs: the answer rendered as markdown above a few live lines at the
//! bottom, one per running tool (its activity, then its latest progress) and a spinner with the
//! time and tokens so far. The live lines are redrawn in place; everything above them is printed
//! once and never touched again.
//!
//! Every write goes through one lock, so streamed text, tool lines and the spinner's ticks from
//! another thread never interleave: the live lines are cleared, the new text printed, and the
//! live lines drawn again below it.

use std::io::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tool_core::{ExecutionEvent, ToolResult};

use crate::markdown::{Markdown, strip_escapes, visible_width};

/// The spinner's frames.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(100);

/// The live part of the terminal, shared with the spinner's thread.
#[derive(Clone)]
pub(crate) struct Live(Arc<Mutex<Screen>>);

/// What is on screen and what the live lines show.
pub(crate) struct Screen {
    markdown: Markdown,
    /// The running turn, while one runs.
    turn: Option<TurnState>,
    /// Calls started and not yet answered, in order.
    tools: Vec<RunningTool>,
    /// How many live lines are drawn now.
    drawn: usize,
    /// No live lines while a question is asked.
    paused: bool,
    frame: usize,
    width: usize,
    /// Which turn's spinner thread may tick: a thread of an earlier turn stops.
    generation: u64,
    /// What was printed last this turn: answer text or a call's lines (a blank line goes
    /// between the two); `None` before anything.
    last: Option<Printed>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Printed {
    Text,
    Call,
}

struct TurnState {
    started: Instant,
    /// Output tokens of the requests this turn finished.
    tokens: u64,
    /// Characters streamed since the last request finished (about four to a token).
    streamed: usize,
    thinking: bool,
}

struct RunningTool {
    id: String,
    activity: String,
    progress: Option<String>,
    started: Instant,
    finished: bool,
}

/// The terminal's width in columns (80 when it cannot be told).
pub(crate) fn width() -> usize {
    terminal_size::terminal_size().map_or(80, |(w, _)| usize::from(w.0))
}

impl Live {
    /// The live screen of a terminal `width` columns wide.
    pub(crate) fn new(width: usize) -> Self {
        Self(Arc::new(Mutex::new(Screen {
            markdown: Markdown::new(width),
            turn: None,
            tools: Vec::new(),
            drawn: 0,
            paused: false,
            frame: 0,
            width,
            generation: 0,
            last: None,
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Screen> {
        // A panic while printing leaves nothing half-updated that matters: keep going.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A turn starts: the spinner runs until [`Live::end_turn`].
    pub(crate) fn start_turn(&self) {
        let generation = {
            let mut screen = self.lock();
            screen.generation = screen.generation.wrapping_add(1);
            screen.turn = Some(TurnState {
                started: Instant::now(),
                tokens: 0,
                streamed: 0,
                thinking: false,
            });
            screen.paused = false;
            screen.last = None;
            screen.redraw();
            screen.generation
        };
        let live = self.clone();
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(TICK);
                let mut screen = live.lock();
                if screen.turn.is_none() || screen.generation != generation {
                    return;
                }
                screen.frame = screen.frame.wrapping_add(1);
                screen.redraw();
            }
        });
    }

    /// The turn ended: the rest of the answer and any unanswered call are printed, the live
    /// lines go.
    pub(crate) fn end_turn(&self) {
        let mut screen = self.lock();
        screen.clear();
        screen.turn = None;
        let rest = screen.markdown.finish();
        if !rest.is_empty() {
            screen.printing(Printed::Text);
        }
        print_out(&rest);
        for tool in std::mem::take(&mut screen.tools) {
            eprintln!("⏺ {}", tool.activity);
        }
    }

    /// Streamed answer text: complete lines are rendered and printed.
    pub(crate) fn text(&self, text: &str) {
        let mut screen = self.lock();
        if let Some(turn) = &mut screen.turn {
            turn.streamed += text.chars().count();
            turn.thinking = false;
        }
        let out = screen.markdown.push(text);
        if !out.is_empty() {
            screen.clear();
            screen.printing(Printed::Text);
            print_out(&out);
        }
        screen.redraw();
    }

    /// Streamed reasoning: counted and named by the spinner, not shown.
    pub(crate) fn thinking(&self, text: &str) {
        let mut screen = self.lock();
        if let Some(turn) = &mut screen.turn {
            turn.streamed += text.chars().count();
            turn.thinking = true;
        }
        screen.redraw();
    }

    /// A request's output tokens, as the provider counted them.
    pub(crate) fn tokens(&self, output: u64) {
        let mut screen = self.lock();
        if let Some(turn) = &mut screen.turn {
            turn.tokens += output;
            turn.streamed = 0;
        }
    }

    /// A call's progress: a live line while it runs.
    pub(crate) fn tool(&self, event: &ExecutionEvent) {
        let mut screen = self.lock();
        screen.end_text();
        match event {
            ExecutionEvent::Started {
                tool_use_id,
                tool,
                activity,
            } => screen.tools.push(RunningTool {
                id: tool_use_id.clone(),
                activity: activity
                    .clone()
                    .unwrap_or_else(|| format!("Running {tool}")),
                progress: None,
                started: Instant::now(),
                finished: false,
            }),
            ExecutionEvent::Progress {
                tool_use_id,
                message,
                progress,
                total,
            } => {
                if let Some(tool) = screen.tools.iter_mut().find(|t| &t.id == tool_use_id) {
                    tool.progress = Some(match (progress, total) {
                        (Some(p), Some(t)) => format!("{message} ({p}/{t})"),
                        _ => message.clone(),
                    });
                }
            }
            ExecutionEvent::Finished { tool_use_id, .. } => {
                if let Some(tool) = screen.tools.iter_mut().find(|t| &t.id == tool_use_id) {
                    tool.finished = true;
                }
            }
        }
        screen.redraw();
    }

    /// A call's result: its live line becomes its activity and result, printed for good.
    pub(crate) fn result(&self, name: &str, result: &ToolResult) {
        let mut screen = self.lock();
        screen.end_text();
        screen.clear();
        if let Some(at) = screen.tools.iter().position(|t| t.id == result.tool_use_id) {
            let tool = screen.tools.remove(at);
            let mark = if result.is_error {
                "\x1b[31m⏺\x1b[0m"
            } else {
                "\x1b[32m⏺\x1b[0m"
            };
            screen.printing(Printed::Call);
            eprintln!("{mark} {}", tool.activity);
        }
        screen.printing(Printed::Call);
        crate::tool_lines::print_result(name, result);
        screen.redraw();
    }

    /// Prints a line on standard error above the live lines.
    pub(crate) fn note(&self, line: &str) {
        let mut screen = self.lock();
        screen.end_text();
        screen.clear();
        eprintln!("{line}");
        screen.redraw();
    }

    /// Pauses the live lines while a question has the screen to itself.
    pub(crate) fn pause(&self) {
        let mut screen = self.lock();
        screen.end_text();
        screen.clear();
        screen.paused = true;
    }

    /// Shows the live lines again after [`Live::pause`].
    pub(crate) fn resume(&self) {
        let mut screen = self.lock();
        screen.paused = false;
        screen.redraw();
    }
}

impl Screen {
    /// Erases the live lines; the cursor goes back to where they began.
    fn clear(&mut self) {
        if self.drawn == 0 {
            return;
        }
        let mut err = std::io::stderr().lock();
        let up = if self.drawn > 1 {
            format!("\x1b[{}A", self.drawn - 1)
        } else {
            String::new()
        };
        let _ = write!(err, "\r{up}\x1b[J");
        let _ = err.flush();
        self.drawn = 0;
    }

    /// Text broken off mid-line (a call comes next): the line is ended and printed.
    fn end_text(&mut self) {
        if self.markdown.mid_line() {
            self.clear();
            let rest = self.markdown.finish();
            self.printing(Printed::Text);
            print_out(&rest);
        }
    }

    /// `what` is printed next: after the other kind, a blank line first.
    fn printing(&mut self, what: Printed) {
        if self.last.is_some_and(|last| last != what) {
            eprintln!();
        }
        self.last = Some(what);
    }

    /// Draws the live lines again, to the terminal's width now (it may have been resized).
    fn redraw(&mut self) {
        self.clear();
        self.width = width();
        self.markdown.set_width(self.width);
        if self.paused {
            return;
        }
        let lines = self.live_lines();
        if lines.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", lines.join("\n"));
        let _ = err.flush();
        self.drawn = lines.len();
    }

    fn live_lines(&self) -> Vec<String> {
        let frame = FRAMES[self.frame % FRAMES.len()];
        let mut lines = Vec::new();
        for tool in &self.tools {
            let mark = if tool.finished { "✓" } else { frame };
            let seconds = tool.started.elapsed().as_secs();
            let mut line = format!("\x1b[33m{mark}\x1b[0m {}", tool.activity);
            if seconds > 0 {
                line.push_str(&format!(" \x1b[2m({seconds}s)\x1b[0m"));
            }
            lines.push(line);
            if let Some(progress) = &tool.progress {
                lines.push(format!("  \x1b[2m⎿ {progress}\x1b[0m"));
            }
        }
        if let Some(turn) = &self.turn
            && self.tools.iter().all(|t| t.finished)
        {
            let label = if turn.thinking { "Thinking" } else { "Working" };
            let tokens = turn.tokens + (turn.streamed / 4) as u64;
            let mut line = format!(
                "\x1b[35m{frame} {label}…\x1b[0m \x1b[2m({}s",
                turn.started.elapsed().as_secs()
            );
            if tokens > 0 {
                line.push_str(&format!(" · ↓ {} tokens", crate::usage::tokens(tokens)));
            }
            line.push_str(" · Ctrl-C to interrupt)\x1b[0m");
            lines.push(line);
        }
        lines
            .into_iter()
            .map(|line| fit(&line, self.width.saturating_sub(1)))
            .collect()
    }
}

/// A live line cut to the terminal's width, so that each takes exactly one row.
fn fit(line: &str, width: usize) -> String {
    if visible_width(line) <= width {
        return line.to_owned();
    }
    let plain = strip_escapes(line);
    let mut out = String::new();
    let mut used = 0;
    for c in plain.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Prints rendered answer text on standard output.
fn print_out(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_lines_fit_the_terminal() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("\x1b[1mabcdefghijkl\x1b[0m", 6), "abcde…");
        assert_eq!(visible_width(&fit("日本語のテキスト", 7)), 7);
    }
}
