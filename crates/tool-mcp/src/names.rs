//! Tool names: `mcp__{server}__{tool}`, normalised to the API's `^[a-zA-Z0-9_-]{1,64}$`.

use std::collections::BTreeSet;

use tool_core::is_valid_tool_name;

/// The longest name the API accepts.
const MAX_NAME: usize = 64;

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_` (an empty name becomes `_`).
fn normalise_part(part: &str) -> String {
    let out: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".to_owned() } else { out }
}

/// The tool-core name of `tool` on the server whose normalised prefix is `server_part`, unique
/// among `taken`: `mcp__{server}__{tool}`, cut to 64 characters, with `_2`, `_3`, ... appended
/// (replacing the end of a long name) until it is free. Callers pass tools in a fixed order so
/// the outcome is deterministic.
pub(crate) fn tool_name(server_part: &str, tool: &str, taken: &BTreeSet<String>) -> String {
    let base: String = format!("mcp__{server_part}__{}", normalise_part(tool))
        .chars()
        .take(MAX_NAME)
        .collect();
    if !taken.contains(&base) {
        return base;
    }
    (2u32..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = MAX_NAME.saturating_sub(suffix.len()).min(base.len());
            format!("{}{suffix}", &base[..keep])
        })
        .find(|candidate| !taken.contains(candidate) && is_valid_tool_name(candidate))
        .unwrap_or(base)
}

/// Normalised server prefixes for the configured server names (given in name order), with
/// collisions (`a.b` and `a_b`) resolved by suffixing the later one.
pub(crate) fn server_parts<'a>(
    names: impl IntoIterator<Item = &'a String>,
) -> Vec<(String, String)> {
    let mut taken = BTreeSet::new();
    let mut out = Vec::new();
    for name in names {
        let base = normalise_part(name);
        let mut part = base.clone();
        let mut n = 2;
        while taken.contains(&part) {
            part = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(part.clone());
        out.push((name.clone(), part));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_unique() {
        let mut taken = BTreeSet::new();
        let a = tool_name("srv", "get.thing", &taken);
        assert_eq!(a, "mcp__srv__get_thing");
        taken.insert(a);
        let b = tool_name("srv", "get thing", &taken);
        assert_eq!(b, "mcp__srv__get_thing_2");
        let long = tool_name("srv", &"x".repeat(100), &BTreeSet::new());
        assert_eq!(long.len(), 64);
        taken.insert(long.clone());
        let long2 = tool_name("srv", &"x".repeat(101), &taken);
        assert_eq!(long2.len(), 64);
        assert!(long2.ends_with("_2"));
        assert!(is_valid_tool_name(&long2));
    }

    #[test]
    fn server_prefixes_do_not_collide() {
        let names = ["a.b".to_owned(), "a_b".to_owned(), "c".to_owned()];
        let parts = server_parts(&names);
        assert_eq!(parts[0].1, "a_b");
        assert_eq!(parts[1].1, "a_b_2");
        assert_eq!(parts[2].1, "c");
    }
}
