//! Markdown as a terminal shows it, rendered as the answer streams: headings, emphasis, code
//! spans, links, lists, quotes, rules, tables and fenced code blocks with syntax highlighting.
//!
//! Text arrives in pieces; [`Markdown::push`] renders each line once it is complete and never
//! touches what it already returned, so the terminal only ever appends. A table is held until its
//! last row, so its columns can be aligned; a code block's lines are highlighted one by one, the
//! highlighter keeping its state across them.

use std::sync::OnceLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use unicode_width::UnicodeWidthStr as _;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const RESET: &str = "\x1b[0m";
const CODE: &str = "\x1b[36m";
const HEADING: &str = "\x1b[1;34m";

/// A streaming markdown renderer for one answer.
pub(crate) struct Markdown {
    /// Text after the last complete line.
    pending: String,
    /// Inside a fenced code block: its fence and highlighter.
    fence: Option<Fence>,
    /// The rows of a table so far.
    table: Vec<String>,
    /// The terminal's width in columns.
    width: usize,
}

struct Fence {
    /// The fence's characters (three or more backticks or tildes): the block ends at a line of
    /// at least as many.
    marker: String,
    highlighter: Option<HighlightLines<'static>>,
}

impl Markdown {
    /// A renderer for a terminal `width` columns wide.
    pub(crate) fn new(width: usize) -> Self {
        Self {
            pending: String::new(),
            fence: None,
            table: Vec::new(),
            width: width.max(20),
        }
    }

    /// Adds a piece of the answer; returns what is ready to print (complete lines).
    pub(crate) fn push(&mut self, text: &str) -> String {
        self.pending.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            self.line(line.trim_end_matches(['\n', '\r']), &mut out);
        }
        out
    }

    /// The terminal is now `width` columns wide.
    pub(crate) fn set_width(&mut self, width: usize) {
        self.width = width.max(20);
    }

    /// Whether part of a line is waiting for its end.
    pub(crate) fn mid_line(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Ends the answer (or this run of text): renders what is left, ending its line.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut out);
        }
        self.flush_table(&mut out);
        self.fence = None;
        out
    }

    fn line(&mut self, line: &str, out: &mut String) {
        if let Some(fence) = &mut self.fence {
            let trimmed = line.trim();
            if trimmed.starts_with(&fence.marker)
                && trimmed.chars().all(|c| fence.marker.starts_with(c))
            {
                self.fence = None;
                return;
            }
            out.push_str("  ");
            out.push_str(&highlight(fence.highlighter.as_mut(), line));
            out.push('\n');
            return;
        }
        if is_table_row(line) {
            self.table.push(line.to_owned());
            return;
        }
        self.flush_table(out);
        if let Some((marker, language)) = fence_start(line) {
            self.fence = Some(Fence {
                marker,
                highlighter: highlighter(&language),
            });
            return;
        }
        out.push_str(&block(line, self.width));
        out.push('\n');
    }

    fn flush_table(&mut self, out: &mut String) {
        if self.table.is_empty() {
            return;
        }
        let rows = std::mem::take(&mut self.table);
        match table(&rows) {
            Some(text) => out.push_str(&text),
            None => {
                for row in rows {
                    out.push_str(&inline(&row));
                    out.push('\n');
                }
            }
        }
    }
}

/// A line that opens a fenced code block: its fence and language.
fn fence_start(line: &str) -> Option<(String, String)> {
    let trimmed = line.trim_start();
    let fence_char = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let marker: String = trimmed.chars().take_while(|c| *c == fence_char).collect();
    if marker.len() < 3 {
        return None;
    }
    let language = trimmed[marker.len()..]
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_owned();
    Some((marker, language))
}

/// One line outside code blocks and tables: a heading, rule, quote, list item or paragraph line.
fn block(line: &str, width: usize) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    if let Some((level, text)) = heading(trimmed) {
        let style = if level == 1 {
            format!("{HEADING}{UNDERLINE}")
        } else {
            HEADING.to_owned()
        };
        return format!("{style}{}{RESET}", inline_plain_styles(text));
    }
    if is_rule(trimmed) {
        return format!("{DIM}{}{RESET}", "─".repeat(width.min(80)));
    }
    if let Some(rest) = trimmed.strip_prefix('>') {
        let prefix = format!("{indent}{DIM}│{RESET} {ITALIC}");
        let body = inline(rest.strip_prefix(' ').unwrap_or(rest));
        return format!("{}{RESET}", wrap(&prefix, &prefix, &body, width));
    }
    if let Some((marker, rest)) = list_item(trimmed) {
        let (marker, rest) = match (rest.strip_prefix("[ ] "), rest.strip_prefix("[x] ")) {
            (Some(rest), _) => ("☐".to_owned(), rest),
            (_, Some(rest)) => ("☑".to_owned(), rest),
            _ => (marker, rest),
        };
        let hanging = format!("{indent}{}", " ".repeat(marker.width() + 1));
        return wrap(
            &format!("{indent}{marker} "),
            &hanging,
            &inline(rest),
            width,
        );
    }
    wrap(indent, indent, &inline(trimmed), width)
}

/// `body` (styled) after `first`, broken between words so that no line is wider than `width`
/// columns; the lines after the first start with `rest` (a list item's hanging indent). A word
/// wider than a line stays whole.
fn wrap(first: &str, rest: &str, body: &str, width: usize) -> String {
    let width = width.saturating_sub(1).max(20);
    let mut out = first.to_owned();
    let mut used = visible_width(first);
    let start = visible_width(rest);
    let mut line_empty = true;
    for word in body.split(' ') {
        let wide = visible_width(word);
        if !line_empty && used + 1 + wide > width {
            out.push('\n');
            out.push_str(rest);
            used = start;
            line_empty = true;
        }
        if !line_empty {
            out.push(' ');
            used += 1;
        }
        out.push_str(word);
        used += wide;
        line_empty = false;
    }
    out
}

/// `# Title` … `###### Title`: the level and the title.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim_end()))
}

/// `---`, `***` or `___` (spaces allowed between).
fn is_rule(line: &str) -> bool {
    let marks: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| marks.chars().all(|c| c == *m))
}

/// `- item`, `* item`, `+ item`, `1. item`, `1) item`: the marker as shown and the item's text.
fn list_item(line: &str) -> Option<(String, &str)> {
    let (marker, rest) = line.split_once(' ')?;
    if matches!(marker, "-" | "*" | "+") {
        return Some(("•".to_owned(), rest.trim_start()));
    }
    let digits = marker.trim_end_matches(['.', ')']);
    (marker.len() == digits.len() + 1
        && !digits.is_empty()
        && digits.len() <= 9
        && digits.chars().all(|c| c.is_ascii_digit()))
    .then(|| (format!("{digits}."), rest.trim_start()))
}

/// A line's inline markdown as terminal styles: emphasis, strong, strikethrough, code spans and
/// links (the address after the text, when it differs).
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut link: Option<String> = None;
    let mut link_text = String::new();
    let parser = Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Text(t) => {
                if link.is_some() {
                    link_text.push_str(&t);
                }
                out.push_str(&t);
            }
            Event::Code(code) => out.push_str(&format!("{CODE}{code}\x1b[39m")),
            Event::Start(Tag::Emphasis) => out.push_str(ITALIC),
            Event::End(TagEnd::Emphasis) => out.push_str("\x1b[23m"),
            Event::Start(Tag::Strong) => out.push_str(BOLD),
            Event::End(TagEnd::Strong) => out.push_str("\x1b[22m"),
            Event::Start(Tag::Strikethrough) => out.push_str("\x1b[9m"),
            Event::End(TagEnd::Strikethrough) => out.push_str("\x1b[29m"),
            Event::Start(Tag::Link { dest_url, .. }) => {
                out.push_str(&format!("{UNDERLINE}\x1b[34m"));
                link = Some(dest_url.to_string());
                link_text.clear();
            }
            Event::End(TagEnd::Link) => {
                out.push_str("\x1b[24m\x1b[39m");
                if let Some(url) = link.take()
                    && url != link_text
                {
                    out.push_str(&format!(" {DIM}({url}){RESET}"));
                }
            }
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Html(html) | Event::InlineHtml(html) => out.push_str(&html),
            Event::TaskListMarker(done) => out.push_str(if done { "☑ " } else { "☐ " }),
            _ => {}
        }
    }
    out
}

/// A heading's text: inline markdown whose styles end without a full reset, so the heading's own
/// style holds to the end.
fn inline_plain_styles(text: &str) -> String {
    inline(text).replace(RESET, "")
}

/// Whether a line belongs to a table: it starts with `|`.
fn is_table_row(line: &str) -> bool {
    line.trim_start().starts_with('|')
}

/// A table's cells: the text between its pipes (an escaped `\|` stays in its cell).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in row.chars() {
        match c {
            '|' if !escaped => cells.push(String::new()),
            _ => {
                if let Some(cell) = cells.last_mut() {
                    cell.push(c);
                }
            }
        }
        escaped = c == '\\';
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// A table drawn with box lines and aligned columns; `None` when the rows are not a table (no
/// delimiter row second).
fn table(rows: &[String]) -> Option<String> {
    let delimiter = cells(rows.get(1)?);
    if !delimiter.iter().all(|c| {
        !c.is_empty() && c.contains('-') && c.chars().all(|ch| matches!(ch, '-' | ':' | ' '))
    }) {
        return None;
    }
    let right: Vec<bool> = delimiter
        .iter()
        .map(|c| c.ends_with(':') && !c.starts_with(':'))
        .collect();
    let body: Vec<Vec<String>> = std::iter::once(&rows[0])
        .chain(&rows[2..])
        .map(|row| cells(row).iter().map(|c| inline(c)).collect())
        .collect();
    let columns = body.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in &body {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(visible_width(cell));
        }
    }
    let rule = |left: &str, mid: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("{DIM}{left}{}{right}{RESET}\n", parts.join(mid))
    };
    let mut out = rule("┌", "┬", "┐");
    for (r, row) in body.iter().enumerate() {
        let mut line = format!("{DIM}│{RESET}");
        for (i, width) in widths.iter().enumerate() {
            let cell = row.get(i).map_or("", String::as_str);
            let pad = " ".repeat(width - visible_width(cell));
            let cell = if r == 0 {
                format!("{BOLD}{cell}{RESET}")
            } else {
                cell.to_owned()
            };
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&format!(" {pad}{cell} {DIM}│{RESET}"));
            } else {
                line.push_str(&format!(" {cell}{pad} {DIM}│{RESET}"));
            }
        }
        out.push_str(&line);
        out.push('\n');
        if r == 0 {
            out.push_str(&rule("├", "┼", "┤"));
        }
    }
    out.push_str(&rule("└", "┴", "┘"));
    Some(out)
}

/// The columns `text` takes on a terminal, its escape sequences left out.
pub(crate) fn visible_width(text: &str) -> usize {
    strip_escapes(text).width()
}

/// `text` without its CSI escape sequences (`ESC [ … letter`).
pub(crate) fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() || c == '~' {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The grammars and the colour theme, loaded once, on the first code block.
fn syntaxes() -> &'static (SyntaxSet, Theme) {
    static SYNTAXES: OnceLock<(SyntaxSet, Theme)> = OnceLock::new();
    SYNTAXES.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults();
        let theme = themes
            .themes
            .remove("base16-ocean.dark")
            .unwrap_or_default();
        (SyntaxSet::load_defaults_newlines(), theme)
    })
}

/// A highlighter for a fence's language (by name or file extension); `None` for an unknown or
/// missing one, whose lines are shown in one colour.
fn highlighter(language: &str) -> Option<HighlightLines<'static>> {
    if language.is_empty() {
        return None;
    }
    let (syntaxes, theme) = syntaxes();
    let syntax = syntaxes
        .find_syntax_by_token(language)
        .or_else(|| syntaxes.find_syntax_by_extension(language))?;
    Some(HighlightLines::new(syntax, theme))
}

/// One line of a code block, coloured.
fn highlight(highlighter: Option<&mut HighlightLines<'static>>, line: &str) -> String {
    let Some(highlighter) = highlighter else {
        return format!("{CODE}{line}{RESET}");
    };
    let with_newline = format!("{line}\n");
    match highlighter.highlight_line(&with_newline, &syntaxes().0) {
        Ok(ranges) => {
            let text = syntect::util::as_24_bit_terminal_escaped(&ranges, false);
            format!("{}{RESET}", text.trim_end_matches('\n'))
        }
        Err(_) => format!("{CODE}{line}{RESET}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendering with its escape sequences written as `{b}` (bold) and the like, so a
    /// snapshot shows the styles.
    fn shown(text: &str) -> String {
        text.replace(BOLD, "{b}")
            .replace(ITALIC, "{i}")
            .replace(DIM, "{dim}")
            .replace(HEADING, "{h}")
            .replace(UNDERLINE, "{u}")
            .replace(CODE, "{code}")
            .replace(RESET, "{/}")
            .replace("\x1b[22m", "{/b}")
            .replace("\x1b[23m", "{/i}")
            .replace("\x1b[24m\x1b[39m", "{/link}")
            .replace("\x1b[34m", "{link}")
            .replace("\x1b[39m", "{/code}")
    }

    fn render(pieces: &[&str]) -> String {
        let mut markdown = Markdown::new(40);
        let mut out = String::new();
        for piece in pieces {
            out.push_str(&markdown.push(piece));
        }
        out.push_str(&markdown.finish());
        out
    }

    #[test]
    fn headings_emphasis_lists_links_and_quotes() {
        let text = "# Plan\n\nThis is **bold**, *slanted* and `code`.\n- one\n  2. two\n- [x] done\n> quoted *words*\n---\nSee [the docs](https://example.com/docs) or <https://example.com>.\n## Next ##";
        insta::assert_snapshot!(shown(&render(&[text])), @r"
        {h}{u}Plan{/}

        This is {b}bold{/b}, {i}slanted{/i} and {code}code{/code}.
        • one
          2. two
        ☑ done
        {dim}│{/} {i}quoted {i}words{/i}{/}
        {dim}────────────────────────────────────────{/}
        See {u}{link}the docs{/link} {dim}(https://example.com/docs){/}
        or {u}{link}https://example.com{/link}.
        {h}Next{/}
        ");
    }

    #[test]
    fn a_line_is_rendered_once_it_is_complete_whatever_the_pieces() {
        let whole = render(&["Some **bold** text\nand more\n"]);
        let pieces = render(&["Some **bo", "ld** te", "xt\nand ", "more", "\n"]);
        assert_eq!(whole, pieces);
        let mut markdown = Markdown::new(40);
        assert_eq!(markdown.push("Some **bo"), "");
        assert!(markdown.mid_line());
        assert!(markdown.push("ld**\n").contains(BOLD));
    }

    #[test]
    fn long_lines_wrap_between_words_with_a_hanging_indent() {
        let mut markdown = Markdown::new(30);
        let text = "A paragraph of words that goes on **well past** the edge.\n  - an item that is long enough to wrap twice over here\n> a quote that is also long enough to wrap\n";
        insta::assert_snapshot!(strip_escapes(&markdown.push(text)), @r"
        A paragraph of words that
        goes on well past the edge.
          • an item that is long
            enough to wrap twice over
            here
        │ a quote that is also long
        │ enough to wrap
        ");
    }

    #[test]
    fn tables_are_aligned_in_boxes() {
        let text = "| Name | Size |\n|:-----|-----:|\n| `a.rs` | 12 |\n| **b** | 1234 |\nafter\n";
        insta::assert_snapshot!(strip_escapes(&render(&[text])), @r"
        ┌──────┬──────┐
        │ Name │ Size │
        ├──────┼──────┤
        │ a.rs │   12 │
        │ b    │ 1234 │
        └──────┴──────┘
        after
        ");
        // Rows without a delimiter row are not a table: shown as they are.
        assert_eq!(
            strip_escapes(&render(&["| a |\n| b |\n"])),
            "| a |\n| b |\n"
        );
    }

    #[test]
    fn code_blocks_are_highlighted_without_their_fences() {
        let out = render(&["Look:\n```rust\nfn main() {}\n```\nDone.\n"]);
        let plain = strip_escapes(&out);
        assert_eq!(plain, "Look:\n  fn main() {}\nDone.\n");
        assert!(out.contains("\x1b[38;2;"), "24-bit colours: {out:?}");
        // An unknown language is shown in one colour, and an unclosed block ends with the answer.
        let out = render(&["~~~nosuchlanguage\nx = 1"]);
        assert_eq!(shown(&out), "  {code}x = 1{/}\n");
    }

    #[test]
    fn text_that_only_looks_like_markdown_stays() {
        for line in [
            "#hashtag",
            "-not a list",
            "1.5 litres",
            "**unclosed",
            "a | b",
        ] {
            assert_eq!(
                strip_escapes(&render(&[line])),
                format!("{line}\n"),
                "{line}"
            );
        }
    }
}
