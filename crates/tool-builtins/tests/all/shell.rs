//! shell.

use std::time::{Duration, Instant};

use serde_json::json;
use tool_core::{CancellationToken, PermissionCheck, ToolError};

use crate::support::Env;

fn shell_env() -> Env {
    Env::with(|b| {
        b.shell_config(tool_builtins::ShellConfig {
            pipe_grace: Duration::from_millis(500),
            ..crate::support::shell_config()
        })
    })
}

#[tokio::test]
async fn returns_exit_code_stdout_and_stderr() {
    let env = shell_env();
    insta::assert_snapshot!(
        "success",
        env.seen("shell", json!({"command": "echo out; echo err >&2"}))
            .await
    );
    insta::assert_snapshot!(
        "failure",
        env.seen(
            "shell",
            json!({"command": "echo partial; echo broken >&2; exit 3"})
        )
        .await
    );
    insta::assert_snapshot!(
        "silent",
        env.seen("shell", json!({"command": "true"})).await
    );
}

#[tokio::test]
async fn runs_in_the_working_directory() {
    let env = shell_env();
    env.write("here.txt", "x");
    let out = env.ok("shell", json!({"command": "ls"})).await;
    assert!(out.contains("here.txt"), "{out}");
}

/// Reads the state letter of a process from /proc; `None` when it no longer exists.
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

#[tokio::test]
async fn the_timeout_kills_the_whole_process_group() {
    let env = shell_env();
    let pid_file = env.path("grandchild.pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let started = Instant::now();
    let result = env
        .execute("shell", json!({"command": command, "timeout_ms": 700}))
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("timed out after 700 ms"),
        "{}",
        result.text()
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The kill is sent before the call returns; the kernel may take a moment to finish the
    // process off, so poll with a deadline. A zombie waiting to be reaped counts as gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match process_state(pid) {
            None | Some('Z') | Some('X') => break,
            Some(state) => {
                assert!(
                    Instant::now() < deadline,
                    "grandchild {pid} still alive in state {state}"
                );
                tokio::task::yield_now().await;
            }
        }
    }
}

#[tokio::test]
async fn huge_output_is_capped_while_it_is_read() {
    let env = shell_env();
    let out = env
        .call(
            "shell",
            json!({"command": "head -c 100000000 /dev/zero | tr '\\0' 'a'; echo; echo THE-END"}),
        )
        .await
        .unwrap();
    let text = out.joined_text();
    assert!(text.chars().count() < 40_000, "{}", text.len());
    assert!(text.contains("bytes truncated ...]"));
    assert!(text.starts_with("exit code: 0\nstdout:\naaaa"));
    assert!(text.ends_with("THE-END"), "{}", &text[text.len() - 100..]);
}

#[tokio::test]
async fn background_processes_holding_the_output_are_stopped() {
    let env = shell_env();
    let pid_file = env.path("bg.pid");
    let command = format!("sleep 300 & echo $! > {}; echo started", pid_file.display());
    let out = env.ok("shell", json!({"command": command})).await;
    assert!(
        out.contains("started") && out.contains("Background processes"),
        "{out}"
    );
}

#[tokio::test]
async fn cancellation_kills_the_command() {
    let env = shell_env();
    let tool = env.tool("shell");
    let cancel = CancellationToken::new();
    let ctx = env.ctx("shell").with_cancellation(cancel.clone());
    let pid_file = env.path("cancel.pid");
    let command = format!("echo $$ > {}; sleep 300", pid_file.display());
    let call = tool.call(json!({"command": command}), &ctx);
    let canceller = async {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !pid_file.exists() || std::fs::read_to_string(&pid_file).unwrap().is_empty() {
            assert!(Instant::now() < deadline);
            tokio::task::yield_now().await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert_eq!(result.unwrap_err(), ToolError::Cancelled);
}

#[tokio::test]
async fn read_only_commands_are_classed_read_only() {
    let env = shell_env();
    let tool = env.tool("shell");
    for command in ["git status", "ls -la src", "cat a | wc -l"] {
        let input = json!({"command": command});
        assert!(tool.is_read_only(&input), "{command}");
        assert!(tool.is_concurrency_safe(&input), "{command}");
    }
    for command in ["rm -rf /tmp/x", "cargo build", "echo x > f", "git push"] {
        let input = json!({"command": command});
        assert!(!tool.is_read_only(&input), "{command}");
        assert!(!tool.is_concurrency_safe(&input), "{command}");
    }
    assert_eq!(
        tool.permission_subject(&json!({"command": " git status "})),
        Some("git status".to_owned())
    );
    assert_eq!(
        env.check("shell", json!({"command": "ls"})).await,
        PermissionCheck::Allow
    );
    assert!(matches!(
        env.check("shell", json!({"command": "rm -rf x"})).await,
        PermissionCheck::Ask { .. }
    ));
}

#[tokio::test]
async fn permission_rules_match_the_command() {
    let env = shell_env();
    let rules = tool_core::PermissionRules::parse(&["shell(git status:*)"], &[], &[]).unwrap();
    let rule = &rules.allow[0];
    let tool = env.tool("shell");
    assert!(rule.matches(&tool.0, &json!({"command": "git status -s"}), &env.root));
    assert!(!rule.matches(&tool.0, &json!({"command": "git push"}), &env.root));
}

#[tokio::test]
async fn bad_timeouts_and_empty_commands() {
    let env = shell_env();
    let err = env
        .err("shell", json!({"command": "ls", "timeout_ms": 600_001}))
        .await;
    assert!(
        err.contains("timeout_ms must be between 1 and 600000"),
        "{err}"
    );
    let err = env.err("shell", json!({"command": "  "})).await;
    assert!(err.contains("empty"), "{err}");
}
