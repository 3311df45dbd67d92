//! Permission rules: their syntax, and what a rule matches.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use globset::GlobBuilder;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::erased::AnyTool;
use crate::error::CoreError;
use crate::spec::ToolSpec;

/// One permission rule: a tool (or a whole MCP server), optionally narrowed by a content pattern.
///
/// Syntax: `read_file` (every call), `shell(git status:*)` (commands starting with `git status`),
/// `read_file(src/**)` (paths matching a glob, relative to the working directory),
/// `mcp__github` (every tool of the `github` server), `mcp__github__create_issue`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PermissionRule {
    tool: String,
    content: Option<String>,
}

impl PermissionRule {
    /// A rule for every call of a tool.
    pub fn tool(name: impl Into<String>) -> Self {
        Self {
            tool: name.into(),
            content: None,
        }
    }

    /// A rule for calls of a tool whose subject matches `content`.
    pub fn with_content(name: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool: name.into(),
            content: Some(content.into()),
        }
    }

    /// The tool (or `mcp__server`) part.
    pub fn tool_name(&self) -> &str {
        &self.tool
    }

    /// The content pattern, if any.
    pub fn content(&self) -> Option<&str> {
        self.content.as_deref()
    }

    /// Whether the rule names a whole MCP server (`mcp__server` or `mcp__server__*`).
    fn server_prefix(&self) -> Option<String> {
        let rest = self.tool.strip_prefix("mcp__")?;
        let server = rest.strip_suffix("__*").unwrap_or(rest);
        (!server.is_empty() && !server.contains("__")).then(|| format!("mcp__{server}__"))
    }

    /// Whether the rule applies to a tool with this name and these aliases, whatever the input.
    pub fn covers_tool(&self, name: &str, aliases: &[String]) -> bool {
        if let Some(prefix) = self.server_prefix() {
            return name.starts_with(&prefix);
        }
        self.tool == name || aliases.contains(&self.tool)
    }

    /// Whether the rule applies to a call of `tool` with `input`.
    pub fn matches(&self, tool: &AnyTool, input: &Value, cwd: &Path) -> bool {
        let subject = tool
            .info(input)
            .ok()
            .and_then(|info| info.permission_subject());
        self.matches_subject(tool.spec(), subject.as_deref(), cwd)
    }

    /// Whether the rule applies to a call of the tool `spec` describes, whose permission subject
    /// (the path, or a shell tool's command) is `subject`.
    pub fn matches_subject(&self, spec: &ToolSpec, subject: Option<&str>, cwd: &Path) -> bool {
        if !self.covers_tool(&spec.name, &spec.aliases) {
            return false;
        }
        match &self.content {
            None => true,
            Some(pattern) => subject.is_some_and(|subject| content_matches(pattern, subject, cwd)),
        }
    }
}

/// Characters that chain or redirect shell commands: a prefix rule never approves a subject that
/// contains them, so `shell(git status:*)` cannot approve `git status; rm -rf ~`.
const CHAINING: &[&str] = &[";", "&", "|", "`", "$(", ">", "<", "\n", "\r"];

fn content_matches(pattern: &str, subject: &str, cwd: &Path) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*") {
        let subject = subject.trim();
        if CHAINING.iter().any(|c| subject.contains(c)) {
            return false;
        }
        return subject == prefix
            || subject
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with(char::is_whitespace));
    }
    let relative = Path::new(subject)
        .strip_prefix(cwd)
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let candidates = std::iter::once(subject.to_owned()).chain(relative);
    if pattern.contains(['*', '?', '[', '{']) {
        let Ok(glob) = GlobBuilder::new(pattern).literal_separator(true).build() else {
            return false;
        };
        let matcher = glob.compile_matcher();
        candidates.into_iter().any(|c| matcher.is_match(c))
    } else {
        candidates.into_iter().any(|c| c == pattern)
    }
}

impl fmt::Display for PermissionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            None => f.write_str(&self.tool),
            Some(content) => write!(f, "{}({content})", self.tool),
        }
    }
}

impl FromStr for PermissionRule {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let invalid = |reason: &str| CoreError::InvalidRule {
            rule: s.to_owned(),
            reason: reason.to_owned(),
        };
        let (tool, content) = match s.find('(') {
            None => (s, None),
            Some(open) => {
                let inner = s[open + 1..].strip_suffix(')').ok_or_else(|| {
                    invalid("a rule with `(` must end with `)`, as in `shell(git status:*)`")
                })?;
                if inner.trim().is_empty() {
                    return Err(invalid(
                        "the parentheses are empty; write `tool` alone to match every call",
                    ));
                }
                (&s[..open], Some(inner.to_owned()))
            }
        };
        let tool_ok = tool.strip_suffix("__*").unwrap_or(tool);
        if !crate::spec::is_valid_tool_name(tool_ok) {
            return Err(invalid(
                "the tool part must be a tool name (letters, digits, `_`, `-`) such as `read_file` or `mcp__server`",
            ));
        }
        Ok(Self {
            tool: tool.to_owned(),
            content,
        })
    }
}

impl Serialize for PermissionRule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PermissionRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Allow, ask and deny lists, as written in settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRules {
    /// Calls these match run without asking.
    #[serde(default)]
    pub allow: Vec<PermissionRule>,
    /// Calls these match are always asked.
    #[serde(default)]
    pub ask: Vec<PermissionRule>,
    /// Calls these match never run.
    #[serde(default)]
    pub deny: Vec<PermissionRule>,
}

impl PermissionRules {
    /// Parses rule strings into lists; the first invalid rule is an error.
    pub fn parse(allow: &[&str], ask: &[&str], deny: &[&str]) -> Result<Self, CoreError> {
        let parse = |list: &[&str]| {
            list.iter()
                .map(|r| r.parse())
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            allow: parse(allow)?,
            ask: parse(ask)?,
            deny: parse(deny)?,
        })
    }

    /// Adds every rule of `other`.
    pub fn extend(&mut self, other: &PermissionRules) {
        self.allow.extend(other.allow.iter().cloned());
        self.ask.extend(other.ask.iter().cloned());
        self.deny.extend(other.deny.iter().cloned());
    }

    /// Whether a deny rule removes this tool whatever its input (used to drop denied tools from
    /// the request altogether).
    pub fn denies_tool(&self, name: &str, aliases: &[String]) -> bool {
        self.deny
            .iter()
            .any(|r| r.content.is_none() && r.covers_tool(name, aliases))
    }
}
