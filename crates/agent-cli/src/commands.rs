//! Slash commands of the interactive mode: what each line starting with `/` asks for, and the
//! reports they print (`/context`, `/cost`, `/tools`, `/mcp`, `/permissions`).

use std::fmt::Write as _;

use tool_core::{PermissionMode, PermissionRule, PermissionRules};

use crate::agent::Agent;
use crate::usage::tokens;

/// One slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// `/help`: the commands.
    Help,
    /// `/clear`: start the conversation afresh.
    Clear,
    /// `/compact [what to keep]`: summarise the conversation now.
    Compact(Option<String>),
    /// `/context`: what the context holds.
    Context,
    /// `/cost`: the session's usage and cost.
    Cost,
    /// `/tools`: the tools each request carries, and the deferred ones.
    Tools,
    /// `/mcp`: the MCP servers' states.
    Mcp,
    /// `/model [NAME]`: show or change the model.
    Model(Option<String>),
    /// `/permissions`: the rules in force and where each came from.
    Permissions,
    /// `/exit` or `/quit`.
    Exit,
}

/// The commands, one per line, for `/help`.
pub const HELP: &str = "\
/help              these commands
/clear             start the conversation afresh (the session file keeps the history)
/compact [KEEP]    summarise the conversation now; KEEP says what the summary must keep
/context           what the context holds, in tokens, against the window
/cost              tokens and cost of this session
/tools             the tools each request carries, and the deferred ones
/mcp               the MCP servers and their state
/model [NAME]      show the model, or send later requests to NAME
/permissions       the permission rules in force and where each came from
/exit              leave (Ctrl-D does too)";

impl Slash {
    /// The command a line asks for: `None` when the line is not a command (it goes to the
    /// model), an error naming the commands when it is an unknown one.
    pub fn parse(line: &str) -> Option<Result<Self, String>> {
        let line = line.trim();
        let rest = line.strip_prefix('/')?;
        // A path such as `/etc/hosts is odd` is a prompt, not a command.
        let (name, argument) = match rest.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, Some(argument.trim().to_owned())),
            None => (rest, None),
        };
        if name.contains('/') {
            return None;
        }
        let argument = argument.filter(|a| !a.is_empty());
        Some(match name {
            "help" | "?" => Ok(Self::Help),
            "clear" => Ok(Self::Clear),
            "compact" => Ok(Self::Compact(argument)),
            "context" => Ok(Self::Context),
            "cost" => Ok(Self::Cost),
            "tools" => Ok(Self::Tools),
            "mcp" => Ok(Self::Mcp),
            "model" => Ok(Self::Model(argument)),
            "permissions" => Ok(Self::Permissions),
            "exit" | "quit" => Ok(Self::Exit),
            other => Err(format!(
                "unknown command /{other}; /help lists the commands (start the line with a space to send it to the model as is)"
            )),
        })
    }
}

/// `/context`: each part of the context in tokens, against the window.
pub fn context_report(agent: &Agent) -> String {
    let (system, tools) = agent.fixed_tokens();
    let instructions = agent.instructions_tokens();
    let messages = agent.messages_tokens();
    let total = agent.context_tokens();
    let window = agent.window.tokens;
    let share = |n: u64| n as f64 * 100.0 / window.max(1) as f64;
    let mut out = String::new();
    let mut row = |name: &str, n: u64| {
        let _ = writeln!(out, "  {name:<24} {:>8}  {:>5.1}%", tokens(n), share(n));
    };
    row("system prompt", system.saturating_sub(instructions));
    row("project instructions", instructions);
    row("tools", tools);
    row(&format!("messages ({})", agent.messages().len()), messages);
    let _ = writeln!(
        out,
        "  {:<24} {:>8}  {:>5.1}% of the {} window (compacts past {:.0}%)",
        "next request",
        tokens(total),
        share(total),
        tokens(window),
        agent.window.threshold * 100.0
    );
    out.push_str(
        "  (the next request's size is the provider's count for the last one plus an estimate of what came after)",
    );
    out
}

/// The line under each answer: the model, the permission mode and how much of the context
/// window the next request takes.
pub fn status_line(agent: &Agent) -> String {
    let total = agent.context_tokens();
    let window = agent.window.tokens;
    format!(
        "  {} · {} mode · context {} of {} ({:.0}%)",
        agent.model(),
        agent.runtime.session.mode(),
        tokens(total),
        tokens(window),
        total as f64 * 100.0 / window.max(1) as f64
    )
}

/// `/cost`: the session's tokens and cost.
pub fn cost_report(agent: &Agent) -> String {
    let total = agent.session_usage();
    let plural = if total.requests == 1 { "" } else { "s" };
    format!(
        "session: {} model request{plural} · {}",
        total.requests,
        total.line()
    )
}

/// `/tools`: what each request carries, and how many tools wait deferred.
pub fn tools_report(agent: &Agent) -> String {
    let pool = &agent.runtime.pool;
    let mut out = String::new();
    for tool in pool.request_tools().tools {
        let _ = writeln!(out, "  {}", tool.spec().name);
    }
    let deferred = pool.deferred_names();
    if deferred.is_empty() {
        out.push_str("  (no deferred tools)");
    } else {
        let _ = write!(
            out,
            "  + {} deferred, found through tool_search: {}",
            deferred.len(),
            deferred.join(", ")
        );
    }
    out
}

/// `/mcp`: each server and its state.
pub fn mcp_report(agent: &Agent) -> String {
    let Some(manager) = &agent.runtime.mcp else {
        return "no MCP servers configured: add them to .mcp.json or to the settings' mcpServers"
            .to_owned();
    };
    let states = manager.states();
    let lines: Vec<String> = states
        .iter()
        .map(|(name, state)| format!("  {name:<24} {}", crate::ui::mcp_state_text(state)))
        .collect();
    lines.join("\n")
}

/// Where a set of permission rules came from.
#[derive(Debug, Clone)]
pub struct RuleOrigin {
    /// Such as `user settings (~/.config/agent-cli/settings.json)`.
    pub origin: String,
    /// Its rules.
    pub rules: PermissionRules,
}

/// One of a rule set's lists.
type RuleList = fn(&PermissionRules) -> &Vec<PermissionRule>;

/// `/permissions`: the mode, then each rule in force with where it came from (rules added by
/// "always" answers during the session show as such), then the project's allow rules that wait
/// for trust.
pub fn permissions_report(
    mode: PermissionMode,
    in_force: &PermissionRules,
    origins: &[RuleOrigin],
    waiting: &[PermissionRule],
) -> String {
    let mut out = format!("mode: {mode}\n");
    let kinds: [(&str, RuleList); 3] = [
        ("deny", |r| &r.deny),
        ("ask", |r| &r.ask),
        ("allow", |r| &r.allow),
    ];
    for (kind, list) in kinds {
        for rule in list(in_force) {
            let origin = origins
                .iter()
                .find(|o| list(&o.rules).contains(rule))
                .map_or("this session (answered \"always\")", |o| o.origin.as_str());
            let _ = writeln!(out, "  {kind:<5} {:<40} {origin}", rule.to_string());
        }
    }
    if in_force.allow.is_empty() && in_force.ask.is_empty() && in_force.deny.is_empty() {
        out.push_str("  no rules: every call that is not read-only asks\n");
    }
    for rule in waiting {
        let _ = writeln!(
            out,
            "  allow {:<40} project settings, waiting for trust (`agent-cli trust`)",
            rule.to_string()
        );
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_to_commands_and_paths_stay_prompts() {
        assert_eq!(Slash::parse("hello"), None);
        assert_eq!(Slash::parse("/usr/bin/env is odd"), None);
        assert_eq!(
            Slash::parse("/compact  the API design "),
            Some(Ok(Slash::Compact(Some("the API design".into()))))
        );
        assert_eq!(Slash::parse("/compact"), Some(Ok(Slash::Compact(None))));
        assert_eq!(
            Slash::parse("/model gpt-4o"),
            Some(Ok(Slash::Model(Some("gpt-4o".into()))))
        );
        let unknown = Slash::parse("/frobnicate").unwrap().unwrap_err();
        assert!(unknown.contains("/help lists the commands"), "{unknown}");
    }

    #[test]
    fn each_rule_names_its_origin() {
        let rule = |text: &str| text.parse::<PermissionRule>().unwrap();
        let user = PermissionRules {
            deny: vec![rule("shell(rm:*)")],
            ..PermissionRules::default()
        };
        let in_force = PermissionRules {
            deny: vec![rule("shell(rm:*)")],
            allow: vec![rule("shell(cargo test:*)")],
            ask: vec![],
        };
        let report = permissions_report(
            PermissionMode::Default,
            &in_force,
            &[RuleOrigin {
                origin: "user settings".into(),
                rules: user,
            }],
            &[rule("shell(make:*)")],
        );
        insta::assert_snapshot!(report, @r#"
        mode: default
          deny  shell(rm:*)                              user settings
          allow shell(cargo test:*)                      this session (answered "always")
          allow shell(make:*)                            project settings, waiting for trust (`agent-cli trust`)
        "#);
    }
}
