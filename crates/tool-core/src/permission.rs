//! Permission rules, modes, and the decision for one call.
//!
//! The order of a decision, first match wins:
//!
//! 1. a deny rule matches: denied;
//! 2. the tool's own check denies: denied;
//! 3. a pre-tool hook allowed the call: allowed;
//! 4. an ask rule matches: ask (an explicit ask rule outranks the mode and allow rules);
//! 5. plan mode and the call is not read-only: denied;
//! 6. bypass mode: allowed;
//! 7. an allow rule matches: allowed;
//! 8. the tool's own check allows: allowed;
//! 9. accept-edits mode and the call edits a file (it names a path and is not read-only): allowed;
//! 10. otherwise ask: `dont_ask` mode denies, an interactive front end prompts, a non-interactive
//!     run denies with the reason.
//!
//! So deny beats ask, and ask beats allow, whatever order the rules were written in.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use globset::GlobBuilder;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::CoreError;
use crate::tool::{PermissionCheck, Tool};

/// The session's permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Rules apply; anything not allowed is asked.
    #[default]
    Default,
    /// File edits are allowed without asking; everything else as in default.
    AcceptEdits,
    /// Read-only: any call that is not read-only is denied.
    Plan,
    /// Everything not denied by a rule (or by the tool itself) is allowed.
    Bypass,
    /// Never ask: anything not allowed is denied.
    DontAsk,
}

impl PermissionMode {
    /// Every mode, in the order they are documented.
    pub const ALL: [Self; 5] = [
        Self::Default,
        Self::AcceptEdits,
        Self::Plan,
        Self::Bypass,
        Self::DontAsk,
    ];

    /// The mode's name as written in settings and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept_edits",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
            Self::DontAsk => "dont_ask",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == wanted)
            .ok_or_else(|| CoreError::InvalidMode { mode: s.to_owned() })
    }
}

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

    /// Whether the rule applies to this call.
    pub fn matches(&self, tool: &dyn Tool, input: &Value, cwd: &Path) -> bool {
        let spec = tool.spec();
        if !self.covers_tool(&spec.name, &spec.aliases) {
            return false;
        }
        match &self.content {
            None => true,
            Some(pattern) => tool
                .permission_subject(input)
                .is_some_and(|subject| content_matches(pattern, &subject, cwd)),
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

/// Where an "always allow" answer should be remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    /// For the rest of this session.
    Session,
    /// In the project's settings (the front end persists it).
    Project,
}

/// What the front end is asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRequest {
    /// The call's id.
    pub tool_use_id: String,
    /// The tool's name.
    pub tool: String,
    /// The (validated) input.
    pub input: Value,
    /// Why approval is needed.
    pub reason: String,
    /// The tool's activity line, if any.
    pub activity: Option<String>,
    /// A rule that would allow calls like this one, offered for "always allow".
    pub suggested_rule: PermissionRule,
}

/// The user's answer to a permission prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptAnswer {
    /// Run this call.
    AllowOnce,
    /// Run this call and allow calls matching `rule` from now on.
    AllowAlways {
        /// The rule to add to the allow list.
        rule: PermissionRule,
        /// Where to remember it.
        scope: RuleScope,
    },
    /// Do not run it; the optional text is passed to the model.
    Deny {
        /// What the user said, if anything.
        feedback: Option<String>,
    },
}

/// An interactive front end that can ask the user.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Asks the user whether to run a call.
    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer;
}

/// What decided a call's permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    /// A rule in the deny, ask or allow list.
    Rule,
    /// The tool's own check.
    Tool,
    /// A pre-tool hook.
    Hook,
    /// The permission mode.
    Mode,
    /// The user, at a prompt.
    User,
    /// A non-interactive run, which cannot ask.
    NonInteractive,
}

/// The outcome of the permission stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Run the call.
    Allow {
        /// What decided.
        source: DecisionSource,
    },
    /// Do not run it.
    Deny {
        /// What decided.
        source: DecisionSource,
        /// The message for the model.
        reason: String,
    },
}

/// The permission stage: rules (fixed and learned this session) and an optional prompter.
pub struct Permissions {
    rules: RwLock<PermissionRules>,
    prompter: Option<Arc<dyn Prompter>>,
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permissions")
            .field("rules", &self.rules())
            .field("interactive", &self.prompter.is_some())
            .finish()
    }
}

impl Default for Permissions {
    fn default() -> Self {
        Self::new(PermissionRules::default())
    }
}

impl Permissions {
    /// Non-interactive permissions with these rules: anything that would be asked is denied.
    pub fn new(rules: PermissionRules) -> Self {
        Self {
            rules: RwLock::new(rules),
            prompter: None,
        }
    }

    /// Asks the user through `prompter` when a call needs approval.
    #[must_use]
    pub fn with_prompter(mut self, prompter: Arc<dyn Prompter>) -> Self {
        self.prompter = Some(prompter);
        self
    }

    /// A copy of the current rules, including those learned this session.
    pub fn rules(&self) -> PermissionRules {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds an allow rule for the rest of the session.
    pub fn allow(&self, rule: PermissionRule) {
        let mut rules = self.rules.write().unwrap_or_else(|e| e.into_inner());
        if !rules.allow.contains(&rule) {
            rules.allow.push(rule);
        }
    }

    /// Decides whether a (validated) call may run.
    pub async fn decide(
        &self,
        tool: &dyn Tool,
        input: &Value,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        self.decide_with_hook(tool, input, ctx, false).await
    }

    /// Decides whether a call may run, when a pre-tool hook may already have allowed it: a hook's
    /// allow skips the prompt and the mode, but deny rules and the tool's own denial still apply.
    pub async fn decide_with_hook(
        &self,
        tool: &dyn Tool,
        input: &Value,
        ctx: &ToolContext,
        hook_allowed: bool,
    ) -> PermissionDecision {
        let name = &tool.spec().name;
        let cwd = ctx.session().cwd().to_path_buf();
        let mode = ctx.session().mode();
        let (deny, ask, allow) = {
            let rules = self.rules.read().unwrap_or_else(|e| e.into_inner());
            let find = |list: &[PermissionRule]| {
                list.iter().find(|r| r.matches(tool, input, &cwd)).cloned()
            };
            (find(&rules.deny), find(&rules.ask), find(&rules.allow))
        };
        if let Some(rule) = deny {
            return PermissionDecision::Deny {
                source: DecisionSource::Rule,
                reason: format!(
                    "permission to use {name} was denied by the rule `{rule}`; do not retry this call, find another way or ask the user"
                ),
            };
        }
        let check = tool.check_permissions(input, ctx).await;
        if let PermissionCheck::Deny { reason } = &check {
            return PermissionDecision::Deny {
                source: DecisionSource::Tool,
                reason: reason.clone(),
            };
        }
        if hook_allowed {
            return PermissionDecision::Allow {
                source: DecisionSource::Hook,
            };
        }
        let ask_reason = match (&ask, &check) {
            (Some(rule), _) => Some(format!("the rule `{rule}` asks before {name} runs")),
            _ => None,
        };
        if ask_reason.is_none() {
            if mode == PermissionMode::Plan && !tool.is_read_only(input) {
                return PermissionDecision::Deny {
                    source: DecisionSource::Mode,
                    reason: format!(
                        "the session is in plan mode, which allows read-only calls only; {name} would change something. Finish the plan and ask the user to approve it (exit_plan_mode) first"
                    ),
                };
            }
            if mode == PermissionMode::Bypass {
                return PermissionDecision::Allow {
                    source: DecisionSource::Mode,
                };
            }
            if allow.is_some() {
                return PermissionDecision::Allow {
                    source: DecisionSource::Rule,
                };
            }
            if check == PermissionCheck::Allow {
                return PermissionDecision::Allow {
                    source: DecisionSource::Tool,
                };
            }
            if mode == PermissionMode::AcceptEdits
                && tool.path(input).is_some()
                && !tool.is_read_only(input)
            {
                return PermissionDecision::Allow {
                    source: DecisionSource::Mode,
                };
            }
        }
        let reason = ask_reason.unwrap_or_else(|| match check {
            PermissionCheck::Ask { reason } => reason,
            _ => format!("{name} needs the user's approval"),
        });
        self.ask(tool, input, ctx, mode, reason).await
    }

    async fn ask(
        &self,
        tool: &dyn Tool,
        input: &Value,
        ctx: &ToolContext,
        mode: PermissionMode,
        reason: String,
    ) -> PermissionDecision {
        let name = &tool.spec().name;
        let suggested_rule = match tool.permission_subject(input) {
            Some(subject) => PermissionRule::with_content(name.clone(), subject),
            None => PermissionRule::tool(name.clone()),
        };
        if mode == PermissionMode::DontAsk {
            return PermissionDecision::Deny {
                source: DecisionSource::Mode,
                reason: format!(
                    "{reason}, and the session's permission mode is dont_ask, so it was denied without asking; only calls allowed by a rule such as `{suggested_rule}` can run"
                ),
            };
        }
        let Some(prompter) = &self.prompter else {
            return PermissionDecision::Deny {
                source: DecisionSource::NonInteractive,
                reason: format!(
                    "{reason}, and this run is non-interactive, so it was denied; the user can allow it with a rule such as `{suggested_rule}`"
                ),
            };
        };
        let request = PermissionRequest {
            tool_use_id: ctx.tool_use_id().to_owned(),
            tool: name.clone(),
            input: input.clone(),
            reason,
            activity: tool.activity(input),
            suggested_rule,
        };
        match prompter.ask(&request).await {
            PromptAnswer::AllowOnce => PermissionDecision::Allow {
                source: DecisionSource::User,
            },
            PromptAnswer::AllowAlways { rule, .. } => {
                self.allow(rule);
                PermissionDecision::Allow {
                    source: DecisionSource::User,
                }
            }
            PromptAnswer::Deny { feedback } => PermissionDecision::Deny {
                source: DecisionSource::User,
                reason: match feedback {
                    Some(text) => format!("the user denied this {name} call and said: {text}"),
                    None => format!(
                        "the user denied this {name} call; do not retry it, ask the user what to do instead"
                    ),
                },
            },
        }
    }
}
