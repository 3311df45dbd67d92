//! Nothing lost, nothing done twice: a retried stream does not repeat a side effect, and a
//! session killed at any moment resumes with every complete entry, however often it happens.

use agent_cli::provider::ProviderKind;
use serde_json::json;

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// The scripted server closes the stream right after a shell call's block is complete (before
/// the message is), and the retry streams the whole message again: the command ran once.
#[tokio::test]
async fn a_retried_stream_runs_a_changing_call_once() {
    let project = Project::new();
    project.write("notes.txt", "notes\n");
    let message = || {
        Turn::tool_use("call_read", "read_file", json!({"path": "notes.txt"}))
            .then_tool_use(
                "call_append",
                "shell",
                json!({"command": "echo ran >> count.txt"}),
            )
            .then_text("Appended.")
    };
    let Turn::Reply(first_attempt) = message() else {
        unreachable!("a tool_use turn is a reply")
    };
    let server = ScriptedServer::start(vec![
        Turn::Cut(first_attempt),
        message(),
        Turn::text("Done."),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--permission-mode",
        "bypass",
        "-p",
        "append once",
    ]))
    .await;
    assert_success(&output);
    assert_eq!(project.read("count.txt"), "ran\n");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3, "{}", stderr(&output));
    let results = tool_results(&bodies[2]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|(error, _)| !error), "{results:?}");
}

/// The session file a project's runs write to.
fn session_file(project: &Project) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(project.home().join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

/// A real kill mid-turn, then a torn last line (a kill during a write), then two resumes: every
/// complete entry is kept and each resume sees the whole conversation.
#[tokio::test]
async fn kills_and_torn_writes_lose_no_complete_entry() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text("one")]).await;
    assert_success(
        &run(project
            .agent(&server, ProviderKind::Anthropic)
            .args(["-p", "first"]))
        .await,
    );

    let server = ScriptedServer::start(vec![Turn::stall("partial")]).await;
    let mut child = project
        .agent(&server, ProviderKind::Anthropic)
        .args(["--continue", "-p", "second"])
        .spawn()
        .unwrap();
    server.wait_for_requests(1).await;
    child.start_kill().unwrap();
    let _ = child.wait().await;

    let path = session_file(&project);
    let mut torn = std::fs::read(&path).unwrap();
    torn.extend_from_slice(br#"{"type":"message","message":{"role":"assist"#);
    std::fs::write(&path, torn).unwrap();

    for (turn, answer) in [("third", "three"), ("fourth", "four")] {
        let server = ScriptedServer::start(vec![Turn::text(answer)]).await;
        let output =
            run(project
                .agent(&server, ProviderKind::Anthropic)
                .args(["--continue", "-p", turn]))
            .await;
        assert_success(&output);
        assert_eq!(stdout(&output), format!("{answer}\n"));
        let sent = serde_json::to_string(&server.bodies()[0]["messages"]).unwrap();
        for earlier in ["first", "one", "second", turn] {
            assert!(sent.contains(earlier), "{earlier} missing from {sent}");
        }
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok()),
        "{text}"
    );
    assert!(text.contains("four"));
}
