//! edit_file: exact search and replace, with curly-quote tolerance, CRLF preservation and a
//! unified diff of the change.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::diff::unified_diff;
use crate::file_state::FileState;
use crate::offload::blocking;
use crate::text::{cap_output, curl_quotes, decode_utf8, is_crlf, straighten};
use crate::workspace::{FileTarget, Workspace, rule_path};

/// The edit_file tool.
pub(crate) struct EditFile {
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) files: Arc<FileState>,
}

/// edit_file's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EditFileInput {
    /// The file to edit: relative to the working directory, or absolute.
    pub path: String,
    /// The exact text to replace, including its indentation. It must occur exactly once unless
    /// replace_all is set. Empty creates a new file with new_string as its contents.
    pub old_string: String,
    /// The text to put in its place (must differ from old_string).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    pub replace_all: bool,
}

#[async_trait]
impl Tool for EditFile {
    type Input = EditFileInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "edit_file",
            "Replaces text in a file. old_string must match the file exactly (indentation included; do not include the line-number prefix read_file shows) and occur exactly once; add surrounding lines to make it unique, or set replace_all to change every occurrence. The file must have been read with read_file in this session and be unchanged since. Returns a diff of the change. With an empty old_string and a path that does not exist, creates the file.",
            input_schema,
        )
        .with_search_hint("edit file search and replace text")
    }

    async fn validate_input(
        &self,
        input: &EditFileInput,
        _: &ToolContext,
    ) -> Result<(), ToolError> {
        if input.old_string == input.new_string {
            return Err(ToolError::invalid(
                "old_string and new_string are the same, so there is nothing to change; pass the new text in new_string",
            ));
        }
        Ok(())
    }

    async fn check_permissions(&self, input: &EditFileInput, ctx: &ToolContext) -> PermissionCheck {
        let ask = PermissionCheck::Ask {
            reason: format!("edit_file wants to change {}", input.path),
        };
        self.workspace.check_path(ctx, &input.path, ask)
    }

    fn prompt(&self) -> Option<String> {
        Some("Use edit_file for changes to existing files. Copy old_string exactly from read_file's output without the line-number prefix, with enough surrounding lines to be unique.".to_owned())
    }

    fn info(&self, input: &EditFileInput) -> CallInfo {
        CallInfo::writes()
            .with_path(Some(rule_path(&input.path)))
            .with_activity(Some(format!("Editing {}", input.path)))
    }

    async fn call(&self, input: EditFileInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let target = FileTarget::resolve(&self.workspace, &self.files, ctx, &input.path)?;
        blocking(move || match target.read_guarded()? {
            Some(bytes) => edit(&target, &input, bytes),
            None => create(&target, &input),
        })
        .await
    }
}

/// Edits an existing file (read and unchanged since) and shows the diff.
fn edit(
    target: &FileTarget,
    input: &EditFileInput,
    bytes: Vec<u8>,
) -> Result<ToolOutput, ToolError> {
    let shown = &target.shown;
    let original = decode_utf8(bytes, shown)?;
    let (updated, count) = apply_edit(&original, input, shown)?;
    target.write(updated.as_bytes())?;
    let diff = unified_diff(shown, &original, &updated);
    let times = if count == 1 {
        "1 replacement".to_owned()
    } else {
        format!("{count} replacements")
    };
    Ok(ToolOutput::text(cap_output(&format!(
        "Edited {shown} ({times}).\n{}",
        diff.trim_end()
    ))))
}

/// Creates a missing file from an edit with an empty `old_string`; any other edit of a missing
/// file is an error that says where to look.
fn create(target: &FileTarget, input: &EditFileInput) -> Result<ToolOutput, ToolError> {
    let shown = &target.shown;
    if !input.old_string.is_empty() {
        return Err(ToolError::failed(format!(
            "{shown} does not exist; check the path with glob, or create the file with write_file"
        )));
    }
    target.create_parents()?;
    target.write(input.new_string.as_bytes())?;
    let diff = unified_diff(shown, "", &input.new_string);
    Ok(ToolOutput::text(cap_output(&format!(
        "Created {shown}.\n{}",
        diff.trim_end()
    ))))
}

/// Applies the edit to `original`, returning the new contents and the number of replacements.
fn apply_edit(
    original: &str,
    input: &EditFileInput,
    shown: &str,
) -> Result<(String, usize), ToolError> {
    if input.old_string.is_empty() {
        if !original.is_empty() {
            return Err(ToolError::invalid(format!(
                "old_string is empty but {shown} already has contents; pass the exact text to replace, or use write_file to replace the whole file"
            )));
        }
        return Ok((input.new_string.clone(), 1));
    }
    // A CRLF file is edited in LF form, so the model's `\n` matches, and turned back after.
    let crlf = is_crlf(original);
    let (text, old, new) = if crlf {
        (
            original.replace("\r\n", "\n"),
            input.old_string.replace("\r\n", "\n"),
            input.new_string.replace("\r\n", "\n"),
        )
    } else {
        (
            original.to_owned(),
            input.old_string.clone(),
            input.new_string.clone(),
        )
    };
    let matches = find_matches(&text, &old);
    match matches.len() {
        0 => return Err(no_match_error(&text, &old, shown)),
        1 => {}
        n if !input.replace_all => {
            return Err(ToolError::failed(format!(
                "old_string occurs {n} times in {shown}, but it must be unique; include more surrounding lines to pick one occurrence, or set replace_all to true to change all {n}"
            )));
        }
        _ => {}
    }
    let mut out = String::with_capacity(text.len() + new.len());
    let mut last = 0;
    for range in &matches {
        let found = &text[range.clone()];
        out.push_str(&text[last..range.start]);
        out.push_str(&styled_replacement(found, &old, &new));
        last = range.end;
    }
    out.push_str(&text[last..]);
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    Ok((out, matches.len()))
}

/// When the file's text matched only after straightening its quotes, the replacement takes the
/// file's curly style, so the file keeps its own characters.
fn styled_replacement(found: &str, old: &str, new: &str) -> String {
    if found == old {
        return new.to_owned();
    }
    let single = found.contains(['\u{2018}', '\u{2019}']);
    let double = found.contains(['\u{201C}', '\u{201D}']);
    curl_quotes(new, single, double)
}

/// Non-overlapping byte ranges of `needle` in `text`: exact matches, or, when there are none,
/// matches with curly and straight quotes treated alike.
fn find_matches(text: &str, needle: &str) -> Vec<Range<usize>> {
    let exact: Vec<Range<usize>> = text
        .match_indices(needle)
        .map(|(start, m)| start..start + m.len())
        .collect();
    if !exact.is_empty() {
        return exact;
    }
    let norm_needle: String = needle.chars().map(straighten).collect();
    // Positions in the straightened text, paired with positions in the original, at every
    // character boundary (straightening changes byte lengths, not character counts).
    let mut norm = String::with_capacity(text.len());
    let mut offsets: Vec<(usize, usize)> = Vec::with_capacity(text.len() + 1);
    for (orig, c) in text.char_indices() {
        offsets.push((norm.len(), orig));
        norm.push(straighten(c));
    }
    offsets.push((norm.len(), text.len()));
    let to_orig = |n: usize| {
        offsets
            .binary_search_by_key(&n, |&(norm_at, _)| norm_at)
            .map_or(text.len(), |i| offsets[i].1)
    };
    norm.match_indices(norm_needle.as_str())
        .map(|(start, m)| to_orig(start)..to_orig(start + m.len()))
        .collect()
}

fn no_match_error(text: &str, old: &str, shown: &str) -> ToolError {
    let trimmed: Vec<&str> = old
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let whitespace_hint = !trimmed.is_empty() && {
        let squashed: Vec<&str> = text.lines().map(str::trim).collect();
        squashed
            .windows(trimmed.len())
            .any(|w| w == trimmed.as_slice())
    };
    let hint = if whitespace_hint {
        " The text is there with different indentation or whitespace: copy it exactly as read_file shows it (without the line-number prefix)."
    } else {
        " Read the file again with read_file and copy the exact text, including whitespace and indentation."
    };
    ToolError::failed(format!("old_string was not found in {shown}.{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> EditFileInput {
        EditFileInput {
            path: "f".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: false,
        }
    }

    #[test]
    fn curly_quotes_match_straight_and_keep_their_style() {
        let file = "let s = \u{201C}it\u{2019}s here\u{201D};\n";
        let (out, n) = apply_edit(file, &edit("\"it's here\"", "\"it's gone\""), "f").unwrap();
        assert_eq!(n, 1);
        assert_eq!(out, "let s = \u{201C}it\u{2019}s gone\u{201D};\n");
    }

    #[test]
    fn straight_quotes_in_the_file_stay_straight() {
        let file = "say 'hi'\n";
        let (out, _) = apply_edit(file, &edit("\u{2018}hi\u{2019}", "'bye'"), "f").unwrap();
        assert_eq!(out, "say 'bye'\n");
    }

    #[test]
    fn crlf_stays_crlf() {
        let file = "one\r\ntwo\r\nthree\r\n";
        let (out, _) = apply_edit(file, &edit("one\ntwo", "uno\ndos\nmas"), "f").unwrap();
        assert_eq!(out, "uno\r\ndos\r\nmas\r\nthree\r\n");
    }

    #[test]
    fn whitespace_hint_on_no_match() {
        let file = "fn a() {\n        body();\n}\n";
        let err = apply_edit(file, &edit("fn a() {\n    body();\n}", "x"), "f").unwrap_err();
        assert!(err.to_string().contains("different indentation"), "{err}");
        let err = apply_edit(file, &edit("fn b()", "x"), "f").unwrap_err();
        assert!(err.to_string().contains("Read the file again"), "{err}");
    }
}
