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
//! 7. an allow rule matches, or a rule granted for now ([`Permissions::grant`]): allowed;
//! 8. the tool's own check allows: allowed;
//! 9. accept-edits mode and the call edits a file (it names a path and is not read-only): allowed;
//! 10. otherwise ask: `dont_ask` mode denies, an interactive front end prompts, a non-interactive
//!     run denies with the reason.
//!
//! So deny beats ask, and ask beats allow, whatever order the rules were written in.

use std::fmt;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::erased::{AnyTool, PreparedCall};
use crate::mode::PermissionMode;
use crate::rule::{PermissionRule, PermissionRules};
use crate::spec::ToolSpec;
use crate::tool::PermissionCheck;

/// Where an "always allow" answer should be remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    /// For the rest of this session.
    Session,
    /// For this project, from now on (the front end keeps it on the user's side).
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

/// The permission stage: rules (fixed and learned this session), allow rules granted for now,
/// and an optional prompter.
pub struct Permissions {
    rules: RwLock<PermissionRules>,
    /// Allow rules that hold until [`Permissions::revoke_grants`]; kept apart from `rules` so
    /// revoking them can never take away a rule the user set or learned.
    granted: RwLock<Vec<PermissionRule>>,
    prompter: Option<Arc<dyn Prompter>>,
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permissions")
            .field("rules", &self.rules())
            .field("granted", &self.grants())
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
            granted: RwLock::new(Vec::new()),
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

    /// Allows calls these rules match until [`Permissions::revoke_grants`], as a skill's
    /// `allowed-tools` do while the skill is in use. A grant is an allow rule and nothing more:
    /// deny and ask rules, the tool's own denial and plan mode still come first.
    pub fn grant(&self, rules: impl IntoIterator<Item = PermissionRule>) {
        let mut granted = self.granted.write().unwrap_or_else(|e| e.into_inner());
        for rule in rules {
            if !granted.contains(&rule) {
                granted.push(rule);
            }
        }
    }

    /// The rules granted for now, in the order they were granted.
    pub fn grants(&self) -> Vec<PermissionRule> {
        self.granted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Ends every grant; the rules the user set or learned stay.
    pub fn revoke_grants(&self) {
        self.granted
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Decides whether a (validated) call of `tool` with `input` may run.
    pub async fn decide(
        &self,
        tool: &AnyTool,
        input: &Value,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        match tool.prepare(input.clone()) {
            Ok(call) => self.decide_with_hook(tool.spec(), &call, ctx, false).await,
            Err(err) => PermissionDecision::Deny {
                source: DecisionSource::Tool,
                reason: err.to_string(),
            },
        }
    }

    /// Decides whether a prepared call of the tool `spec` describes may run, when a pre-tool hook
    /// may already have allowed it: a hook's
    /// allow skips the prompt and the mode, but deny rules and the tool's own denial still apply.
    pub async fn decide_with_hook(
        &self,
        spec: &ToolSpec,
        call: &PreparedCall,
        ctx: &ToolContext,
        hook_allowed: bool,
    ) -> PermissionDecision {
        let name = &spec.name;
        let mode = ctx.session().mode();
        let [deny, ask, allow] = self.matching_rules(spec, call, ctx);
        if let Some(rule) = deny {
            return PermissionDecision::Deny {
                source: DecisionSource::Rule,
                reason: format!(
                    "permission to use {name} was denied by the rule `{rule}`; do not retry this call, find another way or ask the user"
                ),
            };
        }
        let check = call.check_permissions(ctx).await;
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
        let reason = match ask {
            Some(rule) => format!("the rule `{rule}` asks before {name} runs"),
            None => {
                if let Some(decision) = settled_without_asking(name, call, mode, allow, &check) {
                    return decision;
                }
                match check {
                    PermissionCheck::Ask { reason } => reason,
                    _ => format!("{name} needs the user's approval"),
                }
            }
        };
        self.ask(spec, call, ctx, mode, reason).await
    }

    /// The first deny, ask and allow rule (a granted one counting as allow) that matches the call.
    fn matching_rules(
        &self,
        spec: &ToolSpec,
        call: &PreparedCall,
        ctx: &ToolContext,
    ) -> [Option<PermissionRule>; 3] {
        let cwd = ctx.session().cwd().to_path_buf();
        let subject = call.info().permission_subject();
        let rules = self.rules.read().unwrap_or_else(|e| e.into_inner());
        let find = |list: &[PermissionRule]| {
            list.iter()
                .find(|r| r.matches_subject(spec, subject.as_deref(), &cwd))
                .cloned()
        };
        let allow = find(&rules.allow).or_else(|| {
            let granted = self.granted.read().unwrap_or_else(|e| e.into_inner());
            find(&granted)
        });
        [find(&rules.deny), find(&rules.ask), allow]
    }

    async fn ask(
        &self,
        spec: &ToolSpec,
        call: &PreparedCall,
        ctx: &ToolContext,
        mode: PermissionMode,
        reason: String,
    ) -> PermissionDecision {
        let name = &spec.name;
        let suggested_rule = match call.info().permission_subject() {
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
            input: call.input().clone(),
            reason,
            activity: call.info().activity().map(str::to_owned),
            suggested_rule,
        };
        let answer = prompter.ask(&request).await;
        self.answered(name, answer)
    }

    /// The decision a prompt's answer makes; "always" also adds its rule for the session.
    fn answered(&self, name: &str, answer: PromptAnswer) -> PermissionDecision {
        match answer {
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

/// Steps 5 to 9 of the order: the mode, allow rules and the tool's own allow, when no ask rule
/// matched. `None` means the call must be asked.
fn settled_without_asking(
    name: &str,
    call: &PreparedCall,
    mode: PermissionMode,
    allow: Option<PermissionRule>,
    check: &PermissionCheck,
) -> Option<PermissionDecision> {
    if mode == PermissionMode::Plan && !call.info().is_read_only() {
        return Some(PermissionDecision::Deny {
            source: DecisionSource::Mode,
            reason: format!(
                "the session is in plan mode, which allows read-only calls only; {name} would change something. Finish the plan and ask the user to approve it (exit_plan_mode) first"
            ),
        });
    }
    let source = if mode == PermissionMode::Bypass {
        DecisionSource::Mode
    } else if allow.is_some() {
        DecisionSource::Rule
    } else if *check == PermissionCheck::Allow {
        DecisionSource::Tool
    } else if mode == PermissionMode::AcceptEdits
        && call.info().path().is_some()
        && !call.info().is_read_only()
    {
        DecisionSource::Mode
    } else {
        return None;
    };
    Some(PermissionDecision::Allow { source })
}
