//! Sub-agents through the real binary in print mode: the `agent` tool starts conversations of
//! their own against the same scripted server, each answered by its own script.

use std::path::{Path, PathBuf};

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{Gate, Matcher, ScriptUsage, ScriptedServer, Turn};

/// The recorded request bodies of the conversation whose first user message contains `prompt`.
fn conversation(server: &ScriptedServer, prompt: &str) -> Vec<Value> {
    server
        .bodies()
        .into_iter()
        .filter(|body| {
            messages(body)
                .iter()
                .find(|m| m["role"] == "user")
                .is_some_and(|m| m["content"].to_string().contains(prompt))
        })
        .collect()
}

/// The system prompt of a recorded request, in either wire format.
fn system(body: &Value) -> String {
    match &body["system"] {
        Value::Null => messages(body)
            .iter()
            .filter(|m| m["role"] == "system")
            .map(|m| m["content"].to_string())
            .collect(),
        other => other.to_string(),
    }
}

/// The side transcripts of `call_id` in the only session under `home`.
fn side_transcripts(home: &Path, call_id: &str) -> Vec<PathBuf> {
    let sessions = home.join("sessions");
    let mut found = Vec::new();
    for session in std::fs::read_dir(&sessions).unwrap() {
        let dir = session.unwrap().path().join("subagents").join(call_id);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            found.extend(entries.map(|e| e.unwrap().path()));
        }
    }
    found
}

fn explore(id: &str, prompt: &str) -> (String, Value) {
    (
        id.to_owned(),
        json!({"description": "look around", "prompt": prompt, "subagent_type": "explore"}),
    )
}

/// Two read-only sub-agents asked for in one message run at the same time (each one's first
/// answer waits until both conversations have asked), and their answers come back in the order
/// the model asked for them, each from its own conversation with only its type's tools.
#[tokio::test]
async fn two_read_only_sub_agents_run_at_once_and_answer_in_order() {
    for kind in KINDS {
        let project = Project::new();
        project.write("a.txt", "alpha\n");
        let both = Gate::new(2);
        let (a, a_input) = explore("call_a", "Find alpha");
        let (b, b_input) = explore("call_b", "Find beta");
        let server = ScriptedServer::routed(
            vec![
                Turn::text("Asking two explorers.")
                    .then_tool_use(&a, "agent", a_input)
                    .then_tool_use(&b, "agent", b_input),
                Turn::text("alpha is in a.txt; beta is nowhere."),
            ],
            vec![
                (
                    Matcher::first_user("Find alpha"),
                    vec![
                        Turn::tool_use("a_grep", "grep", json!({"pattern": "alpha"})).gated(&both),
                        Turn::text("alpha is in a.txt"),
                    ],
                ),
                (
                    Matcher::first_user("Find beta"),
                    vec![Turn::text("beta is nowhere").gated(&both)],
                ),
            ],
        )
        .await;

        let output = run(project
            .agent(&server, kind)
            .args(["-p", "Where are alpha and beta?"]))
        .await;

        assert_success(&output);
        assert_eq!(stdout(&output), "alpha is in a.txt; beta is nowhere.\n");
        let main = conversation(&server, "Where are alpha and beta?");
        assert_eq!(main.len(), 2, "{kind:?}");
        assert!(tool_names(&main[0]).contains(&"agent".to_owned()));
        assert_eq!(
            tool_results(&main[1]),
            [
                (false, "alpha is in a.txt".to_owned()),
                (false, "beta is nowhere".to_owned())
            ],
            "{kind:?}"
        );
        let alpha = conversation(&server, "Find alpha");
        assert_eq!(alpha.len(), 2, "{kind:?}");
        assert_eq!(
            tool_names(&alpha[0]),
            ["glob", "grep", "read_file", "shell"],
            "a sub-agent sees only its type's tools, and never the agent tool"
        );
        assert!(system(&alpha[0]).contains("You are the explore sub-agent"));
        assert_eq!(alpha[0]["model"], "test-model");
        let grep = tool_results(&alpha[1]);
        assert!(!grep[0].0 && grep[0].1.contains("a.txt"), "{grep:?}");
    }
}

/// A sub-agent's calls of tools outside its type are refused with what it may use instead, a
/// read-only type's shell runs only commands that read, and a sub-agent cannot start another:
/// nothing is written.
#[tokio::test]
async fn a_sub_agent_is_refused_what_its_type_does_not_allow() {
    let project = Project::new();
    project.write("keep.txt", "keep me\n");
    let (id, input) = explore("call_x", "Try to write");
    let server = ScriptedServer::routed(
        vec![
            Turn::tool_use(&id, "agent", input),
            Turn::text("The explorer could not write."),
        ],
        vec![(
            Matcher::first_user("Try to write"),
            vec![
                Turn::tool_use(
                    "x_write",
                    "write_file",
                    json!({"path": "new.txt", "content": "x"}),
                )
                .then_tool_use("x_rm", "shell", json!({"command": "rm keep.txt"}))
                .then_tool_use(
                    "x_agent",
                    "agent",
                    json!({"description": "nest", "prompt": "Go deeper"}),
                ),
                Turn::text("I may only read."),
            ],
        )],
    )
    .await;

    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--permission-mode",
        "bypass",
        "-p",
        "Write something",
    ]))
    .await;

    assert_success(&output);
    assert!(!project.path().join("new.txt").exists());
    assert_eq!(project.read("keep.txt"), "keep me\n");
    let sub = conversation(&server, "Try to write");
    assert_eq!(sub.len(), 2);
    let refused = tool_results(&sub[1]);
    assert!(refused.iter().all(|(error, _)| *error), "{refused:?}");
    let texts: Vec<String> = refused.into_iter().map(|(_, text)| text).collect();
    insta::assert_snapshot!(texts.join("\n"));
    let main = conversation(&server, "Write something");
    assert_eq!(
        tool_results(&main[1]),
        [(false, "I may only read.".to_owned())]
    );
}

/// An agent type from the project's `.claude/agents/` (Claude Code's format: tools as a
/// comma-separated string in Claude Code's names, its own model, the body as the system prompt)
/// is offered to the model and runs with exactly its tools; a broken agent file is a warning
/// naming it, not a failure.
#[tokio::test]
async fn a_custom_agent_type_from_claude_agents_runs_with_its_tools_and_model() {
    let project = Project::new();
    project.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews a change for bugs.\ntools: Read, Grep\nmodel: review-model\ncolor: red\n---\nYou review code and list bugs.\n",
    );
    project.write(".claude/agents/broken.md", "---\nname: broken\n");
    let server = ScriptedServer::routed(
        vec![
            Turn::tool_use(
                "call_r",
                "agent",
                json!({"description": "review", "prompt": "Review src", "subagent_type": "reviewer"}),
            ),
            Turn::text("Reviewed."),
        ],
        vec![(
            Matcher::system("You review code and list bugs."),
            vec![Turn::text("No bugs found.")],
        )],
    )
    .await;

    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "Review my change"]))
    .await;

    assert_success(&output);
    let warnings = stderr(&output);
    assert!(
        warnings.contains(".claude/agents/broken.md") && warnings.contains("skipped"),
        "{warnings}"
    );
    let main = conversation(&server, "Review my change");
    let agent_tool = main[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "agent")
        .unwrap();
    insta::assert_snapshot!(agent_tool["description"].as_str().unwrap());
    let review = conversation(&server, "Review src");
    assert_eq!(review.len(), 1);
    assert_eq!(review[0]["model"], "review-model");
    assert_eq!(tool_names(&review[0]), ["grep", "read_file"]);
    assert_eq!(
        tool_results(&main[1]),
        [(false, "No bugs found.".to_owned())]
    );
}

/// Each sub-agent's conversation is saved beside the session as it happens, and the main
/// session's transcript says where.
#[tokio::test]
async fn the_side_transcript_is_saved_and_the_session_points_at_it() {
    let project = Project::new();
    let (id, input) = explore("call_t", "Summarise the project");
    let server = ScriptedServer::routed(
        vec![
            Turn::tool_use(&id, "agent", input),
            Turn::text("Summarised."),
        ],
        vec![(
            Matcher::first_user("Summarise the project"),
            vec![Turn::text("It is empty.")],
        )],
    )
    .await;

    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-format",
        "json",
        "-p",
        "Summarise",
    ]))
    .await;

    assert_success(&output);
    let summary: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let session = summary["session_id"].as_str().unwrap();
    let side = side_transcripts(project.home(), "call_t");
    assert_eq!(side.len(), 1, "{side:?}");
    assert!(
        side[0].starts_with(project.home().join("sessions").join(session)),
        "{side:?}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&side[0])
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "meta");
    assert_eq!(
        lines[1]["message"]["content"][0]["text"],
        "Summarise the project"
    );
    assert_eq!(lines[2]["message"]["content"][0]["text"], "It is empty.");
    let main_transcript = project
        .home()
        .join("sessions")
        .join(format!("{session}.jsonl"));
    let main_text = std::fs::read_to_string(main_transcript).unwrap();
    assert!(
        main_text.contains(&format!("\"transcript\":\"{}\"", side[0].display())),
        "{main_text}"
    );
}

/// A resumed session shows the conversation so far before its first prompt, and under the
/// `agent` call what the sub-agent did, read from its side transcript.
#[tokio::test]
async fn a_resumed_session_shows_what_its_sub_agents_did() {
    let project = Project::new();
    project.write("src/config.rs", "pub fn load_config() {}\n");
    let (id, input) = explore("call_r", "Find where the config is loaded");
    let server = ScriptedServer::routed(
        vec![
            Turn::text("I will ask an explorer.").then_tool_use(&id, "agent", input),
            Turn::text("The config is loaded in src/config.rs."),
        ],
        vec![(
            Matcher::first_user("Find where the config is loaded"),
            vec![
                Turn::tool_use("r_grep", "grep", json!({"pattern": "load_config"})),
                Turn::tool_use("r_read", "read_file", json!({"path": "src/config.rs"})),
                Turn::text("In src/config.rs, by load_config."),
            ],
        )],
    )
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "Where is the config loaded?"]))
    .await;
    assert_success(&output);

    let resumed = run_with_input(
        project
            .agent(&server, ProviderKind::Anthropic)
            .arg("--continue"),
        "/exit\n",
    )
    .await;

    assert_success(&resumed);
    let err = stderr(&resumed);
    let recap = err
        .split_once("── the conversation so far ──\n")
        .and_then(|(_, rest)| rest.split_once("\n──"))
        .map(|(recap, _)| recap)
        .unwrap_or_else(|| panic!("no recap in:\n{err}"));
    insta::assert_snapshot!(project.redact(recap));
    assert_eq!(
        server.requests().len(),
        5,
        "showing the recap asks the model nothing"
    );
}

/// What sub-agents spend is part of the run's usage in `--output-format json`.
#[tokio::test]
async fn sub_agents_usage_is_in_the_json_usage() {
    let project = Project::new();
    let (id, input) = explore("call_u", "Count files");
    let spent = |input, output| ScriptUsage {
        input,
        output,
        ..ScriptUsage::default()
    };
    let server = ScriptedServer::routed(
        vec![
            Turn::tool_use(&id, "agent", input).usage(spent(100, 10)),
            Turn::text("Counted.").usage(spent(200, 20)),
        ],
        vec![(
            Matcher::first_user("Count files"),
            vec![Turn::text("None.").usage(spent(3, 4))],
        )],
    )
    .await;

    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--output-format",
        "json",
        "-p",
        "How many files?",
    ]))
    .await;

    assert_success(&output);
    let summary: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(summary["usage"]["input_tokens"], 303, "{summary}");
    assert_eq!(summary["usage"]["output_tokens"], 34, "{summary}");
}

/// Ctrl-C while a sub-agent waits for its model cancels the sub-agent's turn with the main
/// one: the run ends at once as cancelled, and the sub-agent's transcript keeps what it had.
#[tokio::test]
async fn ctrl_c_cancels_a_running_sub_agent() {
    let project = Project::new();
    let (id, input) = explore("call_c", "Look forever");
    let server = ScriptedServer::routed(
        vec![Turn::tool_use(&id, "agent", input)],
        vec![(
            Matcher::first_user("Look forever"),
            vec![Turn::stall("Still looking")],
        )],
    )
    .await;

    let child = project
        .agent(&server, ProviderKind::Anthropic)
        .args(["--output-format", "json", "-p", "Look"])
        .spawn()
        .unwrap();
    server.wait_for_requests(2).await;
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the run did not end after Ctrl-C")
        .unwrap();

    let summary: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(summary["subtype"], "cancelled", "{summary}");
    let side = side_transcripts(project.home(), "call_c");
    let saved = std::fs::read_to_string(&side[0]).unwrap();
    assert!(saved.contains("Look forever"), "{saved}");
    assert!(!saved.contains("Still looking"), "{saved}");
}

/// A sub-agent asks permission as the main agent would: in print mode nobody can answer, so a
/// write its type allows is still denied by default, and the session's mode (accept_edits)
/// lets it through.
#[tokio::test]
async fn a_sub_agent_follows_the_sessions_permissions() {
    for (mode, written) in [("default", false), ("accept_edits", true)] {
        let project = Project::new();
        project.write(
            ".claude/agents/writer.md",
            "---\nname: writer\ndescription: Writes files.\ntools: Read, Write\n---\nWrite what you are asked to.\n",
        );
        let server = ScriptedServer::routed(
            vec![
                Turn::tool_use(
                    "call_w",
                    "agent",
                    json!({"description": "write", "prompt": "Write new.txt", "subagent_type": "writer"}),
                ),
                Turn::text("Done."),
            ],
            vec![(
                Matcher::first_user("Write new.txt"),
                vec![
                    Turn::tool_use(
                        "w1",
                        "write_file",
                        json!({"path": "new.txt", "content": "new\n"}),
                    ),
                    Turn::text("Finished."),
                ],
            )],
        )
        .await;

        let output = run(project.agent(&server, ProviderKind::Anthropic).args([
            "--permission-mode",
            mode,
            "-p",
            "Make new.txt",
        ]))
        .await;

        assert_success(&output);
        assert_eq!(project.path().join("new.txt").exists(), written, "{mode}");
        let sub = conversation(&server, "Write new.txt");
        let results = tool_results(&sub[1]);
        assert_eq!(results[0].0, !written, "{mode}: {results:?}");
        if !written {
            assert!(results[0].1.contains("non-interactive"), "{results:?}");
        }
    }
}
