//! Which of the agent's environment variables a command sees: never a variable the process
//! withholds from every child (the provider's API key, see [`tool_core::child_env`]), and not
//! the ones whose names look like secrets unless the configuration passes them.

use serde::{Deserialize, Serialize};

/// Name patterns of variables removed from commands' environment by default.
pub(crate) const SECRET_PATTERNS: &[&str] = &["*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*"];

/// Which variables commands see (`shellEnvironment` in the agent's settings). Patterns match
/// names case-insensitively, with `*` for any run of characters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellEnvironment {
    /// Variables passed although their names look like secrets (`["GITHUB_TOKEN"]`).
    pub include: Vec<String>,
    /// More variables to remove (`["AWS_*"]`).
    pub exclude: Vec<String>,
}

impl ShellEnvironment {
    /// Whether a command sees the variable `name`.
    pub fn passes(&self, name: &str) -> bool {
        if tool_core::child_env::is_withheld(name) {
            return false;
        }
        let any = |patterns: &[&str]| patterns.iter().any(|p| name_matches(p, name));
        let exclude: Vec<&str> = self.exclude.iter().map(String::as_str).collect();
        let include: Vec<&str> = self.include.iter().map(String::as_str).collect();
        !any(&exclude) && (!any(SECRET_PATTERNS) || any(&include))
    }

    /// Removes from `process` every variable of this process's environment it should not see.
    pub(crate) fn apply(&self, process: &mut tokio::process::Command) {
        for (name, _) in std::env::vars_os() {
            let keep = name.to_str().is_some_and(|name| self.passes(name));
            if !keep {
                process.env_remove(&name);
            }
        }
    }
}

/// `*` matches any run of characters; the rest matches itself, ignoring case.
fn name_matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.to_ascii_uppercase();
    let name = name.to_ascii_uppercase();
    let parts: Vec<&str> = pattern.split('*').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return false;
    };
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_removed_unless_included() {
        let default = ShellEnvironment::default();
        for name in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "db_password",
            "AWS_SECRET_ACCESS_KEY",
            "KEY",
        ] {
            assert!(!default.passes(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "CARGO_HOME"] {
            assert!(default.passes(name), "{name}");
        }
        let configured = ShellEnvironment {
            include: vec!["GITHUB_TOKEN".into()],
            exclude: vec!["AWS_*".into()],
        };
        assert!(configured.passes("GITHUB_TOKEN"));
        assert!(!configured.passes("AWS_REGION"));
        assert!(!configured.passes("NPM_TOKEN"));
    }

    #[test]
    fn patterns_match_whole_names() {
        assert!(name_matches("*KEY*", "MY_KEY_FILE"));
        assert!(name_matches("AWS_*", "aws_region"));
        assert!(!name_matches("AWS_*", "MY_AWS_REGION"));
        assert!(name_matches("A*B*C", "AxxBxxC"));
        assert!(!name_matches("A*B*C", "AxxCxxB"));
        assert!(name_matches("PATH", "path"));
    }
}
