//! Servers that are missing, silent, killed or hung.

use std::time::Duration;

use serde_json::json;
use tool_mcp::ServerState;

use crate::support::*;

#[tokio::test]
async fn a_missing_command_fails_clearly_and_others_connect() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let (manager, registry) = start(
        vec![
            (
                "broken",
                stdio("/nonexistent/mcp-server-does-not-exist", &[]),
            ),
            ("everything", node("server-everything", &["stdio"])),
        ],
        options(),
    );
    let states = settled(&manager).await;
    match &states["broken"] {
        ServerState::Failed { reason } => {
            assert!(
                reason.contains("cannot start mcp server broken"),
                "{reason}"
            );
            assert!(
                reason.contains("/nonexistent/mcp-server-does-not-exist"),
                "{reason}"
            );
        }
        other => panic!("broken: {other:?}"),
    }
    assert!(connected(&states, "everything") > 0);
    assert!(
        registry
            .names()
            .iter()
            .all(|n| n.starts_with("mcp__everything__"))
    );
}

#[tokio::test]
async fn a_server_that_exits_at_once_fails_with_its_stderr() {
    let (manager, _registry) = start(
        vec![(
            "crashy",
            stdio("sh", &["-c", "echo 'boom: missing API token' >&2; exit 3"]),
        )],
        options(),
    );
    let states = settled(&manager).await;
    match &states["crashy"] {
        ServerState::Failed { reason } => {
            assert!(reason.starts_with("mcp server crashy: "), "{reason}");
            assert!(
                reason.ends_with("(stderr: boom: missing API token)"),
                "{reason}"
            );
        }
        other => panic!("crashy: {other:?}"),
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_without_holding_up_others() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let mut options = options();
    options.connect_timeout = Duration::from_secs(8);
    let (manager, _registry) = start(
        vec![
            ("silent", stdio("sleep", &["1000"])),
            ("everything", node("server-everything", &["stdio"])),
        ],
        options,
    );
    // The good server is connected while the silent one is still waiting.
    let (states, held) = manager
        .wait_for(DEADLINE, |s| {
            matches!(s["everything"], ServerState::Connected { .. })
        })
        .await;
    assert!(held, "{states:?}");
    assert_eq!(states["silent"], ServerState::Connecting);
    let states = settled(&manager).await;
    match &states["silent"] {
        ServerState::Failed { reason } => {
            assert_eq!(
                reason,
                "mcp server silent did not answer initialize within 8.0s"
            );
        }
        other => panic!("silent: {other:?}"),
    }
}

/// The everything server behind a shell that writes its pid, so the test can kill or stop it.
fn everything_with_pidfile(pidfile: &std::path::Path) -> tool_mcp::ServerConfig {
    let script = npm_server("server-everything");
    let command = format!(
        "echo $$ > '{}'; exec node '{script}' stdio",
        pidfile.display()
    );
    stdio("sh", &["-c", &command])
}

fn read_pid(pidfile: &std::path::Path) -> nix::unistd::Pid {
    let text = std::fs::read_to_string(pidfile).unwrap();
    nix::unistd::Pid::from_raw(text.trim().parse().unwrap())
}

async fn expect_change(
    changes: &mut tokio::sync::broadcast::Receiver<tool_mcp::RegistryChange>,
) -> tool_mcp::RegistryChange {
    tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("no registry change")
        .unwrap()
}

#[tokio::test]
async fn a_killed_server_is_marked_down_and_comes_back() {
    if !external_tests(&[External::NpmServers, External::PythonSdk]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let (manager, registry) = start(
        vec![
            ("victim", everything_with_pidfile(&pidfile)),
            (
                "bystander",
                stdio(&venv_python(), &[&fixture!("list_changed_server.py")]),
            ),
        ],
        options(),
    );
    let states = settled(&manager).await;
    let tools = connected(&states, "victim");
    let mut changes = manager.subscribe();
    let mut state_rx = manager.watch_states();
    state_rx.mark_unchanged();

    nix::sys::signal::kill(read_pid(&pidfile), nix::sys::signal::Signal::SIGKILL).unwrap();
    let during = call(&registry, "mcp__victim__echo", json!({"message": "x"})).await;
    let is_error = match &during {
        Err(_) => true,
        Ok(output) => output.is_error,
    };
    // The call either raced the crash and failed, or found the tool already gone.
    assert!(
        is_error || registry.get("mcp__victim__echo").is_none(),
        "{during:?}"
    );

    let removed = expect_change(&mut changes).await;
    assert_eq!(removed.server, "victim");
    assert_eq!(removed.removed.len(), tools);
    assert!(removed.added.is_empty());
    assert!(
        registry
            .names()
            .iter()
            .all(|n| !n.starts_with("mcp__victim__"))
    );

    let added = expect_change(&mut changes).await;
    assert_eq!(added.server, "victim");
    assert_eq!(added.added.len(), tools);
    let (states, held) = manager
        .wait_for(DEADLINE, |s| {
            matches!(s["victim"], ServerState::Connected { .. })
        })
        .await;
    assert!(held, "{states:?}");
    let echoed = call(&registry, "mcp__victim__echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(echoed.joined_text(), "Echo: back");
    assert_eq!(connected(&states, "bystander"), 1);
}

#[tokio::test]
async fn a_hung_server_times_out_is_marked_down_and_is_replaced() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut options = options();
    options.call_timeout = Duration::from_secs(4);
    options.ping_timeout = Duration::from_secs(1);
    let (manager, registry) = start(vec![("hung", everything_with_pidfile(&pidfile))], options);
    settled(&manager).await;
    let mut changes = manager.subscribe();
    let pid = read_pid(&pidfile);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();

    let err = call(&registry, "mcp__hung__echo", json!({"message": "x"}))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "mcp tool echo on server hung did not answer within 4.0s; the call was cancelled"
    );
    let removed = expect_change(&mut changes).await;
    assert!(!removed.removed.is_empty());
    let added = expect_change(&mut changes).await;
    assert!(!added.added.is_empty());
    let echoed = call(&registry, "mcp__hung__echo", json!({"message": "new"}))
        .await
        .unwrap();
    assert_eq!(echoed.joined_text(), "Echo: new");
    assert_ne!(read_pid(&pidfile), pid, "a new process serves the tools");
    // The stopped process was killed when its connection was dropped; continuing it is harmless.
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
}
