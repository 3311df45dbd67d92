//! What the interactive mode reads: on a terminal, a line editor (cursor movement and word
//! editing, history kept across sessions and searched with Ctrl-R, several lines in one prompt,
//! pasted text as one prompt, completion of slash commands, skills and `@path`); otherwise plain
//! lines from standard input, as a pipe or a test sends them.
//!
//! A prompt spans several lines when a line ends with `\` (the backslash becomes the line
//! break), with Alt-Enter, or when several lines are pasted at once.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, CompletionType, EditMode, Editor, EventHandler, KeyCode, KeyEvent, Modifiers,
};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::settings::Paths;

/// The most prompts kept in the history file.
const HISTORY_SIZE: usize = 2_000;

/// The slash commands offered by completion.
const COMMANDS: [&str; 11] = [
    "/help",
    "/clear",
    "/compact",
    "/context",
    "/cost",
    "/tools",
    "/mcp",
    "/model",
    "/permissions",
    "/exit",
    "/quit",
];

/// Standard input, shared by the conversation's prompt and the questions asked during a turn.
pub struct Input {
    source: Source,
}

enum Source {
    /// Not a terminal: lines as they come.
    Lines(tokio::sync::Mutex<Lines<BufReader<Stdin>>>),
    /// A terminal: the editor, taken out while a blocking read runs on another thread.
    Editor {
        editor: Mutex<Option<Box<Editor<Completion, DefaultHistory>>>>,
        history: PathBuf,
    },
}

/// What reading a prompt gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A prompt.
    Line(String),
    /// The end of input (Ctrl-D on an empty line, or the pipe closed).
    End,
    /// Ctrl-C at the prompt.
    Interrupted,
}

/// Opens standard input: the line editor when both it and standard output are terminals (its
/// history in the user directory of `paths`), plain lines otherwise.
pub fn open(paths: &Paths, cwd: &Path) -> Arc<Input> {
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let history = paths.user_dir.join("history");
    let source = match terminal.then(|| editor(cwd, &history)).flatten() {
        Some(editor) => Source::Editor {
            editor: Mutex::new(Some(Box::new(editor))),
            history,
        },
        None => Source::Lines(tokio::sync::Mutex::new(
            BufReader::new(tokio::io::stdin()).lines(),
        )),
    };
    Arc::new(Input { source })
}

/// The editor with its key bindings, completion and the user's history; `None` when the
/// terminal cannot be set up (plain lines are read then).
fn editor(cwd: &Path, history: &Path) -> Option<Editor<Completion, DefaultHistory>> {
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_SIZE)
        .ok()?
        .history_ignore_dups(true)
        .ok()?
        .history_ignore_space(true)
        .completion_type(CompletionType::List)
        .edit_mode(EditMode::Emacs)
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config).ok()?;
    editor.set_helper(Some(Completion {
        cwd: cwd.to_owned(),
        skills: Vec::new(),
    }));
    // Alt-Enter breaks the line. Not Ctrl-J: Enter typed ahead while a turn runs reaches the
    // editor as a line feed (the terminal was not raw then), and must send the prompt.
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
    // A missing file is a first session; an unreadable one costs only the recall.
    let _ = editor.load_history(history);
    Some(editor)
}

impl Input {
    /// Whether prompts are read with the line editor (standard input is a terminal).
    pub fn is_terminal(&self) -> bool {
        matches!(self.source, Source::Editor { .. })
    }

    /// The skills completion offers after `/`.
    pub fn set_skills(&self, names: Vec<String>) {
        if let Source::Editor { editor, .. } = &self.source
            && let Ok(mut editor) = editor.lock()
            && let Some(helper) = editor.as_mut().and_then(|e| e.helper_mut())
        {
            helper.skills = names;
        }
    }

    /// Reads a prompt for the conversation, kept in the history.
    pub async fn prompt(&self, prompt: &str) -> anyhow::Result<Read> {
        let read = self.read(prompt).await?;
        if let (Read::Line(line), Source::Editor { editor, history }) = (&read, &self.source)
            && !line.trim().is_empty()
            && let Ok(mut editor) = editor.lock()
            && let Some(editor) = editor.as_mut()
        {
            let _ = editor.add_history_entry(line.as_str());
            if let Some(dir) = history.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            // Appending keeps what other sessions added meanwhile; a failure costs only recall.
            let _ = editor.append_history(history);
        }
        Ok(read)
    }

    /// Reads one answer line (not kept in the history). On a terminal `prompt` is the text on
    /// the line before the cursor; the lines before it are printed first.
    pub async fn line(&self, prompt: &str) -> anyhow::Result<Option<String>> {
        Ok(match self.read(prompt).await? {
            Read::Line(line) => Some(line),
            Read::End | Read::Interrupted => None,
        })
    }

    async fn read(&self, prompt: &str) -> anyhow::Result<Read> {
        match &self.source {
            Source::Lines(lines) => {
                use std::io::Write as _;
                eprint!("{prompt}");
                let _ = std::io::stderr().flush();
                Ok(match lines.lock().await.next_line().await? {
                    Some(line) => Read::Line(line),
                    None => Read::End,
                })
            }
            Source::Editor { editor, .. } => {
                let (head, last) = match prompt.rsplit_once('\n') {
                    Some((head, last)) => (Some(head), last),
                    None => (None, prompt),
                };
                if let Some(head) = head {
                    eprintln!("{head}");
                }
                let taken = editor.lock().ok().and_then(|mut e| e.take());
                let Some(mut taken) = taken else {
                    anyhow::bail!("the line editor is already reading");
                };
                let last = last.to_owned();
                let (taken, result) = tokio::task::spawn_blocking(move || {
                    let result = taken.readline(&last);
                    (taken, result)
                })
                .await?;
                if let Ok(mut slot) = editor.lock() {
                    *slot = Some(taken);
                }
                match result {
                    Ok(line) => Ok(Read::Line(joined(&line))),
                    Err(ReadlineError::Eof) => Ok(Read::End),
                    Err(ReadlineError::Interrupted) => Ok(Read::Interrupted),
                    Err(err) => Err(anyhow::anyhow!("reading the prompt: {err}")),
                }
            }
        }
    }
}

/// Completion of slash commands and skills at the start of a prompt, and of paths after `@`.
pub(crate) struct Completion {
    cwd: PathBuf,
    skills: Vec<String>,
}

impl Completion {
    /// The candidates for the word before `pos`: where it starts, and what may replace it.
    pub(crate) fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let before = line.get(..pos).unwrap_or(line);
        let start = before.rfind(char::is_whitespace).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        let word = &before[start..];
        if start == 0 && word.starts_with('/') {
            let names = COMMANDS
                .iter()
                .map(|c| (*c).to_owned())
                .chain(self.skills.iter().map(|s| format!("/{s}")));
            let pairs = names
                .filter(|name| name.starts_with(word))
                .map(|name| Pair {
                    display: name.clone(),
                    replacement: format!("{name} "),
                })
                .collect();
            return (0, pairs);
        }
        match word.strip_prefix('@') {
            Some(path) => (start + 1, self.paths(path)),
            None => (pos, Vec::new()),
        }
    }

    /// The files and folders whose path starts with `partial`, relative to the working folder.
    fn paths(&self, partial: &str) -> Vec<Pair> {
        let (dir, prefix) = match partial.rfind('/') {
            Some(i) => (&partial[..=i], &partial[i + 1..]),
            None => ("", partial),
        };
        let Ok(entries) = std::fs::read_dir(self.cwd.join(dir)) else {
            return Vec::new();
        };
        let mut pairs: Vec<Pair> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_str()?.to_owned();
                let hidden = name.starts_with('.') && !prefix.starts_with('.');
                if hidden || !name.starts_with(prefix) {
                    return None;
                }
                let slash = if entry.file_type().ok()?.is_dir() {
                    "/"
                } else {
                    ""
                };
                Some(Pair {
                    display: format!("{name}{slash}"),
                    replacement: format!("{dir}{name}{slash}"),
                })
            })
            .collect();
        pairs.sort_by(|a, b| a.display.cmp(&b.display));
        pairs
    }
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        Ok(self.candidates(line, pos))
    }
}

impl Hinter for Completion {
    type Hint = String;
}

impl Highlighter for Completion {}

/// Enter after a trailing `\` starts another line of the same prompt.
impl Validator for Completion {
    fn validate(
        &self,
        ctx: &mut rustyline::validate::ValidationContext,
    ) -> rustyline::Result<rustyline::validate::ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            rustyline::validate::ValidationResult::Incomplete
        } else {
            rustyline::validate::ValidationResult::Valid(None)
        })
    }
}

/// A prompt as typed, its lines continued with a trailing `\` joined by line breaks alone.
pub(crate) fn joined(text: &str) -> String {
    text.replace("\\\n", "\n")
}

impl rustyline::Helper for Completion {}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(completion: &Completion, line: &str) -> (usize, Vec<String>) {
        let (start, pairs) = completion.candidates(line, line.len());
        (start, pairs.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn completes_commands_skills_and_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/bin")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/.hidden"), "").unwrap();
        let completion = Completion {
            cwd: dir.path().to_owned(),
            skills: vec!["review".to_owned()],
        };
        assert_eq!(
            complete(&completion, "/co"),
            (
                0,
                vec!["/compact ".to_owned(), "/context ".into(), "/cost ".into()]
            )
        );
        assert_eq!(complete(&completion, "/rev"), (0, vec!["/review ".into()]));
        assert_eq!(
            complete(&completion, "look at @src/"),
            (9, vec!["src/bin/".to_owned(), "src/main.rs".into()])
        );
        assert_eq!(
            complete(&completion, "look at @sr"),
            (9, vec!["src/".into()])
        );
        // Not at the start of the line, a slash is a path in prose; other words complete nothing.
        assert_eq!(complete(&completion, "see /co").1, Vec::<String>::new());
        assert_eq!(complete(&completion, "plain wo").1, Vec::<String>::new());
        assert_eq!(complete(&completion, "@nowhere/x").1, Vec::<String>::new());
    }

    #[test]
    fn a_trailing_backslash_continues_the_prompt() {
        assert_eq!(joined("one\\\ntwo\\\nthree"), "one\ntwo\nthree");
        assert_eq!(joined("a \\ b"), "a \\ b");
    }
}
