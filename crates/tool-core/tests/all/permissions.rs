//! Rules, modes, precedence, the prompter, and the fail-closed defaults.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    AnyTool, DecisionSource, Origin, PermissionCheck, PermissionDecision, PermissionMode,
    PermissionRequest, PermissionRule, PermissionRules, Permissions, PromptAnswer, Prompter,
    RuleScope, Session, Tool, ToolContext,
};

use super::support::{Bare, Fixture, run, tool};

/// A tool that overrides nothing but what it must.
fn bare(name: &str) -> Bare {
    tool(name).description("A bare tool.").bare()
}

#[tokio::test]
async fn defaults_are_fail_closed() {
    let tool = bare("bare");
    let input = json!({});
    let info = tool.info(&input);
    assert!(!info.is_read_only());
    assert!(info.is_destructive());
    assert!(!info.is_concurrency_safe());
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(
        "t",
        "bare",
        Arc::new(Session::new("s", dir.path(), dir.path())),
    );
    assert!(matches!(
        tool.check_permissions(&input, &ctx).await,
        PermissionCheck::Ask { .. }
    ));
    // Without a prompter (a non-interactive run), ask becomes a denial with the reason.
    let decision = Permissions::default()
        .decide(&AnyTool::new(tool), &input, &ctx)
        .await;
    let PermissionDecision::Deny { source, reason } = decision else {
        panic!("expected a denial, got {decision:?}");
    };
    assert_eq!(source, DecisionSource::NonInteractive);
    insta::assert_snapshot!(reason, @"bare needs the user's approval, and this run is non-interactive, so it was denied; the user can allow it with a rule such as `bare`");
}

struct Check {
    rules: PermissionRules,
    mode: PermissionMode,
}

impl Check {
    fn new(allow: &[&str], ask: &[&str], deny: &[&str]) -> Self {
        Self {
            rules: PermissionRules::parse(allow, ask, deny).unwrap(),
            mode: PermissionMode::Default,
        }
    }

    fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The decision for `tool` with `input`, as "allow", "deny" or "ask" (a prompt was shown).
    async fn decide(&self, tool: &(impl Into<AnyTool> + Clone), input: Value) -> &'static str {
        let tool: AnyTool = tool.clone().into();
        let tool = &tool;
        let dir = tempfile::tempdir().unwrap();
        let session = Arc::new(Session::new("s", dir.path(), "/work/project").with_mode(self.mode));
        let ctx = ToolContext::new("t", tool.spec().name.clone(), session);
        let prompter = Arc::new(Recorder::answering(PromptAnswer::Deny { feedback: None }));
        let permissions = Permissions::new(self.rules.clone()).with_prompter(prompter.clone());
        match permissions.decide(tool, &input, &ctx).await {
            PermissionDecision::Allow { .. } => "allow",
            PermissionDecision::Deny {
                source: DecisionSource::User,
                ..
            } => {
                assert_eq!(prompter.asked.lock().unwrap().len(), 1);
                "ask"
            }
            PermissionDecision::Deny { .. } => "deny",
        }
    }
}

/// A prompter that records requests and gives a fixed answer.
struct Recorder {
    answer: PromptAnswer,
    asked: Mutex<Vec<PermissionRequest>>,
}

impl Recorder {
    fn answering(answer: PromptAnswer) -> Self {
        Self {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl Prompter for Recorder {
    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

fn shell() -> AnyTool {
    AnyTool::new(super::support::Shell)
}

fn write() -> AnyTool {
    AnyTool::new(super::support::Write)
}

#[tokio::test]
async fn deny_beats_ask_beats_allow_in_any_order() {
    let tool = bare("bare");
    type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], &'a str);
    let cases: &[Case] = &[
        (&["bare"], &[], &[], "allow"),
        (&["bare"], &["bare"], &[], "ask"),
        (&["bare"], &["bare"], &["bare"], "deny"),
        (&[], &["bare"], &["bare"], "deny"),
        (&["bare"], &[], &["bare"], "deny"),
        (&[], &[], &[], "ask"),
    ];
    for (allow, ask, deny, want) in cases {
        let got = Check::new(allow, ask, deny).decide(&tool, json!({})).await;
        assert_eq!(got, *want, "allow={allow:?} ask={ask:?} deny={deny:?}");
    }
}

#[tokio::test]
async fn shell_prefix_rules_match_commands_but_not_chains() {
    let check = Check::new(&["shell(git status:*)"], &[], &["shell(rm:*)"]);
    let cases = [
        ("git status", "allow"),
        ("git status --short", "allow"),
        ("git statusx", "ask"),
        ("git status; rm -rf ~", "ask"),
        ("git status && curl evil", "ask"),
        ("git status | sh", "ask"),
        ("git status $(whoami)", "ask"),
        ("rm -rf build", "deny"),
        ("ls", "ask"),
    ];
    for (command, want) in cases {
        let got = check.decide(&shell(), json!({"command": command})).await;
        assert_eq!(got, want, "{command}");
    }
}

#[tokio::test]
async fn path_rules_match_globs_relative_to_the_working_directory() {
    let check = Check::new(
        &["write(src/**)"],
        &[],
        &["write(**/.env)", "write(/etc/*)"],
    );
    let cases = [
        ("/work/project/src/main.rs", "allow"),
        ("/work/project/src/deep/mod.rs", "allow"),
        ("src/lib.rs", "allow"),
        ("/work/project/tests/a.rs", "ask"),
        ("/work/project/src/.env", "deny"),
        ("/etc/passwd", "deny"),
    ];
    for (path, want) in cases {
        let got = check.decide(&write(), json!({"path": path})).await;
        assert_eq!(got, want, "{path}");
    }
}

#[tokio::test]
async fn server_rules_cover_every_tool_of_the_server() {
    let issue = tool("mcp__github__create_issue")
        .description("")
        .spec(|spec| {
            spec.with_origin(Origin::Mcp {
                server: "github".into(),
                tool: "create_issue".into(),
            })
        })
        .bare();
    let other = bare("mcp__githubber__x");
    assert_eq!(
        Check::new(&[], &[], &["mcp__github"])
            .decide(&issue, json!({}))
            .await,
        "deny"
    );
    assert_eq!(
        Check::new(&[], &[], &["mcp__github__*"])
            .decide(&issue, json!({}))
            .await,
        "deny"
    );
    assert_eq!(
        Check::new(&[], &[], &["mcp__github"])
            .decide(&other, json!({}))
            .await,
        "ask"
    );
    assert_eq!(
        Check::new(&["mcp__github__create_issue"], &[], &[])
            .decide(&issue, json!({}))
            .await,
        "allow"
    );
    let rules = PermissionRules::parse(&[], &[], &["mcp__github"]).unwrap();
    assert!(rules.denies_tool("mcp__github__create_issue", &[]));
    assert!(!rules.denies_tool("mcp__gitlab__create_issue", &[]));
}

#[tokio::test]
async fn modes_decide_what_rules_leave_open() {
    let tool = bare("bare");
    let edit = write();
    let input = json!({"path": "/work/project/a.txt"});
    let read_only = AnyTool::new(super::support::Echo);
    // `echo` allows itself; the bare tool and the writer rely on the default ask.
    let cases = [
        (PermissionMode::Default, "ask", "ask", "allow"),
        (PermissionMode::AcceptEdits, "ask", "allow", "allow"),
        (PermissionMode::Plan, "deny", "deny", "allow"),
        (PermissionMode::Bypass, "allow", "allow", "allow"),
        (PermissionMode::DontAsk, "deny", "deny", "allow"),
    ];
    for (mode, want_bare, want_edit, want_read) in cases {
        let check = Check::new(&[], &[], &[]).mode(mode);
        assert_eq!(
            check.decide(&tool, json!({})).await,
            want_bare,
            "bare in {mode}"
        );
        assert_eq!(
            check.decide(&edit, input.clone()).await,
            want_edit,
            "edit in {mode}"
        );
        assert_eq!(
            check.decide(&read_only, json!({"text": "x"})).await,
            want_read,
            "read in {mode}"
        );
    }
    // A deny rule holds even in bypass mode; an explicit ask rule still asks.
    let check = Check::new(&[], &["write"], &["bare"]).mode(PermissionMode::Bypass);
    assert_eq!(check.decide(&tool, json!({})).await, "deny");
    assert_eq!(check.decide(&edit, input).await, "ask");
}

#[tokio::test]
async fn a_tools_own_verdict_sits_between_the_rules() {
    let refuses = tool("refuses").permission(PermissionCheck::Deny {
        reason: "never on a Friday".into(),
    });
    let allows = tool("allows").read_only(true);
    // The tool's own denial beats an allow rule, and bypass mode.
    let check = Check::new(&["refuses"], &[], &[]).mode(PermissionMode::Bypass);
    assert_eq!(check.decide(&refuses, json!({})).await, "deny");
    // Its own allow beats the default ask, but not an ask or a deny rule.
    assert_eq!(
        Check::new(&[], &[], &[]).decide(&allows, json!({})).await,
        "allow"
    );
    assert_eq!(
        Check::new(&[], &["allows"], &[])
            .decide(&allows, json!({}))
            .await,
        "ask"
    );
    assert_eq!(
        Check::new(&[], &[], &["allows"])
            .decide(&allows, json!({}))
            .await,
        "deny"
    );
    // A read-only tool that allows itself runs in plan mode.
    let plan = Check::new(&[], &[], &[]).mode(PermissionMode::Plan);
    assert_eq!(plan.decide(&allows, json!({})).await, "allow");
}

#[tokio::test]
async fn always_allow_adds_a_session_rule() {
    let fx = Fixture::new();
    let rule: PermissionRule = "shell(git log:*)".parse().unwrap();
    let prompter = Arc::new(Recorder::answering(PromptAnswer::AllowAlways {
        rule: rule.clone(),
        scope: RuleScope::Session,
    }));
    let permissions = Arc::new(Permissions::default().with_prompter(prompter.clone()));
    let executor = fx.builder().permissions(Arc::clone(&permissions)).build();
    let first = run(&executor, "shell", json!({"command": "git log -1"})).await;
    assert_eq!(first.text(), "ran git log -1");
    let second = run(&executor, "shell", json!({"command": "git log --oneline"})).await;
    assert_eq!(second.text(), "ran git log --oneline");
    let asked = prompter.asked.lock().unwrap();
    assert_eq!(
        asked.len(),
        1,
        "the second call is allowed by the learned rule"
    );
    assert_eq!(asked[0].suggested_rule.to_string(), "shell(git log -1)");
    assert!(permissions.rules().allow.contains(&rule));
}

#[tokio::test]
async fn a_denied_prompt_passes_the_users_words_on() {
    let fx = Fixture::new();
    let prompter = Arc::new(Recorder::answering(PromptAnswer::Deny {
        feedback: Some("use the staging branch".into()),
    }));
    let executor = fx
        .builder()
        .permissions(Arc::new(Permissions::default().with_prompter(prompter)))
        .build();
    let result = run(&executor, "shell", json!({"command": "git push"})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.text(), @"the user denied this shell call and said: use the staging branch");
}

#[test]
fn rules_parse_and_print_back() {
    for text in [
        "read_file",
        "shell(git status:*)",
        "read_file(src/**)",
        "mcp__github",
        "mcp__github__create_issue",
    ] {
        let rule: PermissionRule = text.parse().unwrap();
        assert_eq!(rule.to_string(), text);
    }
    let errors: Vec<String> = ["", "shell(git status", "shell()", "bad name", "a(b)c"]
        .iter()
        .map(|t| t.parse::<PermissionRule>().unwrap_err().to_string())
        .collect();
    insta::assert_snapshot!(errors.join("\n"), @r"
    invalid permission rule ``: the tool part must be a tool name (letters, digits, `_`, `-`) such as `read_file` or `mcp__server`
    invalid permission rule `shell(git status`: a rule with `(` must end with `)`, as in `shell(git status:*)`
    invalid permission rule `shell()`: the parentheses are empty; write `tool` alone to match every call
    invalid permission rule `bad name`: the tool part must be a tool name (letters, digits, `_`, `-`) such as `read_file` or `mcp__server`
    invalid permission rule `a(b)c`: a rule with `(` must end with `)`, as in `shell(git status:*)`
    ");
    let rules: PermissionRules =
        serde_json::from_value(json!({"allow": ["read_file"], "deny": ["shell(rm:*)"]})).unwrap();
    assert_eq!(rules.deny[0].to_string(), "shell(rm:*)");
    assert!(serde_json::from_value::<PermissionRules>(json!({"allow": ["x("]})).is_err());
}

#[test]
fn modes_parse_from_settings_names() {
    assert_eq!(
        "accept-edits".parse::<PermissionMode>().unwrap(),
        PermissionMode::AcceptEdits
    );
    assert_eq!(
        "dont_ask".parse::<PermissionMode>().unwrap(),
        PermissionMode::DontAsk
    );
    assert_eq!(
        "yolo".parse::<PermissionMode>().unwrap_err().to_string(),
        "unknown permission mode `yolo`: use default, accept_edits, plan, bypass or dont_ask"
    );
}

#[tokio::test]
async fn a_grant_allows_until_revoked_and_never_past_deny_or_ask_rules() {
    let shell = shell();
    let dir = tempfile::tempdir().unwrap();
    let session = Arc::new(Session::new("s", dir.path(), dir.path()));
    let ctx = ToolContext::new("t", "shell", session);
    let rules = PermissionRules::parse(&[], &["shell(git push:*)"], &["shell(rm:*)"]).unwrap();
    let permissions = Permissions::new(rules.clone());
    let decide = async |command: &str| match permissions
        .decide(&shell, &json!({ "command": command }), &ctx)
        .await
    {
        PermissionDecision::Allow { .. } => "allow",
        PermissionDecision::Deny { .. } => "deny",
    };
    assert_eq!(decide("make test").await, "deny", "nothing granted yet");

    let granted: Vec<PermissionRule> = ["shell(make:*)", "shell(rm:*)", "shell(git push:*)"]
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
    permissions.grant(granted.clone());
    permissions.grant(granted.clone());
    assert_eq!(
        permissions.grants(),
        granted,
        "granting twice keeps one copy"
    );
    assert_eq!(decide("make test").await, "allow");
    assert_eq!(
        decide("rm -rf build").await,
        "deny",
        "a deny rule beats a grant"
    );
    assert_eq!(
        decide("git push").await,
        "deny",
        "an ask rule beats a grant (and a non-interactive run cannot ask)"
    );
    assert_eq!(permissions.rules(), rules, "grants are not rules");

    permissions.revoke_grants();
    assert!(permissions.grants().is_empty());
    assert_eq!(decide("make test").await, "deny");
}
