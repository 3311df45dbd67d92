//! Text helpers shared by the tools: the output cap, binary and image detection, quote
//! normalisation, line endings.

use tool_core::{ToolError, truncate_middle};

/// Every tool's output stays within this many characters; longer output keeps its head and tail
/// with `[... N chars truncated ...]` between.
pub const MAX_OUTPUT_CHARS: usize = 50_000;

/// Room left for the truncation marker, so a capped output is within [`MAX_OUTPUT_CHARS`].
const MARKER_ROOM: usize = 64;

/// Caps `text` at [`MAX_OUTPUT_CHARS`], keeping head and tail.
pub(crate) fn cap_output(text: &str) -> String {
    if text.chars().count() <= MAX_OUTPUT_CHARS {
        return text.to_owned();
    }
    truncate_middle(text, MAX_OUTPUT_CHARS - MARKER_ROOM)
}

/// Whether the bytes look like a binary file: a NUL byte in the first 8 KiB, or mostly control
/// characters. Text in any ASCII-compatible encoding passes.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        return true;
    }
    if head.is_empty() {
        return false;
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x1b))
        .count();
    control * 10 > head.len()
}

/// The MIME type of an image the model can be shown, recognised by its magic bytes.
pub(crate) fn image_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Maps curly quotes to their straight forms, one character for one, so that positions in the
/// normalised text are positions in the original.
pub(crate) fn straighten(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
        other => other,
    }
}

/// Gives straight quotes in `text` the curly style: opening after whitespace, an opening bracket
/// or the start, closing otherwise (so apostrophes inside words become `’`).
pub(crate) fn curl_quotes(text: &str, single: bool, double: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev: Option<char> = None;
    for c in text.chars() {
        let opening = prev.is_none_or(|p| p.is_whitespace() || "([{<—–-".contains(p));
        let mapped = match c {
            '\'' if single => {
                if opening {
                    '\u{2018}'
                } else {
                    '\u{2019}'
                }
            }
            '"' if double => {
                if opening {
                    '\u{201C}'
                } else {
                    '\u{201D}'
                }
            }
            other => other,
        };
        out.push(mapped);
        prev = Some(c);
    }
    out
}

/// Whether the text's line endings are all CRLF (at least one, and no bare LF).
pub(crate) fn is_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf == text.matches('\n').count()
}

/// Decodes a file's bytes as UTF-8 or says what to do instead.
pub(crate) fn decode_utf8(bytes: Vec<u8>, shown: &str) -> Result<String, ToolError> {
    String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "{shown} is not valid UTF-8, so it cannot be edited by text replacement; rewrite it whole with write_file if that is what you mean, or leave it alone"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail_within_the_limit() {
        let text = "h".repeat(40_000) + &"t".repeat(40_000);
        let capped = cap_output(&text);
        assert!(capped.chars().count() <= MAX_OUTPUT_CHARS);
        assert!(capped.starts_with("hhh") && capped.ends_with("ttt"));
        assert!(capped.contains("chars truncated ...]"));
        assert_eq!(cap_output("short"), "short");
    }

    #[test]
    fn binary_detection() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary("héllo\r\n\tworld".as_bytes()));
        assert!(!looks_binary(&[0xff, 0xfe, b'a', b'b']));
        assert!(looks_binary(&[1, 2, 3, 4, 5, 6]));
    }

    #[test]
    fn quotes_round_trip() {
        assert_eq!(straighten('\u{2019}'), '\'');
        assert_eq!(
            curl_quotes("say \"it's\" now", true, true),
            "say \u{201C}it\u{2019}s\u{201D} now"
        );
    }

    #[test]
    fn crlf_detection() {
        assert!(is_crlf("a\r\nb\r\n"));
        assert!(!is_crlf("a\r\nb\n"));
        assert!(!is_crlf("ab"));
    }
}
