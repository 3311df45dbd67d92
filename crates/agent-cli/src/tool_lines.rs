//! The lines a tool call leaves on the terminal: its start and progress, and its result (an
//! edit's diff, a failure's reason, a one-line summary of anything else).

use tool_core::ExecutionEvent;

/// Prints execution events as status lines on standard error.
pub fn print_event(event: &ExecutionEvent) {
    match event {
        ExecutionEvent::Started { tool, activity, .. } => {
            let text = activity
                .clone()
                .unwrap_or_else(|| format!("Running {tool}"));
            eprintln!("⏺ {text}");
        }
        ExecutionEvent::Progress {
            message,
            progress,
            total,
            ..
        } => match (progress, total) {
            (Some(p), Some(t)) => eprintln!("  ⎿ {message} ({p}/{t})"),
            _ => eprintln!("  ⎿ {message}"),
        },
        ExecutionEvent::Finished { .. } => {}
    }
}

/// The most lines of a failed call's reason shown, and the most characters of each.
const FAILURE_LINES: usize = 4;
const FAILURE_LINE_CHARS: usize = 160;

/// A failed call as a person reads it: the reason's first lines (a schema error's fields and
/// what they should be), each cut to a line of the terminal, and how much more there was.
fn failure_lines(name: &str, text: &str) -> Vec<String> {
    let reason: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines = Vec::new();
    for (i, line) in reason.iter().take(FAILURE_LINES).enumerate() {
        let (cut, more) = tool_core::head_chars(line.trim_end(), FAILURE_LINE_CHARS);
        let cut = if more > 0 {
            format!("{cut}…")
        } else {
            cut.to_owned()
        };
        lines.push(if i == 0 {
            format!("  ⎿ {name} failed: {cut}")
        } else {
            format!("    {cut}")
        });
    }
    if lines.is_empty() {
        lines.push(format!("  ⎿ {name} failed"));
    }
    if reason.len() > FAILURE_LINES {
        lines.push(format!("    … {} more lines", reason.len() - FAILURE_LINES));
    }
    lines
}

/// Prints a finished call for the user: edits show their diff, errors their message, anything
/// else a one-line summary.
pub(crate) fn print_result(name: &str, result: &tool_core::ToolResult) {
    let text = result.text();
    if result.is_error {
        for line in failure_lines(name, &text) {
            eprintln!("{line}");
        }
    } else if name == "edit_file" || name == "write_file" {
        let colour_on = colour();
        for line in text.lines() {
            let colour = if !colour_on {
                ""
            } else if line.starts_with('+') && !line.starts_with("+++") {
                "\x1b[32m"
            } else if line.starts_with('-') && !line.starts_with("---") {
                "\x1b[31m"
            } else {
                ""
            };
            let reset = if colour.is_empty() { "" } else { "\x1b[0m" };
            eprintln!("  {colour}{line}{reset}");
        }
    } else {
        let lines = text.lines().count();
        let first: String = text
            .lines()
            .next()
            .unwrap_or("(no output)")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!(
            "  ⎿ {} ({lines} lines)",
            tool_core::head_chars(&first, 100).0
        );
    }
}

/// Whether to colour what goes to the terminal: only when both standard output and standard
/// error are terminals, `NO_COLOR` is unset or empty (<https://no-color.org>) and the terminal
/// is not a dumb one.
pub fn colour() -> bool {
    use std::io::IsTerminal as _;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_call_shows_its_reason_not_just_its_first_line() {
        let schema = "the input to read_file does not match its schema:\n- at `/path`: 42 is not of type \"string\"\n- at the input: \"limit\" is a required property\nFix these and call the tool again";
        insta::assert_snapshot!(failure_lines("read_file", schema).join("\n"), @r#"
          ⎿ read_file failed: the input to read_file does not match its schema:
            - at `/path`: 42 is not of type "string"
            - at the input: "limit" is a required property
            Fix these and call the tool again
        "#);
        let long = format!("{}\n\nb\nc\nd\ne", "a".repeat(300));
        let lines = failure_lines("shell", &long);
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[0].ends_with('…'));
        assert_eq!(lines[4], "    … 1 more lines");
        assert_eq!(failure_lines("grep", ""), ["  ⎿ grep failed"]);
    }
}
