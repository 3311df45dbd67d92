//! YAML frontmatter at the top of a markdown file: a block between two `---` lines.
//!
//! ```
//! use serde::Deserialize;
//!
//! #[derive(Debug, Deserialize)]
//! struct Meta {
//!     name: String,
//!     description: String,
//! }
//!
//! let text = "---\nname: lint\ndescription: Runs the linters.\n---\nRun `cargo clippy`.\n";
//! let (meta, body): (Meta, &str) = tool_skills::frontmatter::parse(text).unwrap();
//! assert_eq!(meta.description, "Runs the linters.");
//! assert_eq!(body, "Run `cargo clippy`.\n");
//!
//! let broken = "---\nname: lint\ndescription: [a, b]\n---\n";
//! let error = tool_skills::frontmatter::parse::<Meta>(broken).unwrap_err();
//! assert_eq!(error.line(), Some(3));
//! assert_eq!(error.to_string(), "invalid frontmatter at line 3: expected string scalar");
//! ```

use serde::de::DeserializeOwned;
use serde_saphyr::{RenderOptions, SnippetMode};

/// The line that opens and closes a frontmatter block.
const DELIMITER: &str = "---";

/// Why a file's frontmatter could not be read. Line numbers count from 1 at the top of the whole
/// file (not of the YAML block), so a caller can name the file and the line together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error("no frontmatter: the file must start with a `---` line")]
    Missing,
    /// The opening `---` has no closing `---` line after it.
    #[error("frontmatter opened on line 1 is never closed by a `---` line")]
    Unclosed,
    /// The block is not valid YAML, or does not have the fields and types the caller expects.
    #[error("invalid frontmatter{}: {message}", at_line(*line))]
    Yaml {
        /// The line in the file where the problem is, when the parser knows it.
        line: Option<u64>,
        /// What is wrong, without the location.
        message: String,
    },
}

impl FrontmatterError {
    /// The line of the file the error points at, when there is one.
    pub fn line(&self) -> Option<u64> {
        match self {
            Self::Missing | Self::Unclosed => Some(1),
            Self::Yaml { line, .. } => *line,
        }
    }
}

fn at_line(line: Option<u64>) -> String {
    line.map(|line| format!(" at line {line}"))
        .unwrap_or_default()
}

/// Reads the frontmatter at the top of `text` into a `T` and returns it with the body (everything
/// after the closing `---` line). A byte-order mark and CRLF line ends are accepted; an empty block
/// reads as an empty mapping, so a struct with required fields reports the missing field by name.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<(T, &str), FrontmatterError> {
    let (yaml, body) = split(text)?;
    let yaml = if yaml.trim().is_empty() { "{}" } else { yaml };
    match serde_saphyr::from_str::<T>(yaml) {
        Ok(value) => Ok((value, body)),
        Err(error) => Err(yaml_error(&error)),
    }
}

/// Splits `text` into the YAML between the delimiters and the body after them.
pub fn split(text: &str) -> Result<(&str, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, mut rest) = next_line(text);
    if first.trim_end() != DELIMITER {
        return Err(FrontmatterError::Missing);
    }
    let yaml_start = rest;
    while !rest.is_empty() {
        let (line, after) = next_line(rest);
        if line.trim_end() == DELIMITER {
            let yaml_len = yaml_start.len() - rest.len();
            return Ok((&yaml_start[..yaml_len], after));
        }
        rest = after;
    }
    Err(FrontmatterError::Unclosed)
}

/// The first line of `text` (without its line end) and everything after its line end.
fn next_line(text: &str) -> (&str, &str) {
    match text.split_once('\n') {
        Some((line, rest)) => (line.strip_suffix('\r').unwrap_or(line), rest),
        None => (text, ""),
    }
}

/// The parser's error with its line moved from the YAML block to the file (the block starts on the
/// file's second line) and its message without the parser's own location suffix.
fn yaml_error(error: &serde_saphyr::Error) -> FrontmatterError {
    let error = error.without_snippet();
    let line = error
        .location()
        .map(|location| location.line())
        .filter(|line| *line > 0)
        .map(|line| line + 1);
    let mut options = RenderOptions::default();
    options.snippets = SnippetMode::Off;
    let rendered = error.render_with_options(options);
    FrontmatterError::Yaml {
        line,
        message: strip_location(&rendered).to_owned(),
    }
}

/// Drops a trailing " at line N column M" (the parser's own, relative to the block) from a
/// message, since the error carries the file's line instead.
fn strip_location(message: &str) -> &str {
    let message = message.trim();
    match message.rfind(" at line ") {
        Some(at) if message[at..].contains("column") => message[..at].trim_end_matches(','),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Meta {
        name: String,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn error(text: &str) -> String {
        match parse::<Meta>(text) {
            Ok(meta) => panic!("expected an error, got {meta:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn reads_fields_and_returns_the_body() {
        let (meta, body) = parse::<Meta>("---\nname: a\ntags: [x, y]\n---\nbody\nmore\n").unwrap();
        assert_eq!(meta.name, "a");
        assert_eq!(meta.tags, ["x", "y"]);
        assert_eq!(body, "body\nmore\n");
    }

    #[test]
    fn accepts_crlf_a_byte_order_mark_and_no_body() {
        let (meta, body) = parse::<Meta>("\u{feff}---\r\nname: a\r\n---\r\n").unwrap();
        assert_eq!(meta.name, "a");
        assert_eq!(body, "");
        let (_, body) = parse::<Meta>("---\nname: a\n---").unwrap();
        assert_eq!(body, "");
    }

    #[test]
    fn a_dashes_line_inside_the_body_stays_in_the_body() {
        let (_, body) = parse::<Meta>("---\nname: a\n---\nintro\n---\nafter\n").unwrap();
        assert_eq!(body, "intro\n---\nafter\n");
    }

    #[test]
    fn errors_say_what_and_where() {
        insta::assert_snapshot!(
            [
                error("# no frontmatter\n"),
                error("---\nname: a\n"),
                error("---\n---\nbody\n"),
                error("---\ntags: [x]\n---\n"),
                error("---\nname: a\ntags: [x\n---\n"),
                error("---\nname: a\n  bad: indent\n---\n"),
                error("---\nname: [1, 2]\n---\n"),
            ]
            .join("\n")
        );
    }

    #[test]
    fn lines_count_from_the_top_of_the_file() {
        let broken = parse::<Meta>("---\nname: a\ntags: [x\n---\n").unwrap_err();
        assert!(broken.line().is_some_and(|line| line >= 3), "{broken:?}");
        assert_eq!(parse::<Meta>("no").unwrap_err().line(), Some(1));
    }
}
