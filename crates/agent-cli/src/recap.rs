//! What a resumed session shows before its first prompt: the conversation the model will see
//! (from the latest summary on), one line per prompt, answer, tool call and result, and under each
//! sub-agent call what the sub-agent did, read from its side transcript.
//!
//! The side transcript is found from the call's id under the session's own folder
//! ([`crate::subagent::transcript_dir`]), never from a path stored in the conversation.

use std::path::Path;

use serde_json::Value;
use tool_core::ToolResult;

use crate::conversation::{Block, Message, Role};
use crate::subagent::{AGENT_TOOL, transcript_dir};

/// How many characters of a line a recap keeps.
const LINE_CHARS: usize = 120;

/// How many of a sub-agent's calls a recap lists under its call.
const SUBAGENT_CALLS: usize = 8;

/// Names a tool call for a person, such as `Reading src/lib.rs`.
pub type Describe<'a> = &'a dyn Fn(&str, &Value) -> String;

/// The recap of `messages`, at most `max_lines` lines (the latest ones, after a line counting
/// those left out). `session_dir` holds the sub-agents' side transcripts.
pub fn recap(
    messages: &[Message],
    session_dir: &Path,
    describe: Describe<'_>,
    max_lines: usize,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut calls: Vec<(&str, &str)> = Vec::new();
    for message in messages {
        for block in &message.content {
            match block {
                Block::Text { text } => lines.push(text_line(message.role, text)),
                Block::Image { .. } => lines.push("> [image]".to_owned()),
                Block::ToolUse(tool_core::ToolCall { id, name, input }) => {
                    calls.push((id, name));
                    lines.push(format!("⏺ {}", one_line(&describe(name, input))));
                }
                Block::ToolResult(result) => {
                    let name = calls
                        .iter()
                        .find(|(id, _)| *id == result.tool_use_id)
                        .map(|(_, name)| *name);
                    if name == Some(AGENT_TOOL) {
                        lines.extend(subagent_lines(session_dir, &result.tool_use_id, describe));
                    }
                    lines.push(result_line(result));
                }
                Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
            }
        }
    }
    if lines.len() > max_lines {
        let left_out = lines.len() - max_lines;
        lines.drain(..left_out);
        lines.insert(0, format!("({left_out} earlier lines not shown)"));
    }
    lines
}

/// A prompt (`> …`), the summary that stands for compacted history, or the model's words.
fn text_line(role: Role, text: &str) -> String {
    match role {
        Role::User => match crate::compaction::summary_in(text) {
            Some(summary) => format!(
                "(earlier conversation, as summarised) {}",
                first_line(summary)
            ),
            None => format!("> {}", first_line(text)),
        },
        Role::Assistant => first_line(text),
    }
}

fn result_line(result: &ToolResult) -> String {
    let text = result.text();
    if result.is_error {
        format!("  ⎿ failed: {}", first_line(&text))
    } else {
        format!("  ⎿ {}", first_line(&text))
    }
}

/// The calls a sub-agent made, from the side transcript of the `agent` call `tool_use_id`.
fn subagent_lines(session_dir: &Path, tool_use_id: &str, describe: Describe<'_>) -> Vec<String> {
    let Some(messages) = side_transcript(session_dir, tool_use_id) else {
        return vec!["  ⎿ (the sub-agent's transcript is missing)".to_owned()];
    };
    let calls: Vec<String> = messages
        .iter()
        .flat_map(Message::tool_uses)
        .map(|(_, name, input)| one_line(&describe(name, input)))
        .collect();
    let mut lines: Vec<String> = calls
        .iter()
        .take(SUBAGENT_CALLS)
        .map(|call| format!("  · {call}"))
        .collect();
    if calls.len() > SUBAGENT_CALLS {
        lines.push(format!(
            "  · (+{} more calls)",
            calls.len() - SUBAGENT_CALLS
        ));
    }
    lines
}

/// The messages of the side transcript of `tool_use_id`, when there is one.
fn side_transcript(session_dir: &Path, tool_use_id: &str) -> Option<Vec<Message>> {
    let dir = transcript_dir(session_dir, tool_use_id);
    let path = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))?;
    crate::transcript::load(&path)
        .ok()
        .map(|(_, messages)| messages)
}

/// The first non-blank line of `text`, cut to [`LINE_CHARS`], with how many lines follow.
fn first_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("(empty)");
    let more = lines.count();
    let line = one_line(first);
    match more {
        0 => line,
        1 => format!("{line} (+1 line)"),
        _ => format!("{line} (+{more} lines)"),
    }
}

/// `text` on one line: white space folded, cut to [`LINE_CHARS`] with an ellipsis.
fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match tool_core::head_chars(&folded, LINE_CHARS) {
        (_, 0) => folded,
        _ => format!("{}…", tool_core::head_chars(&folded, LINE_CHARS - 1).0),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_core::Content;

    use super::*;
    use crate::transcript::Transcript;

    fn describe(name: &str, input: &Value) -> String {
        format!("{name} {input}")
    }

    fn call(id: &str, name: &str, input: Value) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(tool_core::ToolCall {
                id: id.into(),
                name: name.into(),
                input,
            })],
        }
    }

    fn result(id: &str, text: &str, is_error: bool) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: vec![Content::text(text)],
                structured: None,
                is_error,
            })],
        }
    }

    #[test]
    fn a_recap_shows_prompts_calls_results_and_what_a_sub_agent_did() {
        let session = tempfile::tempdir().unwrap();
        let mut side =
            Transcript::create(&transcript_dir(session.path(), "toolu_a"), session.path()).unwrap();
        side.message(&Message::user_text("find the config loader"))
            .unwrap();
        side.message(&call("s1", "grep", json!({"pattern": "load_config"})))
            .unwrap();
        side.message(&result("s1", "src/config.rs:12", false))
            .unwrap();
        let long = "x".repeat(300);
        let messages = vec![
            Message::user_text(
                crate::compaction::summary_message("Goal: fix it.\nPending: test.").text(),
            ),
            Message::user_text("where is the config loaded?\nand by whom"),
            call(
                "toolu_a",
                AGENT_TOOL,
                json!({"prompt": "find the config loader"}),
            ),
            result("toolu_a", "In src/config.rs.", false),
            call("toolu_b", "read_file", json!({"path": "missing.rs"})),
            result("toolu_b", "no such file: missing.rs\ntry glob", true),
            Message {
                role: Role::Assistant,
                content: vec![Block::Text { text: long }],
            },
        ];
        let lines = recap(&messages, session.path(), &describe, 100);
        insta::assert_snapshot!(lines.join("\n"));
        let cut = recap(&messages, session.path(), &describe, 3);
        assert_eq!(cut.len(), 4);
        assert_eq!(cut[0], "(5 earlier lines not shown)");
    }

    #[test]
    fn a_missing_side_transcript_is_said_not_fatal() {
        let session = tempfile::tempdir().unwrap();
        let messages = vec![
            call("../../etc", AGENT_TOOL, json!({"prompt": "x"})),
            result("../../etc", "done", false),
        ];
        let lines = recap(&messages, session.path(), &describe, 10);
        assert_eq!(lines[1], "  ⎿ (the sub-agent's transcript is missing)");
    }
}
