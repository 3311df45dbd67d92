//! The result budget: output over a tool's `max_result_chars` is written whole to the session's
//! directory and replaced by a head-and-tail preview and the file's path. Nothing is silently
//! dropped.

use std::path::{Path, PathBuf};

use crate::output::{Content, ToolOutput};

/// How large a preview of an oversized result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultBudget {
    /// Characters kept from the start.
    pub head_chars: usize,
    /// Characters kept from the end.
    pub tail_chars: usize,
}

impl Default for ResultBudget {
    fn default() -> Self {
        Self {
            head_chars: 2_000,
            tail_chars: 1_000,
        }
    }
}

impl ResultBudget {
    /// Applies the budget: returns the output unchanged when within `max_chars`, else persists the
    /// text under `session_dir/tool-results/` and returns a preview pointing to the file.
    pub async fn apply(
        &self,
        output: ToolOutput,
        max_chars: Option<usize>,
        session_dir: &Path,
        tool_use_id: &str,
    ) -> ToolOutput {
        let Some(max) = max_chars else {
            return output;
        };
        let total: usize = output.content.iter().map(Content::char_len).sum();
        if total <= max {
            return output;
        }
        let text = output.joined_text();
        let path = result_path(session_dir, tool_use_id);
        let saved = match path.parent() {
            Some(dir) => match tokio::fs::create_dir_all(dir).await {
                Ok(()) => tokio::fs::write(&path, text.as_bytes()).await,
                Err(err) => Err(err),
            },
            None => Ok(()),
        };
        let (head, omitted, tail) = head_and_tail(&text, self.head_chars, self.tail_chars);
        let where_ = match saved {
            Ok(()) => format!(
                "The whole output was saved to {}; read it with read_file (using offset and limit) or search it with grep.",
                path.display()
            ),
            Err(err) => format!(
                "Saving the whole output to {} failed ({err}), so only this preview is available; narrow the call to get less output.",
                path.display()
            ),
        };
        let preview = format!(
            "Output too large: {total} characters, over this tool's limit of {max}. {where_}\n\nPreview (first {} and last {} characters):\n{head}\n[... {omitted} chars omitted ...]\n{tail}",
            self.head_chars, self.tail_chars
        );
        let mut content = vec![Content::text(preview)];
        content.extend(
            output
                .content
                .into_iter()
                .filter(|block| matches!(block, Content::Image { .. })),
        );
        ToolOutput {
            content,
            structured: None,
            is_error: output.is_error,
        }
    }
}

/// The folder under a session's directory where oversized results are saved; the file tools may
/// read it (read-only), since a preview points the model at its files.
pub const RESULTS_DIR: &str = "tool-results";

/// Where an oversized result of `tool_use_id` is saved.
pub fn result_path(session_dir: &Path, tool_use_id: &str) -> PathBuf {
    let safe = file_name_of_id(tool_use_id);
    session_dir.join(RESULTS_DIR).join(format!("{safe}.txt"))
}

/// A `tool_use_id` as one file name: anything but ASCII letters, digits, `-` and `_` becomes `_`,
/// so an id sent by a model can never name another folder (`../x`, `a/b`); an empty id is `_`.
pub fn file_name_of_id(tool_use_id: &str) -> String {
    if tool_use_id.is_empty() {
        return "_".to_owned();
    }
    tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The first `max_chars` characters of `text` (all of it when shorter) and how many characters
/// follow them: how every line, command or message shown shortened is cut.
///
/// ```
/// assert_eq!(tool_core::head_chars("αβγδ", 3), ("αβγ", 1));
/// assert_eq!(tool_core::head_chars("ab", 3), ("ab", 0));
/// ```
pub fn head_chars(text: &str, max_chars: usize) -> (&str, usize) {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
        None => (text, 0),
    }
}

/// Splits `text` into its first `head` characters, the number of characters between, and its last
/// `tail` characters (on character boundaries).
pub(crate) fn head_and_tail(text: &str, head: usize, tail: usize) -> (&str, usize, &str) {
    let total = text.chars().count();
    if total <= head + tail {
        return (text, 0, "");
    }
    let head_end = head_chars(text, head).0.len();
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    (&text[..head_end], total - head - tail, &text[tail_start..])
}

/// Keeps the head and tail of `text` within `max_chars`, with `[... N chars truncated ...]`
/// between: the in-tool cap every built-in applies to its own output.
pub fn truncate_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let (h, omitted, t) = head_and_tail(text, head, tail);
    format!("{h}\n[... {omitted} chars truncated ...]\n{t}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_respects_char_boundaries() {
        let text = "αβγδεζηθ";
        assert_eq!(head_and_tail(text, 2, 2), ("αβ", 4, "ηθ"));
        assert_eq!(head_and_tail(text, 4, 4), (text, 0, ""));
    }

    #[test]
    fn an_id_becomes_one_file_name() {
        assert_eq!(file_name_of_id("toolu_01-aB"), "toolu_01-aB");
        assert_eq!(file_name_of_id("../etc/passwd"), "___etc_passwd");
        assert_eq!(file_name_of_id(""), "_");
    }

    #[test]
    fn truncate_middle_marks_what_it_cut() {
        let text = "a".repeat(10) + &"b".repeat(10);
        assert_eq!(
            truncate_middle(&text, 4),
            "aa\n[... 16 chars truncated ...]\nbb"
        );
        assert_eq!(truncate_middle("short", 10), "short");
    }
}
