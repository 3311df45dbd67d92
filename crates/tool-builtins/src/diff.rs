//! Unified diffs with line numbers, as edit_file shows them to the model.

use std::fmt::Write;

use similar::{ChangeTag, TextDiff};

/// A unified diff of `old` → `new` with three lines of context. Each line carries its line
/// number (the old number for removed lines, the new number for added and context lines), so
/// the model can go straight to read_file with an offset.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    let diff = TextDiff::from_lines(old.as_str(), new.as_str());
    let mut out = format!("--- {path}\n+++ {path}\n");
    for group in diff.grouped_ops(3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let old_len = last.old_range().end - old_start;
        let new_start = first.new_range().start;
        let new_len = last.new_range().end - new_start;
        let _ = writeln!(
            out,
            "@@ -{},{old_len} +{},{new_len} @@",
            old_start + 1,
            new_start + 1
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let (sign, number) = match change.tag() {
                    ChangeTag::Delete => ('-', change.old_index()),
                    ChangeTag::Insert => ('+', change.new_index()),
                    ChangeTag::Equal => (' ', change.new_index()),
                };
                let number = number.map_or(0, |n| n + 1);
                let line = change.value();
                let line = line.strip_suffix('\n').unwrap_or(line);
                let _ = writeln!(out, "{sign}{number:>5} | {line}");
                if change.missing_newline() {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_line_numbers() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nb\nC\nd\n";
        let diff = unified_diff("x.txt", old, new);
        assert_eq!(
            diff,
            "--- x.txt\n+++ x.txt\n@@ -1,4 +1,4 @@\n     1 | a\n     2 | b\n-    3 | c\n+    3 | C\n     4 | d\n"
        );
    }
}
