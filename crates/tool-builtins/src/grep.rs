//! grep: regex search in process with ripgrep's libraries, gitignore-aware.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::DirEntry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::text::cap_output;
use crate::walk::{PathGlob, search_root, walk_files};
use crate::workspace::{Workspace, rule_path};

/// Output lines (or files, or counts) shown before "and N more".
const DEFAULT_GREP_LIMIT: usize = 100;
/// Matching lines longer than this many characters are cut.
const MAX_LINE_CHARS: usize = 500;

/// The grep tool.
pub(crate) struct Grep {
    pub(crate) workspace: Arc<Workspace>,
}

/// What grep lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputMode {
    /// Matching lines as `path:line:text` (context lines as `path-line-text`).
    #[default]
    Content,
    /// The paths of files with at least one match.
    FilesWithMatches,
    /// The number of matching lines per file, as `path:count`.
    Count,
}

/// grep's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GrepInput {
    /// The regular expression (Rust regex syntax, as ripgrep). A leading `-` is part of the
    /// pattern, not an option.
    pub pattern: String,
    /// The file or directory to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, such as "*.rs" or "*.{ts,tsx}" (names at any
    /// depth) or "src/**/*.rs" (paths under `path`).
    #[serde(default)]
    pub include: Option<String>,
    /// content (default): matching lines with line numbers; files_with_matches: paths only;
    /// count: matching lines per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Lines of context before and after each match (content mode).
    #[serde(default)]
    pub context: Option<usize>,
    /// Match without regard to case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// How many lines (or files, or counts) to show at most (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl Tool for Grep {
    type Input = GrepInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Searches file contents with a regular expression (ripgrep syntax), respecting .gitignore and skipping binary files. Output modes: content (matching lines as path:line:text, the default), files_with_matches (paths), count (matches per file). Filter files with include (\"*.rs\"), add context lines, ignore case. Shows up to 100 lines by default and says how many more there are. Prefer it to running grep or rg in the shell.",
            input_schema,
        )
        .with_search_hint("search find text in file contents regex ripgrep")
    }

    fn info(&self, input: &GrepInput) -> CallInfo {
        CallInfo::reads()
            .with_concurrency_safe(true)
            .with_path(input.path.as_deref().map(rule_path))
            .with_activity(Some(format!("Searching for {}", input.pattern)))
    }

    async fn validate_input(&self, input: &GrepInput, _: &ToolContext) -> Result<(), ToolError> {
        build_matcher(&input.pattern, input.case_insensitive).map(|_| ())
    }

    async fn check_permissions(&self, input: &GrepInput, ctx: &ToolContext) -> PermissionCheck {
        self.workspace.check_search(ctx, input.path.as_deref())
    }

    fn prompt(&self) -> Option<String> {
        Some("Search code with grep and find files with glob rather than running grep, rg or find in the shell.".to_owned())
    }

    async fn call(&self, input: GrepInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.read_roots(ctx);
        let root = search_root(&roots, input.path.as_deref())?;
        let denied = self.workspace.denied(&roots);
        let search = FileSearch::new(&input)?;
        let context = search.context;
        let mut results = walk_files(
            root,
            denied,
            ctx,
            move || searcher(context),
            move |searcher, root, entry| search.file(searcher, root, entry),
        )
        .await?;
        results.sort_by(|a, b| a.path.cmp(&b.path));
        let limit = input.limit.unwrap_or(DEFAULT_GREP_LIMIT).max(1);
        let rendered = render(&results, input.output_mode, context > 0, limit, |p| {
            roots.display(p)
        });
        let text = if rendered.is_empty() {
            let place = input.path.as_deref().unwrap_or("the working directory");
            format!("No matches for {} in {place}.", input.pattern)
        } else {
            rendered
        };
        Ok(ToolOutput::text(cap_output(&text)))
    }
}

/// What one grep call looks for in each file, shared by the walker threads.
struct FileSearch {
    matcher: RegexMatcher,
    include: Option<PathGlob>,
    mode: OutputMode,
    /// Lines of context around each match (content mode only).
    context: usize,
}

impl FileSearch {
    fn new(input: &GrepInput) -> Result<Self, ToolError> {
        let matcher = build_matcher(&input.pattern, input.case_insensitive)?;
        let include = input
            .include
            .as_deref()
            .map(|g| PathGlob::new(g, "include"))
            .transpose()?;
        let context = if input.output_mode == OutputMode::Content {
            input.context.unwrap_or(0).min(50)
        } else {
            0
        };
        Ok(Self {
            matcher,
            include,
            mode: input.output_mode,
            context,
        })
    }

    /// The matches in one file of the walk under `root`, if it has any.
    fn file(&self, searcher: &mut Searcher, root: &Path, entry: DirEntry) -> Option<FileHits> {
        // A file given directly as `path` is searched whatever `include` says.
        if entry.depth() > 0
            && self
                .include
                .as_ref()
                .is_some_and(|g| !g.is_match(root, entry.path()))
        {
            return None;
        }
        let mut sink = Collect {
            lines: Vec::new(),
            matches: 0,
            mode: self.mode,
        };
        let searched = searcher.search_path(&self.matcher, entry.path(), &mut sink);
        (searched.is_ok() && sink.matches > 0).then(|| FileHits {
            path: entry.into_path(),
            lines: sink.lines,
            matches: sink.matches,
        })
    }
}

/// A searcher for one walker thread: line numbers, `context` lines around matches, and binary
/// files skipped at their first NUL byte.
fn searcher(context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build()
}

fn build_matcher(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, ToolError> {
    if pattern.is_empty() {
        return Err(ToolError::invalid(
            "the pattern is empty: pass a regular expression such as \"fn main\"",
        ));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|err| {
            ToolError::invalid(format!(
                "the pattern is not a valid regular expression: {err}\nEscape special characters with a backslash (\\( \\[ \\{{ \\. \\*) to match them literally."
            ))
        })
}

/// One file's matches.
#[derive(Debug)]
struct FileHits {
    path: PathBuf,
    lines: Vec<Line>,
    matches: u64,
}

#[derive(Debug)]
enum Line {
    Match(u64, String),
    Context(u64, String),
    Break,
}

struct Collect {
    lines: Vec<Line>,
    matches: u64,
    mode: OutputMode,
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    match tool_core::head_chars(text, MAX_LINE_CHARS) {
        (all, 0) => all.to_owned(),
        (kept, _) => format!("{kept}... [line cut]"),
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        match self.mode {
            OutputMode::FilesWithMatches => return Ok(false),
            OutputMode::Count => {}
            OutputMode::Content => self.lines.push(Line::Match(
                mat.line_number().unwrap_or(0),
                line_text(mat.bytes()),
            )),
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        if !matches!(ctx.kind(), SinkContextKind::Other) {
            self.lines.push(Line::Context(
                ctx.line_number().unwrap_or(0),
                line_text(ctx.bytes()),
            ));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.lines.push(Line::Break);
        Ok(true)
    }
}

/// Output lines up to a limit, counting the ones left out.
struct Capped {
    lines: Vec<String>,
    limit: usize,
    hidden: usize,
}

impl Capped {
    fn push(&mut self, line: String) {
        if self.lines.len() < self.limit {
            self.lines.push(line);
        } else {
            self.hidden += 1;
        }
    }
}

fn render(
    results: &[FileHits],
    mode: OutputMode,
    with_context: bool,
    limit: usize,
    display: impl Fn(&Path) -> String,
) -> String {
    let mut out = Capped {
        lines: Vec::new(),
        limit,
        hidden: 0,
    };
    for (index, file) in results.iter().enumerate() {
        let shown = display(&file.path);
        match mode {
            OutputMode::FilesWithMatches => out.push(shown),
            OutputMode::Count => out.push(format!("{shown}:{}", file.matches)),
            OutputMode::Content => {
                if with_context && index > 0 {
                    out.push("--".to_owned());
                }
                for line in &file.lines {
                    out.push(match line {
                        Line::Match(n, text) => format!("{shown}:{n}:{text}"),
                        Line::Context(n, text) => format!("{shown}-{n}-{text}"),
                        Line::Break => "--".to_owned(),
                    });
                }
            }
        }
    }
    if out.lines.is_empty() {
        return String::new();
    }
    let mut text = out.lines.join("\n");
    if out.hidden > 0 {
        let unit = match mode {
            OutputMode::Content => "lines",
            OutputMode::FilesWithMatches | OutputMode::Count => "files",
        };
        text.push_str(&format!(
            "\n[... and {} more {unit}; narrow the search with path, include or a more specific pattern, or raise limit]",
            out.hidden
        ));
    }
    if mode == OutputMode::Count {
        let total_matches: u64 = results.iter().map(|f| f.matches).sum();
        text.push_str(&format!(
            "\n{total_matches} matching lines in {} files",
            results.len()
        ));
    }
    text
}
