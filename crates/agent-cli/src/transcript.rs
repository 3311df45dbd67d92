//! Sessions saved as JSONL while they happen: one line per event, appended and flushed as soon
//! as the event is complete, so a killed process loses at most the message being streamed.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use tool_core::ToolResult;

use crate::compaction::{self, Trigger};
use crate::conversation::{Block, Message, Role};

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The first line: what the session is.
    Meta {
        /// The session's id.
        id: String,
        /// The working directory.
        cwd: String,
        /// Seconds since the Unix epoch.
        created: u64,
    },
    /// A complete message (a user message, an assistant message, or the tool results).
    Message {
        /// The message.
        message: Message,
    },
    /// The history so far was replaced by a summary: the conversation continues from the
    /// summary and the last `kept` messages before this line.
    Compaction {
        /// Why it happened.
        trigger: Trigger,
        /// The model's summary of what was replaced.
        summary: String,
        /// How many of the latest messages were kept verbatim.
        kept: usize,
    },
    /// The user cleared the conversation (`/clear`): it continues from nothing.
    Clear,
}

/// An open transcript.
#[derive(Debug)]
pub struct Transcript {
    id: String,
    path: PathBuf,
    file: File,
}

impl Transcript {
    /// Starts a new session under `dir`.
    pub fn create(dir: &Path, cwd: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!(
            "{created}-{:05x}{:03x}",
            std::process::id() & 0xfffff,
            nanos >> 20
        );
        let path = dir.join(format!("{id}.jsonl"));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let mut transcript = Self {
            id: id.clone(),
            path,
            file,
        };
        transcript.append(&Entry::Meta {
            id,
            cwd: cwd.to_string_lossy().into_owned(),
            created,
        })?;
        Ok(transcript)
    }

    /// Opens an existing session for appending, returning its messages (see [`load`]).
    ///
    /// A last line that a kill cut off is removed from the file first (with a note on stderr), so
    /// that the next entry starts on a line of its own; and the error results that [`load`] gives
    /// calls left without results are written to the file, so that every later load sees the
    /// same conversation.
    pub fn resume(path: &Path) -> anyhow::Result<(Self, Vec<Message>)> {
        if let Some(cut) = cut_torn_tail(path)? {
            eprintln!(
                "note: {} ended in a partial entry ({cut} bytes) left by an interrupted write; it was removed",
                path.display()
            );
        }
        let (id, mut messages) = read_entries(path)?;
        let closing = close_dangling_tool_calls(&messages);
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        let mut transcript = Self {
            id,
            path: path.to_path_buf(),
            file,
        };
        if let Some(closing) = closing {
            transcript.message(&closing)?;
            messages.push(closing);
        }
        Ok((transcript, messages))
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends an entry as one line and flushes it to the operating system.
    pub fn append(&mut self, entry: &Entry) -> anyhow::Result<()> {
        let mut line = serde_json::to_string(entry)?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Appends a message.
    pub fn message(&mut self, message: &Message) -> anyhow::Result<()> {
        self.append(&Entry::Message {
            message: message.clone(),
        })
    }

    /// Records a compaction: from here on the conversation is the summary and the last `kept`
    /// messages.
    pub fn compaction(
        &mut self,
        trigger: Trigger,
        summary: &str,
        kept: usize,
    ) -> anyhow::Result<()> {
        self.append(&Entry::Compaction {
            trigger,
            summary: summary.to_owned(),
            kept,
        })
    }
}

/// Reads a transcript: its id and messages. A last line cut off by a kill is dropped; tool calls
/// left without results (the process died while they ran) get error results saying so, so the
/// conversation can go on.
pub fn load(path: &Path) -> anyhow::Result<(String, Vec<Message>)> {
    let (id, mut messages) = read_entries(path)?;
    messages.extend(close_dangling_tool_calls(&messages));
    Ok((id, messages))
}

/// The id and messages as written. Only the last line may be partial: it was being written when
/// the process died.
fn read_entries(path: &Path) -> anyhow::Result<(String, Vec<Message>)> {
    let file = File::open(path).with_context(|| format!("opening session {}", path.display()))?;
    let mut id = None;
    let mut messages: Vec<Message> = Vec::new();
    let lines: Vec<String> = BufReader::new(file).lines().collect::<Result<_, _>>()?;
    let count = lines.len();
    for (number, line) in lines.into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(&line) {
            Ok(Entry::Meta { id: meta_id, .. }) => id = Some(meta_id),
            Ok(Entry::Message { message }) => messages.push(message),
            Ok(Entry::Compaction { summary, kept, .. }) => {
                let from = messages.len().saturating_sub(kept);
                messages = compaction::compacted(&summary, &messages, from);
            }
            Ok(Entry::Clear) => messages.clear(),
            Err(_) if number + 1 == count => {}
            Err(err) => anyhow::bail!(
                "{} line {} is not a session entry: {err}",
                path.display(),
                number + 1
            ),
        }
    }
    let id = id.with_context(|| format!("{} has no session header line", path.display()))?;
    Ok((id, messages))
}

/// One entry. A line that does not parse may be a partial entry with a whole one glued after it
/// (written by a version that appended after a torn line without cutting it off): the whole
/// entry is recovered from where its own text starts.
fn parse_line(line: &str) -> serde_json::Result<Entry> {
    serde_json::from_str::<Entry>(line).or_else(|err| {
        line.rmatch_indices(r#"{"type":"#)
            .filter(|(at, _)| *at > 0)
            .find_map(|(at, _)| serde_json::from_str::<Entry>(&line[at..]).ok())
            .ok_or(err)
    })
}

/// Cuts off the bytes after the last newline (a line that a kill left unfinished) and returns
/// how many there were.
fn cut_torn_tail(path: &Path) -> anyhow::Result<Option<u64>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let keep = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    if keep == bytes.len() {
        return Ok(None);
    }
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    file.set_len(keep as u64)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cutting the partial last line off {}", path.display()))?;
    Ok(Some((bytes.len() - keep) as u64))
}

/// Error results for the calls of a last assistant message that has none (the process died
/// while they ran).
fn close_dangling_tool_calls(messages: &[Message]) -> Option<Message> {
    let last = messages.last()?;
    if last.role != Role::Assistant {
        return None;
    }
    let results: Vec<Block> = last
        .tool_uses()
        .map(|(id, _, _)| {
            Block::ToolResult(ToolResult::error(
                id,
                "the session ended while this call was running, so its result was lost; check its effects before retrying",
            ))
        })
        .collect();
    (!results.is_empty()).then_some(Message {
        role: Role::User,
        content: results,
    })
}

/// A session started in a folder, as `--resume` without an id lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentSession {
    /// The session's id.
    pub id: String,
    /// Its file.
    pub path: PathBuf,
    /// When it last changed.
    pub modified: SystemTime,
    /// Its first prompt's first line (empty when it has none).
    pub first_prompt: String,
}

/// The sessions under `dir` started in `cwd`, newest first, at most `limit`.
pub fn recent(dir: &Path, cwd: &Path, limit: usize) -> anyhow::Result<Vec<RecentSession>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let cwd = cwd.to_string_lossy();
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        let mut lines = BufReader::new(file).lines().map_while(Result::ok);
        let Some(Ok(Entry::Meta { id, cwd: c, .. })) = lines.next().map(|l| parse_line(&l)) else {
            continue;
        };
        if c != cwd {
            continue;
        }
        let first_prompt = lines
            .filter_map(|line| match parse_line(&line) {
                Ok(Entry::Message { message }) if message.role == Role::User => {
                    Some(message.text())
                }
                _ => None,
            })
            .find(|text| !text.trim().is_empty())
            .and_then(|text| {
                text.lines()
                    .find(|l| !l.trim().is_empty())
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let modified = std::fs::metadata(&path)?.modified()?;
        found.push(RecentSession {
            id,
            path,
            modified,
            first_prompt,
        });
    }
    found.sort_by(|a, b| (b.modified, &b.path).cmp(&(a.modified, &a.path)));
    found.truncate(limit);
    Ok(found)
}

/// How long ago `time` was, as a person says it ("3 minutes ago").
pub fn ago(time: SystemTime, now: SystemTime) -> String {
    let seconds = now.duration_since(time).map_or(0, |d| d.as_secs());
    let (n, unit) = match seconds {
        0..60 => return "just now".to_owned(),
        60..3_600 => (seconds / 60, "minute"),
        3_600..86_400 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// The newest session under `dir` started in `cwd`, for `--continue`.
pub fn latest(dir: &Path, cwd: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let cwd = cwd.to_string_lossy();
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let first = File::open(&path)
            .ok()
            .and_then(|f| BufReader::new(f).lines().next())
            .and_then(Result::ok);
        let same_dir = matches!(
            first.as_deref().map(serde_json::from_str::<Entry>),
            Some(Ok(Entry::Meta { cwd: c, .. })) if c == cwd
        );
        if !same_dir {
            continue;
        }
        let modified = std::fs::metadata(&path)?.modified()?;
        if best
            .as_ref()
            .is_none_or(|(t, p)| (modified, &path) > (*t, p))
        {
            best = Some((modified, path));
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// The transcript of session `id` under `dir`.
pub fn by_id(dir: &Path, id: &str) -> anyhow::Result<PathBuf> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        anyhow::bail!("`{id}` is not a session id: ids look like 1763870000-0a1b2c3");
    }
    let path = dir.join(format!("{id}.jsonl"));
    if !path.exists() {
        anyhow::bail!(
            "no session `{id}` in {}; `--continue` resumes the latest one",
            dir.display()
        );
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_transcript_round_trips_and_survives_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create(dir.path(), Path::new("/proj")).unwrap();
        t.message(&Message::user_text("hello")).unwrap();
        let assistant = Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: "reading".into(),
                },
                Block::ToolUse(tool_core::ToolCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    input: json!({"path": "a"}),
                }),
            ],
        };
        t.message(&assistant).unwrap();
        // A kill in the middle of the next line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(t.path())
            .unwrap()
            .write_all(br#"{"type":"message","message":{"role":"us"#)
            .unwrap();
        let (id, messages) = load(t.path()).unwrap();
        assert_eq!(id, t.id());
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1], assistant);
        let Block::ToolResult(result) = &messages[2].content[0] else {
            panic!("expected a tool result");
        };
        assert!(result.is_error);
        assert_eq!(result.tool_use_id, "toolu_1");
        assert_eq!(
            latest(dir.path(), Path::new("/proj")).unwrap().as_deref(),
            Some(t.path())
        );
        assert_eq!(latest(dir.path(), Path::new("/other")).unwrap(), None);
        assert_eq!(by_id(dir.path(), t.id()).unwrap(), t.path());
        assert!(by_id(dir.path(), "../etc/passwd").is_err());
    }

    #[test]
    fn resuming_cuts_a_torn_tail_and_keeps_every_entry_over_repeated_kills() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create(dir.path(), Path::new("/proj")).unwrap();
        t.message(&Message::user_text("one")).unwrap();
        let path = t.path().to_path_buf();
        drop(t);
        for round in 0..3 {
            // A kill in the middle of a write, then a resume that appends the next message.
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap()
                .write_all(br#"{"type":"message","message":{"role":"as"#)
                .unwrap();
            let (mut t, messages) = Transcript::resume(&path).unwrap();
            assert_eq!(messages.len(), round + 1);
            t.message(&Message::user_text(format!("after kill {round}")))
                .unwrap();
        }
        let (_, messages) = load(&path).unwrap();
        let texts: Vec<String> = messages.iter().map(Message::text).collect();
        assert_eq!(
            texts,
            ["one", "after kill 0", "after kill 1", "after kill 2"]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        assert!(!text.contains(r#""role":"as{"#));
    }

    #[test]
    fn an_entry_glued_to_a_torn_line_is_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::create(dir.path(), Path::new("/proj")).unwrap();
        let glued = format!(
            "{}{}\n",
            r#"{"type":"message","message":{"role":"us"#,
            serde_json::to_string(&Entry::Message {
                message: Message::user_text("kept")
            })
            .unwrap()
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(t.path())
            .unwrap()
            .write_all(glued.as_bytes())
            .unwrap();
        let (mut t, messages) = Transcript::resume(t.path()).unwrap();
        assert_eq!(messages, [Message::user_text("kept")]);
        t.message(&Message::user_text("next")).unwrap();
        assert_eq!(load(t.path()).unwrap().1.len(), 2);
    }

    #[test]
    fn calls_left_without_results_are_closed_once_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create(dir.path(), Path::new("/proj")).unwrap();
        t.message(&Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(tool_core::ToolCall {
                id: "toolu_9".into(),
                name: "shell".into(),
                input: json!({"command": "make"}),
            })],
        })
        .unwrap();
        let (mut t, messages) = Transcript::resume(t.path()).unwrap();
        assert_eq!(messages.len(), 2);
        t.message(&Message::user_text("go on")).unwrap();
        let (_, again) = load(t.path()).unwrap();
        assert_eq!(again.len(), 3);
        assert_eq!(again[1].role, Role::User);
        assert!(matches!(&again[1].content[0], Block::ToolResult(r) if r.tool_use_id == "toolu_9"));
    }

    #[test]
    fn a_compaction_and_a_clear_are_where_a_load_starts() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create(dir.path(), Path::new("/proj")).unwrap();
        for text in ["one", "two", "three"] {
            t.message(&Message::user_text(text)).unwrap();
        }
        t.compaction(Trigger::Auto, "the summary", 1).unwrap();
        t.message(&Message::user_text("four")).unwrap();
        let (_, messages) = load(t.path()).unwrap();
        let texts: Vec<String> = messages.iter().map(Message::text).collect();
        assert_eq!(texts.len(), 3);
        assert!(texts[0].contains("the summary"));
        assert_eq!(texts[1..], ["three", "four"]);
        t.append(&Entry::Clear).unwrap();
        t.message(&Message::user_text("five")).unwrap();
        let (_, messages) = load(t.path()).unwrap();
        assert_eq!(messages, [Message::user_text("five")]);
    }
}
