//! read_file: a file with `cat -n` line numbers, a window of lines, images as image blocks.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{
    CallInfo, Content, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use crate::file_state::FileState;
use crate::offload::blocking;
use crate::text::{cap_output, image_media_type, looks_binary};
use crate::workspace::{FileTarget, Workspace, rule_path};

/// Lines shown when no `limit` is given.
const DEFAULT_LINE_LIMIT: usize = 2_000;
/// Lines longer than this many characters are cut with a marker.
const MAX_LINE_CHARS: usize = 2_000;
/// Images larger than this are refused rather than sent.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Text files larger than this are refused whole; the model reads them in windows instead.
const MAX_TEXT_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The read_file tool.
pub(crate) struct ReadFile {
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) files: Arc<FileState>,
}

/// read_file's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReadFileInput {
    /// The file to read: relative to the working directory, or absolute.
    pub path: String,
    /// The line number to start at (1-based). Only give it for files too long to read at once.
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to read (default 2000).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFile {
    type Input = ReadFileInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "read_file",
            "Reads a file from the local file system. Output has `cat -n` style line numbers (starting at 1), which are not part of the file. Reads up to 2000 lines from the start by default; pass offset and limit to read a window of a long file. Lines longer than 2000 characters are cut. Images (PNG, JPEG, GIF, WebP) are returned as images. Binary files are refused. Read a file before editing or overwriting it.",
            input_schema,
        )
        .with_search_hint("read file contents with line numbers")
        .with_max_result_chars(None)
    }

    fn info(&self, input: &ReadFileInput) -> CallInfo {
        CallInfo::reads()
            .with_concurrency_safe(true)
            .with_path(Some(rule_path(&input.path)))
            .with_activity(Some(format!("Reading {}", input.path)))
    }

    async fn validate_input(
        &self,
        input: &ReadFileInput,
        _: &ToolContext,
    ) -> Result<(), ToolError> {
        if input.offset == Some(0) {
            return Err(ToolError::invalid(
                "offset is 1-based: pass 1 (or leave it out) to start at the first line",
            ));
        }
        if input.limit == Some(0) {
            return Err(ToolError::invalid(
                "limit must be at least 1; leave it out to read up to 2000 lines",
            ));
        }
        Ok(())
    }

    async fn check_permissions(&self, input: &ReadFileInput, ctx: &ToolContext) -> PermissionCheck {
        self.workspace.check_read(ctx, &input.path)
    }

    fn prompt(&self) -> Option<String> {
        Some("Use read_file to look at files rather than shell commands such as cat, head or tail. Read a file before editing it; edit_file and write_file refuse files you have not read.".to_owned())
    }

    async fn call(&self, input: ReadFileInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let target =
            FileTarget::resolve_for_reading(&self.workspace, &self.files, ctx, &input.path)?;
        blocking(move || read(&target, &input)).await
    }
}

fn read(target: &FileTarget, input: &ReadFileInput) -> Result<ToolOutput, ToolError> {
    let shown = &target.shown;
    let meta = std::fs::metadata(&target.path).map_err(|e| target.io_error("read", &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory, not a file; list its files with glob (for example pattern \"{shown}/*\")"
        )));
    }
    if meta.len() > MAX_TEXT_FILE_BYTES {
        return Err(ToolError::failed(format!(
            "{shown} is {} bytes, too large to read; search it with grep instead",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&target.path).map_err(|e| target.io_error("read", &e))?;
    let mtime = meta.modified().ok();
    if let Some(media_type) = image_media_type(&bytes) {
        return read_image(target, media_type, &bytes, mtime);
    }
    if looks_binary(&bytes) {
        return Err(ToolError::failed(format!(
            "{shown} is a binary file ({} bytes) and cannot be shown as text; use a shell command made for its format (such as `file`, `xxd | head` or `unzip -l`) if you need to inspect it",
            bytes.len()
        )));
    }
    target.record(&bytes, mtime);
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    };
    if text.is_empty() {
        return Ok(ToolOutput::text(format!("{shown} is empty.")));
    }
    let mut out = numbered_lines(&text, input, shown)?;
    if lossy {
        out.push_str("\n(The file is not valid UTF-8; invalid bytes are shown as \u{FFFD}.)\n");
    }
    Ok(ToolOutput::text(cap_output(out.trim_end_matches('\n'))))
}

/// An image as an image block (with a line that names it), within the size limit for images.
fn read_image(
    target: &FileTarget,
    media_type: &str,
    bytes: &[u8],
    mtime: Option<SystemTime>,
) -> Result<ToolOutput, ToolError> {
    let size = bytes.len();
    if size as u64 > MAX_IMAGE_BYTES {
        return Err(ToolError::failed(format!(
            "{} is an image of {size} bytes, over the {MAX_IMAGE_BYTES} byte limit for images; resize it first (for example with a shell command) and read the smaller copy",
            target.shown
        )));
    }
    target.record(bytes, mtime);
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(ToolOutput {
        content: vec![
            Content::text(format!(
                "Image {} ({media_type}, {size} bytes)",
                target.shown
            )),
            Content::Image {
                media_type: media_type.to_owned(),
                data,
            },
        ],
        structured: None,
        is_error: false,
    })
}

/// The window of lines `input` asks for, `cat -n` style, with a note on how to read on when
/// the file goes further.
fn numbered_lines(text: &str, input: &ReadFileInput, shown: &str) -> Result<String, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = input.offset.unwrap_or(1);
    if start > total {
        return Err(ToolError::invalid(format!(
            "offset {start} is past the end of {shown}, which has {total} lines; pass an offset between 1 and {total}"
        )));
    }
    let limit = input.limit.unwrap_or(DEFAULT_LINE_LIMIT);
    let end = total.min(start.saturating_add(limit).saturating_sub(1));
    let mut out = String::new();
    for (index, line) in lines[start - 1..end].iter().enumerate() {
        let number = start + index;
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push_str(&format!("{number:>6}\t{}\n", cut_line(line)));
    }
    if end < total {
        out.push_str(&format!(
            "\n(Showing lines {start}-{end} of {total}. Pass offset {} to read on.)\n",
            end + 1
        ));
    }
    Ok(out)
}

fn cut_line(line: &str) -> String {
    match tool_core::head_chars(line, MAX_LINE_CHARS) {
        (all, 0) => all.to_owned(),
        (kept, cut) => format!("{kept}... [line cut: {cut} more characters]"),
    }
}
