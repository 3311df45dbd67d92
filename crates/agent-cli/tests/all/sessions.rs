//! Long sessions: compaction when the context nears the window or the provider says it is too
//! long, `/compact` and `/clear` by hand, resuming from the latest summary, the slash commands,
//! usage and cost, and the project instructions in the system prompt.

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{Matcher, ScriptUsage, ScriptedServer, Turn};

/// A line per block of a request: its message's role, its kind and its text (a tool call's or
/// result's start only), so a snapshot shows what the model was sent without the bulk of it.
fn outline(body: &Value) -> String {
    let mut out = String::new();
    for message in messages(body) {
        let role = message["role"].as_str().unwrap_or("?");
        let blocks = match &message["content"] {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        for block in blocks {
            let kind = block["type"].as_str().unwrap_or("?");
            let text = match kind {
                "text" => block["text"].as_str().unwrap_or("").to_owned(),
                "tool_use" => format!("{} {}", block["name"], block["input"]),
                "tool_result" => block["content"].to_string(),
                _ => String::new(),
            };
            // Text is shown whole; a tool's input or result only by its start.
            let limit = if kind == "text" { usize::MAX } else { 110 };
            let text: String = text.replace('\n', "⏎").chars().take(limit).collect();
            out.push_str(&format!("{role:<9} {kind:<11} {text}\n"));
        }
    }
    out
}

fn usage(input: u64) -> ScriptUsage {
    ScriptUsage {
        input,
        output: 50,
        ..ScriptUsage::default()
    }
}

/// A project whose model has a 10 000-token window, so a reported input of 9 000 tokens is past
/// the default threshold (85%).
fn small_window_project() -> Project {
    let project = Project::new();
    std::fs::write(
        project.home().join("settings.json"),
        r#"{"contextWindow": 10000}"#,
    )
    .unwrap();
    project.write("big.txt", &"a line of the big file\n".repeat(100));
    project.write("small.txt", "the small file\n");
    project
}

/// The script of a task that reads two files, the second answer reporting 9 000 input tokens:
/// the next request would pass the threshold, so the agent asks for a summary first, then goes
/// on from it.
fn compacting_script() -> Vec<Turn> {
    vec![
        Turn::tool_use("toolu_1", "read_file", json!({"path": "big.txt"})).usage(usage(2_000)),
        Turn::tool_use("toolu_2", "read_file", json!({"path": "small.txt"})).usage(usage(9_000)),
        Turn::text("Goal: compare the files. Files: big.txt (100 lines), small.txt (1 line). Pending: report.")
            .usage(usage(9_100)),
        Turn::text("big.txt is longer.").usage(usage(700)),
    ]
}

#[tokio::test]
async fn a_session_near_the_window_compacts_then_continues_with_the_same_prefix() {
    let project = small_window_project();
    let server = ScriptedServer::start(compacting_script()).await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-format",
        "json",
        "-p",
        "compare big.txt and small.txt",
    ]))
    .await;
    assert_success(&output);
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["result"], "big.txt is longer.");
    assert!(
        stderr(&output).contains("conversation compacted, the context neared the window"),
        "{}",
        stderr(&output)
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4);
    // The summary request and the request after it.
    insta::assert_snapshot!("summary_request", outline(&bodies[2]));
    insta::assert_snapshot!("request_after_compaction", outline(&bodies[3]));
    // The prompt cache's prefix: the system prompt and the tools are the same bytes in every
    // request, the summary request included.
    for body in &bodies[1..] {
        assert_eq!(body["system"].to_string(), bodies[0]["system"].to_string());
        assert_eq!(body["tools"].to_string(), bodies[0]["tools"].to_string());
    }
    // The run's usage counts every request, the summary's included.
    assert_eq!(result["usage"]["input_tokens"], 2_000 + 9_000 + 9_100 + 700);
}

#[tokio::test]
async fn resuming_after_a_compaction_sends_the_summary_not_the_old_history() {
    let project = small_window_project();
    let server = ScriptedServer::start(compacting_script()).await;
    assert_success(
        &run(project
            .agent(&server, ProviderKind::Anthropic)
            .args(["-p", "compare big.txt and small.txt"]))
        .await,
    );
    let server = ScriptedServer::start(vec![Turn::text("Yes.")]).await;
    let output = run(project.agent(&server, ProviderKind::OpenAi).args([
        "--continue",
        "-p",
        "is that all?",
    ]))
    .await;
    assert_success(&output);
    let body = &server.bodies()[0];
    let sent = body["messages"].to_string();
    assert!(sent.contains("<conversation-summary>"), "{sent}");
    assert!(sent.contains("Pending: report."), "{sent}");
    assert!(!sent.contains("a line of the big file"), "{sent}");
    assert!(!sent.contains("compare big.txt and small.txt"), "{sent}");
    assert!(sent.contains("is that all?"), "{sent}");
}

#[tokio::test]
async fn a_context_length_error_compacts_and_the_request_succeeds() {
    for kind in KINDS {
        let project = Project::new();
        project.write("notes.txt", "some notes\n");
        let too_long = match kind {
            ProviderKind::Anthropic => Turn::error(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"}}),
            ),
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => Turn::error(
                400,
                json!({"error": {"message": "This model's maximum context length is 128000 tokens.", "code": "context_length_exceeded"}}),
            ),
        };
        let server = ScriptedServer::start(vec![
            Turn::tool_use("toolu_1", "read_file", json!({"path": "notes.txt"})),
            too_long,
            Turn::text("Goal: read the notes. Pending: answer."),
            Turn::text("The notes say: some notes."),
        ])
        .await;
        let output = run(project
            .agent(&server, kind)
            .args(["-p", "what do the notes say?"]))
        .await;
        assert_success(&output);
        assert_eq!(stdout(&output).trim(), "The notes say: some notes.");
        assert!(
            stderr(&output).contains("the provider said the context was too long"),
            "{}",
            stderr(&output)
        );
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 4);
        let retried = bodies[3]["messages"].to_string();
        assert!(retried.contains("Goal: read the notes."), "{retried}");
    }
}

/// Runs an interactive session with `lines` piped to standard input.
async fn interactive(
    project: &Project,
    server: &ScriptedServer,
    lines: &str,
) -> std::process::Output {
    run_with_input(&mut project.agent(server, ProviderKind::Anthropic), lines).await
}

#[tokio::test]
async fn compact_and_clear_by_hand_through_piped_stdin() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::text("Hello! Which bug?").usage(usage(1_000)),
        Turn::text("The user greeted me and asked about a bug.").usage(usage(1_100)),
        Turn::text("Looking at it.").usage(usage(300)),
        Turn::text("Fresh start.").usage(usage(100)),
    ])
    .await;
    let output = interactive(
        &project,
        &server,
        "hello, fix the bug\n/compact the bug report\n/context\nwhat now?\n/clear\nagain\n/cost\n/help\n/nonsense\n",
    )
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 4, "{}", stderr(&output));
    let summary_request = messages(&bodies[1]).last().unwrap().to_string();
    assert!(
        summary_request.contains("keep in particular: the bug report"),
        "{summary_request}"
    );
    let after = bodies[2]["messages"].to_string();
    assert!(after.contains("<conversation-summary>"), "{after}");
    assert!(after.contains("The user greeted me"), "{after}");
    assert!(after.contains("what now?"), "{after}");
    assert!(!after.contains("hello, fix the bug"), "{after}");
    // After /clear only the new message is sent.
    let cleared = messages(&bodies[3]);
    assert_eq!(cleared.len(), 1, "{}", outline(&bodies[3]));
    assert!(cleared[0].to_string().contains("again"));

    let out = stdout(&output);
    assert!(out.contains("project instructions"), "{out}");
    assert!(out.contains("next request"), "{out}");
    assert!(out.contains("session: 4 model requests"), "{out}");
    assert!(out.contains("/compact [KEEP]"), "{out}");
    let err = stderr(&output);
    assert!(err.contains("unknown command /nonsense"), "{err}");
    assert!(err.contains("  tokens: 1.0k in · 50 out"), "{err}");
    assert!(
        !out.contains('\x1b') && !err.contains('\x1b'),
        "no colour when piped"
    );

    // The session file records both, so a resume starts after the /clear.
    let server = ScriptedServer::start(vec![Turn::text("ok")]).await;
    assert_success(
        &run(project
            .agent(&server, ProviderKind::Anthropic)
            .args(["--continue", "-p", "go on"]))
        .await,
    );
    let resumed = outline(&server.bodies()[0]);
    assert!(!resumed.contains("conversation-summary"), "{resumed}");
    assert!(resumed.contains("again"), "{resumed}");
}

#[tokio::test]
async fn agents_md_from_the_repository_root_down_and_the_users_file_are_in_the_system_prompt() {
    let project = Project::new();
    std::fs::create_dir_all(project.path().join(".git")).unwrap();
    project.write(
        "AGENTS.md",
        "Run `cargo test` before you say a change is done.\n",
    );
    project.write("CLAUDE.md", "Prefer small commits.\n");
    project.write(
        "crates/app/AGENTS.md",
        "This crate is the CLI; keep its output stable.\n",
    );
    std::fs::write(
        project.home().join("AGENTS.md"),
        "Answer in British English.\n",
    )
    .unwrap();
    let server = ScriptedServer::start(vec![Turn::text("ok")]).await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .current_dir(project.path().join("crates/app"))
        .args(["-p", "hi"]))
    .await;
    assert_success(&output);
    let system = server.bodies()[0]["system"].to_string();
    let system: Value = serde_json::from_str(&system).unwrap();
    let text = system
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_else(|| system.as_str().unwrap_or("").to_owned());
    let section = &text[text.find("# Project instructions").unwrap()..];
    insta::assert_snapshot!(project.redact(section));
}

#[tokio::test]
async fn an_output_schema_makes_the_answer_json_that_validates_after_one_correction() {
    let project = Project::new();
    project.write(
        "schema.json",
        r#"{"type": "object", "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}}, "required": ["files", "summary"], "additionalProperties": false}"#,
    );
    let server = ScriptedServer::start(vec![
        // The model first answers in text, is reminded, then sends an answer that does not
        // validate, is told why, and then sends one that does.
        Turn::text("There are two files."),
        Turn::tool_use("toolu_1", "structured_output", json!({"files": "two"})),
        Turn::tool_use(
            "toolu_2",
            "structured_output",
            json!({"files": 2, "summary": "two files"}),
        ),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-schema",
        "schema.json",
        "-p",
        "how many files are there?",
    ]))
    .await;
    assert_success(&output);
    let answer: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(answer, json!({"files": 2, "summary": "two files"}));
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(tool_names(&bodies[0]).contains(&"structured_output".to_owned()));
    let reminded = messages(&bodies[1]).last().unwrap().to_string();
    assert!(
        reminded.contains("without giving the final answer"),
        "{reminded}"
    );
    let results = tool_results(&bodies[2]);
    assert_eq!(results.len(), 1);
    assert!(results[0].0, "{results:?}");
    insta::assert_snapshot!(results[0].1);

    // A bad schema file is refused before any request, saying what to pass.
    project.write("bad.json", r#"{"type": "nonsense"}"#);
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-schema",
        "bad.json",
        "-p",
        "hi",
    ]))
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("bad.json is not a valid JSON Schema"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_file_read_before_a_compaction_can_be_edited_after_it_without_a_new_read() {
    let project = small_window_project();
    let server = ScriptedServer::start(vec![
        Turn::tool_use("toolu_1", "read_file", json!({"path": "small.txt"})).usage(usage(9_000)),
        Turn::text("Goal: fix small.txt. Files: small.txt read. Pending: the edit."),
        Turn::tool_use(
            "toolu_2",
            "edit_file",
            json!({"path": "small.txt", "old_string": "small", "new_string": "edited"}),
        ),
        Turn::text("Edited."),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--permission-mode",
        "accept_edits",
        "-p",
        "fix small.txt",
    ]))
    .await;
    assert_success(&output);
    assert_eq!(project.read("small.txt"), "the edited file\n");
    let results = tool_results(&server.bodies()[3]);
    assert!(!results.last().unwrap().0, "{results:?}");
}

/// The size of the largest request of a scripted 200-turn session that reads a 4 KB file on each
/// turn, with the given window (in tokens); every summary request is answered by a summary.
async fn largest_request_of_a_long_session(window: u64) -> (usize, usize) {
    let project = Project::new();
    std::fs::write(
        project.home().join("settings.json"),
        json!({"contextWindow": window}).to_string(),
    )
    .unwrap();
    let mut script = Vec::new();
    for turn in 0..200 {
        let name = format!("data/{turn:03}.txt");
        project.write(
            &name,
            &format!("line {turn} of a long result\n").repeat(150),
        );
        script.push(Turn::tool_use(
            format!("toolu_{turn}"),
            "read_file",
            json!({"path": name}),
        ));
    }
    script.push(Turn::text("Read them all."));
    let summaries = (0..200)
        .map(|n| {
            Turn::text(format!(
                "Goal: read the 200 files. Pending: the files after summary {n}."
            ))
        })
        .collect();
    let server = ScriptedServer::routed(
        script,
        vec![(Matcher::last_user("Your context is nearly full"), summaries)],
    )
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--max-turns",
        "300",
        "-p",
        "read every file under data/",
    ]))
    .await;
    assert_success(&output);
    assert_eq!(stdout(&output).trim(), "Read them all.");
    let requests = server.requests();
    let largest = requests
        .iter()
        .map(|r| r.body.to_string().len())
        .max()
        .unwrap();
    (largest, requests.len())
}

/// A day-long session stays within its window: with compaction the largest request of a
/// 200-turn session stays near the threshold, without it the request grows with every turn.
#[tokio::test]
async fn a_200_turn_session_with_large_results_stays_within_its_window() {
    let window = 30_000;
    let (with, requests_with) = largest_request_of_a_long_session(window).await;
    let (without, requests_without) = largest_request_of_a_long_session(100_000_000).await;
    eprintln!(
        "largest request of 200 turns: {with} bytes with compaction ({requests_with} requests), \
         {without} bytes without ({requests_without} requests)"
    );
    assert_eq!(requests_without, 201);
    assert!(requests_with > 201, "no compaction happened");
    // About four bytes a token: the largest request stays near the window.
    assert!(with < window as usize * 4, "{with} bytes");
    assert!(without > 10 * with, "{without} against {with}");
}

#[tokio::test]
async fn at_paths_attach_text_and_images_in_both_wire_formats() {
    for kind in KINDS {
        let project = Project::new();
        project.write("notes.md", "# Notes\nship on Friday\n");
        std::fs::write(project.path().join("shot.png"), [0x89, b'P', b'N', b'G']).unwrap();
        let server = ScriptedServer::start(vec![Turn::text("Friday.")]).await;
        let output = run(project
            .agent(&server, kind)
            .args(["-p", "when do we ship? see @notes.md and @shot.png"]))
        .await;
        assert_success(&output);
        let sent = server.bodies()[0]["messages"].to_string();
        assert!(sent.contains("ship on Friday"), "{sent}");
        match kind {
            ProviderKind::Anthropic => assert!(
                sent.contains(r#"{"data":"iVBORw==","media_type":"image/png","type":"base64"}"#),
                "{sent}"
            ),
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
                assert!(sent.contains("data:image/png;base64,iVBORw=="), "{sent}")
            }
        }
    }
}

/// What a person reads from the commands: `/help`, `/permissions` with each rule's origin,
/// `/context` (its figures follow the system prompt and the tools' descriptions), `/model`, `/cost` with a price from the settings, and the line after a turn.
#[tokio::test]
async fn the_commands_tell_a_person_what_the_session_holds() {
    let project = Project::new();
    std::fs::write(
        project.home().join("settings.json"),
        json!({
            "permissions": {"deny": ["shell(rm:*)"]},
            "prices": {"test-model": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}},
        })
        .to_string(),
    )
    .unwrap();
    project.write(
        ".agent-cli/settings.json",
        r#"{"permissions": {"ask": ["write_file"]}}"#,
    );
    let server = ScriptedServer::start(vec![Turn::text("Hello.").usage(ScriptUsage {
        input: 1_200,
        output: 300,
        cache_read: 10_000,
        cache_write: 2_000,
    })])
    .await;
    let output = run_with_input(
        project
            .agent(&server, ProviderKind::Anthropic)
            .args(["--allow", "shell(cargo test:*)"]),
        "/help\n/permissions\nhello\n/context\n/cost\n/model claude-sonnet-4-5\n/model\n",
    )
    .await;
    assert_success(&output);
    insta::assert_snapshot!("commands_stdout", project.redact(&stdout(&output)));
    let err = stderr(&output);
    let line = err
        .lines()
        .find_map(|l| l.split_once("tokens: "))
        .unwrap()
        .1;
    assert_eq!(
        line,
        "1.2k in · 300 out · 10.0k cache read · 2.0k cache write · $0.0186 (session $0.0186)"
    );
}

#[tokio::test]
async fn a_failed_automatic_compaction_leaves_the_conversation_as_it_was() {
    let project = small_window_project();
    let server = ScriptedServer::start(vec![
        Turn::tool_use("toolu_1", "read_file", json!({"path": "small.txt"})).usage(usage(9_000)),
        // The summary request is answered with a call instead of text.
        Turn::tool_use("toolu_2", "glob", json!({"pattern": "*"})),
        Turn::text("Done."),
    ])
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "look at small.txt"]))
    .await;
    assert_success(&output);
    assert_eq!(stdout(&output).trim(), "Done.");
    assert!(
        stderr(&output).contains(
            "could not be compacted: the model answered the summary request without text"
        ),
        "{}",
        stderr(&output)
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    // The request after it carries the whole conversation, unchanged.
    assert_eq!(messages(&bodies[2]).len(), 3, "{}", outline(&bodies[2]));
    assert!(!bodies[2].to_string().contains("conversation-summary"));
}

/// A window the system prompt and tools nearly fill on their own: one compaction cannot bring
/// the context under the threshold, so the turn says so and goes on without compacting before
/// every later request.
#[tokio::test]
async fn a_compaction_that_cannot_help_is_not_repeated_within_the_turn() {
    let project = Project::new();
    std::fs::write(
        project.home().join("settings.json"),
        r#"{"contextWindow": 3000}"#,
    )
    .unwrap();
    project.write("a.txt", "alpha\n");
    let server = ScriptedServer::routed(
        vec![
            Turn::tool_use("toolu_1", "read_file", json!({"path": "a.txt"})).usage(usage(2_800)),
            Turn::tool_use("toolu_2", "read_file", json!({"path": "a.txt"})).usage(usage(2_900)),
            Turn::tool_use("toolu_3", "read_file", json!({"path": "a.txt"})).usage(usage(3_000)),
            Turn::text("Read it three times.").usage(usage(3_100)),
        ],
        vec![(
            Matcher::last_user("Your context is nearly full"),
            vec![Turn::text("Goal: read a.txt.").usage(usage(3_500))],
        )],
    )
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "read a.txt three times"]))
    .await;
    assert_success(&output);
    assert_eq!(stdout(&output).trim(), "Read it three times.");
    let summaries = server
        .bodies()
        .iter()
        .filter(|body| body.to_string().contains("Your context is nearly full"))
        .count();
    assert_eq!(summaries, 1, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("still past the threshold after compacting"),
        "{}",
        stderr(&output)
    );
}
