//! The real binary in print mode (`-p`) against the scripted server: a multi-tool turn that
//! changes files, a permission denial, a provider error and its retry, and resuming a killed
//! session.

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

const LIB: &str = "pub fn greet() -> &'static str {\n    \"hello\"\n}\n";

/// Read and grep together in one message, then an edit, then the answer: the file changes and
/// every request carries what the model needs.
#[tokio::test]
async fn a_multi_tool_turn_reads_greps_and_edits_files() {
    for kind in KINDS {
        let project = Project::new();
        project.write("src/lib.rs", LIB);
        project.write("README.md", "# Greeter\n\nSays hello.\n");
        let server = ScriptedServer::start(vec![
            Turn::text("Let me look.")
                .then_tool_use("call_read", "read_file", json!({"path": "src/lib.rs"}))
                .then_tool_use("call_grep", "grep", json!({"pattern": "hello"})),
            Turn::tool_use(
                "call_edit",
                "edit_file",
                json!({"path": "src/lib.rs", "old_string": "\"hello\"", "new_string": "\"hello, world\""}),
            ),
            Turn::text("The greeting now says hello, world."),
        ])
        .await;

        // The proxy's request, byte for byte as before native activation became Anthropic's
        // default (native.rs covers native requests).
        let output = run(project
            .agent(&server, kind)
            .args(["--permission-mode", "accept_edits", "--activation", "proxy"])
            .args(["-p", "Make the greeting say hello, world"]))
        .await;

        assert_success(&output);
        assert_eq!(stdout(&output), "The greeting now says hello, world.\n");
        assert_eq!(
            project.read("src/lib.rs"),
            "pub fn greet() -> &'static str {\n    \"hello, world\"\n}\n"
        );
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 3, "{kind:?}");
        let after_reading = tool_results(&bodies[1]);
        assert_eq!(after_reading.len(), 2, "{after_reading:?}");
        assert!(after_reading.iter().all(|(error, _)| !error));
        assert!(
            after_reading[0].1.contains("\"hello\""),
            "{after_reading:?}"
        );
        assert!(
            after_reading[1].1.contains("src/lib.rs"),
            "{after_reading:?}"
        );
        let after_editing = tool_results(&bodies[2]);
        assert!(!after_editing[2].0, "{after_editing:?}");
        assert!(
            after_editing[2].1.starts_with("Edited src/lib.rs")
                && after_editing[2].1.contains("+    2 |     \"hello, world\""),
            "{after_editing:?}"
        );
        // The tools array and the system prompt do not change within a session.
        assert_eq!(bodies[0]["tools"], bodies[2]["tools"]);
        assert_eq!(bodies[0]["system"], bodies[2]["system"]);

        let last = project.redact(&serde_json::to_string_pretty(&bodies[2]).unwrap());
        let name = match kind {
            ProviderKind::Anthropic => "multi_tool_turn_anthropic_request",
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                "multi_tool_turn_openai_request"
            }
        };
        insta::assert_snapshot!(name, last);
    }
}

/// In print mode nobody can answer a permission prompt: the call is denied with a reason the
/// model reads, nothing is touched, and the run itself still ends well.
#[tokio::test]
async fn print_mode_denies_what_needs_approval() {
    let project = Project::new();
    project.write("notes.txt", "keep me\n");
    let server = ScriptedServer::start(vec![
        Turn::tool_use("toolu_rm", "shell", json!({"command": "rm notes.txt"})),
        Turn::text("I was not allowed to delete notes.txt."),
    ])
    .await;

    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-format",
        "json",
        "-p",
        "Delete notes.txt",
    ]))
    .await;

    assert_success(&output);
    assert_eq!(project.read("notes.txt"), "keep me\n");
    let summary: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(summary["subtype"], "success");
    assert_eq!(summary["result"], "I was not allowed to delete notes.txt.");
    assert_eq!(summary["num_turns"], 2);
    let results = tool_results(&server.bodies()[1]);
    assert!(results[0].0, "{results:?}");
    insta::assert_snapshot!(project.redact(&results[0].1));
}

/// An overloaded provider is retried; the retry is reported on standard error and the answer
/// arrives as if nothing happened.
#[tokio::test]
async fn an_overloaded_provider_is_retried() {
    for kind in KINDS {
        let project = Project::new();
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let server = ScriptedServer::start(vec![
            Turn::error(529, overloaded).header("retry-after-ms", "10"),
            Turn::text("Recovered."),
        ])
        .await;

        let output = run(project.agent(&server, kind).args(["-p", "Say something"])).await;

        assert_success(&output);
        assert_eq!(stdout(&output), "Recovered.\n");
        assert!(stderr(&output).contains("retrying"), "{}", stderr(&output));
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0], bodies[1], "a retry sends the same request");
    }
}

/// A rejected key is not retried: the run fails with a message that says what to fix.
#[tokio::test]
async fn a_rejected_key_fails_the_run_with_a_clear_message() {
    let project = Project::new();
    let rejected = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let server = ScriptedServer::start(vec![Turn::error(401, rejected)]).await;

    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "Say something"]))
    .await;

    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("ANTHROPIC_API_KEY"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.bodies().len(),
        1,
        "authentication errors are not retried"
    );
}

/// A session killed while the model was streaming keeps everything before that message;
/// `--continue` and `--resume ID` pick it up with the conversation intact.
#[tokio::test]
async fn a_killed_session_resumes_where_it_stopped() {
    let project = Project::new();
    project.write("plan.md", "1. resume sessions\n");
    let server = ScriptedServer::start(vec![
        Turn::tool_use("toolu_read", "read_file", json!({"path": "plan.md"})),
        Turn::stall("Half an ans"),
        Turn::text("Picked up again."),
        Turn::text("And once more, by id."),
    ])
    .await;

    let mut child = project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "What is the plan?"])
        .spawn()
        .unwrap();
    server.wait_for_requests(2).await;
    child.kill().await.unwrap();

    let output =
        run(project
            .agent(&server, ProviderKind::Anthropic)
            .args(["--continue", "-p", "Go on"]))
        .await;
    assert_success(&output);
    assert_eq!(stdout(&output), "Picked up again.\n");

    let bodies = server.bodies();
    let resumed = messages(&bodies[2]);
    let texts = serde_json::to_string(resumed).unwrap();
    assert!(texts.contains("What is the plan?"), "{texts}");
    assert!(texts.contains("1. resume sessions"), "{texts}");
    assert!(texts.contains("Go on"), "{texts}");
    assert!(
        !texts.contains("Half an ans"),
        "the message being streamed is not kept"
    );
    // The conversation up to the kill is sent again as it was (the last message of the earlier
    // request differs only by its cache breakpoint).
    assert_eq!(resumed[..2], messages(&bodies[1])[..2]);
    assert_eq!(
        resumed[2]["content"][0]["content"],
        messages(&bodies[1])[2]["content"][0]["content"]
    );

    let sessions: Vec<_> = std::fs::read_dir(project.home().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let id = sessions[0]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--resume",
        &id,
        "-p",
        "Once more",
    ]))
    .await;
    assert_success(&output);
    let texts = serde_json::to_string(messages(&server.bodies()[3])).unwrap();
    assert!(
        texts.contains("Go on") && texts.contains("Picked up again."),
        "{texts}"
    );
}

/// What a newcomer reads first.
#[tokio::test]
async fn help_says_how_to_choose_a_provider_and_where_settings_live() {
    let project = Project::new();
    let output = run(project.command().arg("--help")).await;
    assert_success(&output);
    insta::assert_snapshot!(stdout(&output));
}

/// `tools list` shows what a request carries; `--deferred` what waits behind tool_search.
#[tokio::test]
async fn tools_list_shows_the_request_and_the_deferred_tools() {
    let project = Project::new();
    let output = run(project.command().args(["tools", "list"])).await;
    assert_success(&output);
    insta::assert_snapshot!("tools_list", stdout(&output));
    let output = run(project.command().args(["tools", "list", "--deferred"])).await;
    assert_success(&output);
    insta::assert_snapshot!("tools_list_deferred", stdout(&output));
}

#[tokio::test]
async fn tools_search_explains_its_ranking() {
    let project = Project::new();
    let output = run(project.command().args([
        "tools",
        "search",
        "find text in files",
        "--explain",
        "--limit",
        "2",
    ]))
    .await;
    assert_success(&output);
    insta::assert_snapshot!(stdout(&output));
    let output = run(project.command().args(["tools", "search", "???"])).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("letter or digit"),
        "{}",
        stderr(&output)
    );
}

/// `tools call` runs the whole lifecycle: a read goes through, a command that needs approval is
/// denied when nobody can answer, and bad input says what to pass instead.
#[tokio::test]
async fn tools_call_runs_the_lifecycle() {
    let project = Project::new();
    project.write("notes.txt", "one\ntwo\n");
    let output = run(project.command().args([
        "tools",
        "call",
        "read_file",
        "--input",
        r#"{"path": "notes.txt"}"#,
    ]))
    .await;
    assert_success(&output);
    assert_eq!(stdout(&output), "     1\tone\n     2\ttwo\n");

    let output = run(project.command().args([
        "tools",
        "call",
        "shell",
        "--input",
        r#"{"command": "rm notes.txt"}"#,
    ]))
    .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("denied"), "{}", stdout(&output));
    assert!(project.path().join("notes.txt").exists());

    let output =
        run(project
            .command()
            .args(["tools", "call", "read_file", "--input", "path=notes.txt"]))
        .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("--input is not JSON"),
        "{}",
        stderr(&output)
    );
}

/// `--thinking N` asks Anthropic's API for a thinking budget (the answer's `max_tokens` on top
/// when the budget would leave it no room); the thinking block comes back with its signature,
/// unchanged, in the request after the tool call; the `thinking` setting does the same, and a
/// budget the API would refuse is an error that says what to give instead.
#[tokio::test]
async fn thinking_is_asked_for_and_its_blocks_go_back_unchanged() {
    let project = Project::new();
    project.write("notes.md", "Friday.\n");
    let server = ScriptedServer::start(vec![
        Turn::thinking("The notes will say.", "sig-think-1").then_tool_use(
            "call_read",
            "read_file",
            json!({"path": "notes.md"}),
        ),
        Turn::text("Friday."),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--thinking",
        "16000",
        "-p",
        "When?",
    ]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert_eq!(
        bodies[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 16000})
    );
    assert_eq!(bodies[0]["max_tokens"], json!(16000 + 8192));
    let assistant = &bodies[1]["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "The notes will say.", "signature": "sig-think-1"})
    );
    assert_eq!(assistant[1]["type"], "tool_use");

    std::fs::create_dir_all(project.home()).unwrap();
    std::fs::write(
        project.home().join("settings.json"),
        r#"{"thinking": "adaptive"}"#,
    )
    .unwrap();
    let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "Hello"]))
    .await;
    assert_success(&output);
    assert_eq!(server.bodies()[0]["thinking"], json!({"type": "adaptive"}));
    assert_eq!(server.bodies()[0]["max_tokens"], json!(8192));

    let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--thinking",
        "100",
        "-p",
        "Hello",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("1024 or more"),
        "{}",
        stderr(&output)
    );
    assert!(server.bodies().is_empty());
}

/// The output limit comes from the table of known models (the `maxTokens` setting wins), and
/// never asks for more than the context window leaves past the input.
#[tokio::test]
async fn the_output_limit_follows_the_model_and_the_room_left() {
    let project = Project::new();
    let limit = async |settings: &str| {
        std::fs::create_dir_all(project.home()).unwrap();
        std::fs::write(project.home().join("settings.json"), settings).unwrap();
        let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
        let output = run(project
            .command()
            .args(["--provider", "anthropic", "--base-url", &server.url()])
            .env("ANTHROPIC_API_KEY", "test-key")
            .args(["--model", "claude-sonnet-4-5", "-p", "Hello"]))
        .await;
        assert_success(&output);
        server.bodies()[0]["max_tokens"].as_u64().unwrap()
    };
    assert_eq!(limit("{}").await, 64_000);
    assert_eq!(limit(r#"{"maxTokens": 2000}"#).await, 2_000);
    let squeezed = limit(r#"{"contextWindow": 20000}"#).await;
    assert!((1_024..20_000).contains(&squeezed), "{squeezed}");
}
