//! Claude Code's tool names and ours, so a file written for it (a skill's `allowed-tools`, an
//! agent type's `tools`, a `Read(...)` deny rule) names the same tools here.

/// Claude Code's tool names, each with the name of our tool that does the same.
const CLAUDE_TOOL_NAMES: &[(&str, &str)] = &[
    ("Bash", "shell"),
    ("Edit", "edit_file"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("LS", "glob"),
    ("MultiEdit", "edit_file"),
    ("Read", "read_file"),
    ("TodoWrite", "todo_write"),
    ("WebFetch", "web_fetch"),
    ("Write", "write_file"),
];

/// Our name for one of Claude Code's tools (`Bash` → `shell`), or `None` for any other name.
///
/// ```
/// assert_eq!(tool_core::tool_name_from_claude("Bash"), Some("shell"));
/// assert_eq!(tool_core::tool_name_from_claude("shell"), None);
/// ```
pub fn tool_name_from_claude(name: &str) -> Option<&'static str> {
    CLAUDE_TOOL_NAMES
        .iter()
        .find(|(claude, _)| *claude == name)
        .map(|(_, ours)| *ours)
}
