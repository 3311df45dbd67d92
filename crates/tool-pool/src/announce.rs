//! What the model is told about the deferred tools: the announcement in the system prompt and
//! the deltas when tools come and go. Within a budget, every name; past it, one line per MCP
//! server (its tool count and what it says it is for), so nothing in a request grows with the
//! number of deferred tools.

use std::collections::BTreeMap;

use crate::mode::Activation;

/// The most characters of a server's own description in a summary line.
pub(crate) const NOTE_CHARS: usize = 160;

/// The group a deferred tool is summarised under: `mcp__server` for an MCP tool, else `built-in`.
fn group(name: &str) -> &str {
    name.strip_prefix("mcp__")
        .and_then(|rest| rest.find("__").map(|end| &name[..5 + end]))
        .unwrap_or("built-in")
}

/// Tool counts per group, sorted by group.
fn counts<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut counts = BTreeMap::new();
    for name in names {
        *counts.entry(group(name)).or_insert(0) += 1;
    }
    counts
}

/// What a search that found nothing can still say: each group of deferred tools with its count,
/// so the model can list one server's tools with `mcp__SERVER`. `None` when nothing is deferred.
pub(crate) fn groups_line(names: &[String]) -> Option<String> {
    let counts = counts(names.iter().map(String::as_str));
    (!counts.is_empty()).then(|| {
        let groups: Vec<String> = counts
            .iter()
            .map(|(group, count)| format!("{group} ({count})"))
            .collect();
        format!("The deferred tools, by server: {}.", groups.join(", "))
    })
}

/// `text` cut to [`NOTE_CHARS`] characters on one line.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= NOTE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(NOTE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The system prompt's announcement of `names` (sorted), every name when they fit in `budget`
/// bytes, else a line per group with `notes` (a server's instructions or description).
pub(crate) fn announcement(
    names: &[String],
    activation: Activation,
    budget: usize,
    notes: &BTreeMap<String, String>,
) -> String {
    let how = match activation {
        Activation::Proxy => "find them with tool_search, then call them through execute_tool",
        Activation::Inline | Activation::Native => {
            "find them with tool_search; once found they can be called directly"
        }
    };
    let listed = names.join("\n");
    let body = if listed.len() <= budget {
        listed
    } else {
        summary(names, budget, notes)
    };
    format!(
        "<available-deferred-tools>\nThese tools exist but are not loaded; {how}.\n{body}\n</available-deferred-tools>"
    )
}

/// One line per group, as many as fit in `budget` bytes.
fn summary(names: &[String], budget: usize, notes: &BTreeMap<String, String>) -> String {
    let counts = counts(names.iter().map(String::as_str));
    let mut text = format!(
        "There are {} of them, too many to list here: search them with tool_search (words \
         describing the task, or mcp__SERVER for every tool of one server).",
        names.len()
    );
    let mut left = counts.len();
    for (group, count) in &counts {
        let mut line = format!(
            "\n- {group}: {count} tool{}",
            if *count == 1 { "" } else { "s" }
        );
        if let Some(note) = group
            .strip_prefix("mcp__")
            .and_then(|server| notes.get(server))
        {
            line.push_str(&format!(". {}", one_line(note)));
        }
        if text.len() + line.len() > budget {
            text.push_str(&format!("\n- … and {left} more groups"));
            break;
        }
        text.push_str(&line);
        left -= 1;
    }
    text
}

/// The delta message for tools that came and went, by name when they fit in `budget` bytes,
/// else by group with counts. `None` when nothing changed.
pub(crate) fn delta(added: &[&str], removed: &[&str], budget: usize) -> Option<String> {
    if added.is_empty() && removed.is_empty() {
        return None;
    }
    let describe = |names: &[&str]| {
        let listed = names.join(", ");
        if listed.len() <= budget {
            return listed;
        }
        counts(names.iter().copied())
            .into_iter()
            .map(|(group, count)| format!("{group} ({count} tools)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = String::from("<deferred-tools-delta>\n");
    if !added.is_empty() {
        text.push_str(&format!("Now available (deferred): {}\n", describe(added)));
    }
    if !removed.is_empty() {
        text.push_str(&format!("No longer available: {}\n", describe(removed)));
    }
    text.push_str("</deferred-tools-delta>");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_group_by_server() {
        assert_eq!(group("mcp__github__create_issue"), "mcp__github");
        assert_eq!(group("mcp__a__b__c"), "mcp__a");
        assert_eq!(group("web_fetch"), "built-in");
        assert_eq!(group("mcp__odd"), "built-in");
    }

    #[test]
    fn a_long_note_is_cut_on_one_line() {
        let note = format!("Tools for\n\nGitHub. {}", "x".repeat(300));
        let cut = one_line(&note);
        assert!(cut.starts_with("Tools for GitHub. x"));
        assert_eq!(cut.chars().count(), NOTE_CHARS);
        assert!(cut.ends_with('…'));
    }
}
