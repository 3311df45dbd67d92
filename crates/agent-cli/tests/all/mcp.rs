//! The binary with real MCP servers: a deferred tool found with tool_search and used (through
//! execute_tool, and inline), a server connecting mid-session while the request's tools stay
//! byte-identical, `mcp list`, and `mcp serve` driven by the official Python SDK's client.

use std::process::Stdio;

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// The reference memory server, keeping its graph in the project.
fn memory_server(project: &Project) -> Value {
    json!({
        "command": "node",
        "args": [npm_server("server-memory")],
        "env": {"MEMORY_FILE_PATH": project.path().join("memory.jsonl")},
    })
}

fn ada() -> Value {
    json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]})
}

/// Proxy: the tools array never changes; the found tool is called through execute_tool.
#[tokio::test]
async fn a_deferred_tool_is_found_and_called_through_execute_tool() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let project = Project::new();
    project.mcp_json(&json!({"memory": memory_server(&project)}));
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "toolu_search",
            "tool_search",
            json!({"query": "create entities in the knowledge graph"}),
        ),
        Turn::tool_use(
            "toolu_run",
            "execute_tool",
            json!({"tool_name": "mcp__memory__create_entities", "input": ada()}),
        ),
        Turn::text("Ada is remembered."),
    ])
    .await;

    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .arg("--trust-project")
        .args(["--activation", "proxy", "--allow", "mcp__memory"])
        .args(["-p", "Remember Ada"]))
    .await;

    assert_success(&output);
    assert_eq!(stdout(&output), "Ada is remembered.\n");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let found = tool_results(&bodies[1]);
    assert!(
        found[0].1.contains("mcp__memory__create_entities") && found[0].1.contains("execute_tool"),
        "{found:?}"
    );
    let called = tool_results(&bodies[2]);
    assert!(!called[1].0, "{called:?}");
    assert!(called[1].1.contains("Ada"), "{called:?}");
    assert!(
        project
            .read("memory.jsonl")
            .contains("wrote the first program")
    );
    // The deferred tools are announced by name, and the array stays the same throughout.
    assert!(
        bodies[0]["system"]
            .to_string()
            .contains("mcp__memory__create_entities")
    );
    assert!(!tool_names(&bodies[0]).contains(&"mcp__memory__create_entities".to_owned()));
    assert_eq!(bodies[0]["tools"], bodies[1]["tools"]);
    assert_eq!(bodies[1]["tools"], bodies[2]["tools"]);
}

/// Inline: the found tool's schema joins the array from the next request on, after the stable
/// part, and the model calls it by its own name.
#[tokio::test]
async fn a_deferred_tool_is_found_and_called_inline() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    for kind in KINDS {
        let project = Project::new();
        project.mcp_json(&json!({"memory": memory_server(&project)}));
        let server = ScriptedServer::start(vec![
            Turn::tool_use(
                "call_search",
                "tool_search",
                json!({"query": "select:mcp__memory__create_entities"}),
            ),
            Turn::tool_use("call_create", "mcp__memory__create_entities", ada()),
            Turn::text("Ada is remembered."),
        ])
        .await;

        let output = run(project
            .agent(&server, kind)
            .arg("--trust-project")
            .args(["--activation", "inline", "--allow", "mcp__memory"])
            .args(["-p", "Remember Ada"]))
        .await;

        assert_success(&output);
        let bodies = server.bodies();
        let before = tool_names(&bodies[0]);
        let after = tool_names(&bodies[1]);
        assert!(!before.contains(&"mcp__memory__create_entities".to_owned()));
        assert_eq!(
            after[..before.len()],
            before[..],
            "the stable part stays first"
        );
        assert_eq!(after[before.len()..], ["mcp__memory__create_entities"]);
        let called = tool_results(&bodies[2]);
        assert!(!called[1].0, "{kind:?}: {called:?}");
        assert!(project.read("memory.jsonl").contains("Ada"));
    }
}

/// A server that connects after the first request: in always-defer mode with the proxy the
/// tools array keeps its bytes, and the new tools arrive as a delta message.
#[tokio::test]
async fn a_server_connecting_mid_session_leaves_the_tools_array_unchanged() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let project = Project::new();
    let gate = project.path().join("gate");
    // The server starts only once the test opens the gate, after the first request.
    project.mcp_json(&json!({"memory": {
        "command": "sh",
        "args": ["-c", "while [ ! -f \"$GATE\" ]; do sleep 0.05; done; exec node \"$SERVER\""],
        "env": {"GATE": gate, "SERVER": npm_server("server-memory"), "MEMORY_FILE_PATH": project.path().join("memory.jsonl")},
    }}));
    let server = ScriptedServer::start(vec![
        Turn::text("Hello."),
        Turn::text("Now I can remember things."),
    ])
    .await;

    let mut child = project
        .agent(&server, ProviderKind::Anthropic)
        .arg("--trust-project")
        .args(["--defer-tools", "true", "--activation", "proxy"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();

    stdin.write_all(b"hi\n").await.unwrap();
    server.wait_for_requests(1).await;
    std::fs::write(&gate, b"").unwrap();
    let connected = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("mcp: memory connected") {
                return line;
            }
        }
        panic!("agent-cli ended before the server connected");
    })
    .await
    .expect("the memory server did not connect within a minute");
    assert!(connected.contains("tools"), "{connected}");
    stdin.write_all(b"what can you do now?\n").await.unwrap();
    server.wait_for_requests(2).await;
    drop(stdin);
    let status = child.wait().await.unwrap();
    assert!(status.success());

    let bodies = server.bodies();
    assert_eq!(
        serde_json::to_vec(&bodies[0]["tools"]).unwrap(),
        serde_json::to_vec(&bodies[1]["tools"]).unwrap(),
        "the tools array's bytes changed when a server connected"
    );
    assert_eq!(bodies[0]["system"], bodies[1]["system"]);
    let last = messages(&bodies[1]).last().unwrap().to_string();
    assert!(last.contains("mcp__memory__create_entities"), "{last}");
}

#[tokio::test]
async fn mcp_list_shows_each_server_its_state_and_its_tools() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let project = Project::new();
    project.mcp_json(&json!({
        "memory": memory_server(&project),
        "missing": {"command": "no-such-mcp-server-command"},
    }));

    let output = run(project.command().args(["mcp", "list", "--trust-project"])).await;

    assert_success(&output);
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("memory ") && lines[0].contains("connected, 9 tools"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("missing ")
            && lines[1].contains("failed: ")
            && lines[1].contains("no-such-mcp-server-command"),
        "{text}"
    );
}

#[tokio::test]
async fn mcp_list_without_servers_says_how_to_add_them() {
    let project = Project::new();
    let output = run(project.command().args(["mcp", "list"])).await;
    assert_success(&output);
    insta::assert_snapshot!(stdout(&output));
}

/// The official Python SDK's client lists our tools and calls read_file and tool_search over
/// `agent-cli mcp serve`.
#[tokio::test]
async fn the_python_sdk_client_uses_agent_cli_mcp_serve() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let project = Project::new();
    project.write("notes.txt", "served over MCP\n");
    let output = run(tokio::process::Command::new(venv_python())
        .arg(fixture!("mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_agent-cli"))
        .current_dir(project.path())
        .env("AGENT_CLI_HOME", project.home())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped()))
    .await;

    assert_success(&output);
    let seen: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for expected in ["read_file", "edit_file", "grep", "shell", "tool_search"] {
        assert!(tools.contains(&expected), "{tools:?}");
    }
    // Deferred tools are not listed: the client finds them with tool_search.
    assert!(tools.contains(&"execute_tool"), "{tools:?}");
    assert!(!tools.contains(&"enter_plan_mode"), "{tools:?}");
    assert_eq!(seen["read_file"]["is_error"], false);
    assert!(
        seen["read_file"]["text"]
            .as_str()
            .unwrap()
            .contains("served over MCP")
    );
    assert_eq!(seen["tool_search"]["is_error"], false);
    assert!(
        seen["tool_search"]["text"]
            .as_str()
            .unwrap()
            .contains("enter_plan_mode"),
        "{seen}"
    );
    // Our permission rules apply: with nobody to ask, a command that changes things is denied.
    assert_eq!(seen["shell"]["is_error"], true);
    assert!(project.path().join("notes.txt").exists());
}

/// An MCP tool's 200k-character result is saved whole under the session's directory; the model
/// reads the middle of it back with read_file at the path the preview gives.
#[tokio::test]
async fn an_oversized_mcp_result_is_read_back_from_its_saved_file() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let project = Project::new();
    project.mcp_json(&json!({"everything": {
        "command": "node",
        "args": [npm_server("server-everything"), "stdio"],
    }}));
    // A session of known id, so the script knows where the result will be saved.
    let id = "1700000000-0abc123";
    let sessions = project.home().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        sessions.join(format!("{id}.jsonl")),
        format!(
            "{}\n",
            json!({"type": "meta", "id": id, "cwd": project.path(), "created": 0})
        ),
    )
    .unwrap();
    let message: String = (0..2_000)
        .map(|n| format!("line {n:04} {}\n", "x".repeat(90)))
        .collect();
    assert!(message.len() > 200_000);
    let saved = sessions.join(id).join("tool-results/toolu_big.txt");
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "toolu_big",
            "mcp__everything__echo",
            json!({"message": message}),
        ),
        Turn::tool_use(
            "toolu_read",
            "read_file",
            json!({"path": saved, "offset": 1001, "limit": 2}),
        ),
        Turn::text("Read it."),
    ])
    .await;

    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .arg("--trust-project")
        .args(["--defer-tools", "false", "--allow", "mcp__everything"])
        .args(["--resume", id, "-p", "Echo a lot"]))
    .await;

    assert_success(&output);
    let bodies = server.bodies();
    let preview = tool_results(&bodies[1]);
    assert!(
        preview[0].1.contains(&saved.display().to_string()),
        "{preview:?}"
    );
    let read = tool_results(&bodies[2]);
    assert!(!read[1].0, "{read:?}");
    assert!(
        read[1].1.contains("line 1000") && read[1].1.contains("line 1001"),
        "{read:?}"
    );
    assert!(!read[1].1.contains("line 0999"), "{read:?}");
}

/// `mcp serve` declares `tools.listChanged`: when an upstream server's tools change, the Python
/// SDK's client is told (on a `subscriptions/listen` stream with protocol 2026-07-28, as a plain
/// notification with the earlier ones), lists the new tool and calls it through the gateway.
#[tokio::test]
async fn an_upstream_tool_list_change_reaches_the_client() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    for (mode, listens) in [("auto", true), ("legacy", false)] {
        let seen = list_changed_session(mode, &["--defer-tools", "false"], &[]).await;
        let names = |key: &str| -> Vec<String> {
            seen[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned())
                .collect()
        };
        assert!(
            names("before").contains(&"mcp__grow__grow".to_owned()),
            "{seen}"
        );
        assert!(
            !names("before").contains(&"mcp__grow__sprout".to_owned()),
            "{seen}"
        );
        assert_eq!(seen["grow"], "grown", "{seen}");
        assert_eq!(seen["listened"], listens, "{mode}: {seen}");
        assert_eq!(seen["notified"], true, "{mode}: {seen}");
        assert!(
            names("after").contains(&"mcp__grow__sprout".to_owned()),
            "{seen}"
        );
        assert_eq!(seen["sprout"], "sprouted", "{seen}");
        assert_eq!(seen["sprout_error"], false, "{seen}");
    }
}

/// What the list-changed client saw, connecting with the SDK's `mode`, the gateway started with
/// `--trust-project --allow mcp__grow` and `serve_args`, and `env` for the client.
async fn list_changed_session(mode: &str, serve_args: &[&str], env: &[(&str, &str)]) -> Value {
    let project = Project::new();
    let server = fixture!("growing_server.py");
    project.mcp_json(&json!({"grow": {"command": venv_python(), "args": [server]}}));
    run_json(
        tokio::process::Command::new(venv_python())
            .arg(fixture!("list_changed_client.py"))
            .arg(env!("CARGO_BIN_EXE_agent-cli"))
            .args(["--trust-project", "--allow", "mcp__grow"])
            .args(serve_args)
            .current_dir(project.path())
            .env("AGENT_CLI_HOME", project.home())
            .env("MCP_CLIENT_MODE", mode)
            .envs(env.iter().copied()),
    )
    .await
}

/// With `--activation inline`, a search adds the tools it found to what the gateway lists, and
/// the client is told; it then calls the found tool by its own name.
#[tokio::test]
async fn an_inline_search_adds_the_found_tool_to_the_clients_list() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let trigger = r#"{"name": "tool_search", "arguments": {"query": "select:mcp__grow__grow"}}"#;
    for mode in ["auto", "legacy"] {
        let seen = list_changed_session(
            mode,
            &["--activation", "inline"],
            &[("TRIGGER", trigger), ("THEN", "mcp__grow__grow")],
        )
        .await;
        let listed = |key: &str| {
            seen[key]
                .as_array()
                .unwrap()
                .contains(&json!("mcp__grow__grow"))
        };
        assert!(!listed("before"), "{mode}: {seen}");
        assert_eq!(seen["notified"], true, "{mode}: {seen}");
        assert!(listed("after"), "{mode}: {seen}");
        assert_eq!(seen["sprout"], "grown", "{mode}: {seen}");
    }
}

/// An upstream server that dies mid-call: the call is an error result, and the client is told
/// that the list changed (the server's tools went, and come back when it is started again).
#[tokio::test]
async fn a_crashing_upstream_server_is_announced_to_the_client() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let trigger = r#"{"name": "mcp__grow__crash", "arguments": {}}"#;
    for mode in ["auto", "legacy"] {
        let seen = list_changed_session(
            mode,
            &["--defer-tools", "false"],
            &[("TRIGGER", trigger), ("THEN", "mcp__grow__grow")],
        )
        .await;
        assert_eq!(seen["grow_error"], true, "{mode}: {seen}");
        assert_eq!(seen["notified"], true, "{mode}: {seen}");
    }
}
