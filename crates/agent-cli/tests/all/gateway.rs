//! `mcp serve --http`: the official Python SDK's client over streamable HTTP (both protocol
//! generations), the bearer token, and two gateway processes answering one client in turns.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Child;

use crate::support::cli::*;

/// A gateway serving `project` over HTTP on a free loopback port, with `extra` arguments; the
/// child (killed when dropped) and its URL.
async fn gateway(project: &Project, extra: &[&str]) -> (Child, String) {
    let mut child = project
        .command()
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .env("GATEWAY_TOKEN", "s3cret-token")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("serving MCP on ") {
                return url.to_owned();
            }
        }
        panic!("the gateway ended without serving");
    })
    .await
    .unwrap();
    // Keep draining its stderr so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

async fn python_client(project: &Project, url: &str, token: &str, mode: &str) -> Value {
    run_json(
        tokio::process::Command::new(venv_python())
            .arg(fixture!("http_client.py"))
            .args([url, token])
            .current_dir(project.path())
            .env("MCP_CLIENT_MODE", mode),
    )
    .await
}

#[tokio::test]
async fn the_python_sdk_client_uses_the_gateway_over_http_with_its_token() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let project = Project::new();
    project.write("notes.txt", "served over HTTP\n");
    let (_gateway, url) = gateway(&project, &["--token-env", "GATEWAY_TOKEN"]).await;
    for mode in ["auto", "legacy"] {
        let seen = python_client(&project, &url, "s3cret-token", mode).await;
        assert!(seen.get("failed").is_none(), "{mode}: {seen}");
        let tools = seen["tools"].as_array().unwrap();
        assert!(tools.contains(&json!("tool_search")), "{mode}: {seen}");
        assert!(tools.contains(&json!("execute_tool")), "{mode}: {seen}");
        assert_eq!(seen["read_file"]["is_error"], false, "{mode}: {seen}");
        assert!(
            seen["read_file"]["text"]
                .as_str()
                .unwrap()
                .contains("served over HTTP"),
            "{mode}: {seen}"
        );
        assert!(
            seen["tool_search"]["text"]
                .as_str()
                .unwrap()
                .contains("enter_plan_mode"),
            "{mode}: {seen}"
        );
        // Bad input is an error result that says what is wrong, and the gateway carries on.
        assert_eq!(seen["unknown"]["is_error"], true, "{mode}: {seen}");
        assert!(
            seen["unknown"]["text"]
                .as_str()
                .unwrap()
                .contains("no_such_tool"),
            "{mode}: {seen}"
        );
        assert_eq!(seen["invalid"]["is_error"], true, "{mode}: {seen}");
    }
    let refused = python_client(&project, &url, "-", "auto").await;
    assert!(
        refused["failed"].as_str().is_some_and(|f| !f.is_empty()),
        "{refused}"
    );
    let wrong = python_client(&project, &url, "not-the-token", "auto").await;
    assert!(wrong.get("failed").is_some(), "{wrong}");
}

/// One JSON-RPC request on protocol 2026-07-28, which needs no session: its headers and `_meta`
/// say everything.
async fn post(client: &reqwest::Client, url: &str, id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("Mcp-Name", name);
    }
    let response = request
        .body(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// Stateless: two gateway processes behind no shared state answer one client whose requests
/// alternate between them, every call answered.
#[tokio::test]
async fn two_gateway_processes_answer_one_client_in_turns() {
    let project = Project::new();
    project.write("notes.txt", "either process\n");
    let (_first, first) = gateway(&project, &[]).await;
    let (_second, second) = gateway(&project, &[]).await;
    tool_core::net::install_crypto_provider();
    let client = reqwest::Client::new();
    for id in 0..12 {
        let url = if id % 2 == 0 { &first } else { &second };
        let answer = match id % 3 {
            0 => post(&client, url, id, "tools/list", json!({})).await,
            1 => {
                let params = json!({"name": "read_file", "arguments": {"path": "notes.txt"}});
                post(&client, url, id, "tools/call", params).await
            }
            _ => {
                let params =
                    json!({"name": "tool_search", "arguments": {"query": "weather forecast"}});
                post(&client, url, id, "tools/call", params).await
            }
        };
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.get("error").is_none(), "{answer}");
        let result = &answer["result"];
        match id % 3 {
            0 => assert!(result["tools"].as_array().is_some_and(|t| !t.is_empty())),
            1 => assert!(
                result["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("either process")
            ),
            _ => assert_eq!(result["isError"], false, "{answer}"),
        }
    }
    // execute_tool by name needs no search in the same process: the first process's search
    // found the tool, the second one runs it.
    let search = json!({"name": "tool_search", "arguments": {"query": "select:enter_plan_mode"}});
    let found = post(&client, &first, 100, "tools/call", search).await;
    assert_eq!(found["result"]["isError"], false, "{found}");
    let call = json!({
        "name": "execute_tool",
        "arguments": {"tool_name": "enter_plan_mode", "input": {}},
    });
    let ran = post(&client, &second, 101, "tools/call", call).await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
}

#[tokio::test]
async fn a_gateway_reachable_from_elsewhere_needs_a_token() {
    let project = Project::new();
    let output = run(project
        .command()
        .args(["mcp", "serve", "--http", "0.0.0.0:0"]))
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--token-env"),
        "{}",
        stderr(&output)
    );
    let output = run(project.command().args([
        "mcp",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--token-env",
        "UNSET_TOKEN_VARIABLE",
    ]))
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("UNSET_TOKEN_VARIABLE"),
        "{}",
        stderr(&output)
    );
}

/// `--config FILE` fronts the servers of that file (not the project's): their tools are listed
/// and called through the gateway; with `--no-builtins`, nothing else is.
#[tokio::test]
async fn the_gateway_fronts_the_servers_of_a_config_file() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let project = Project::new();
    let server = fixture!("growing_server.py");
    let config = project.path().join("gateway.json");
    let servers = json!({"mcpServers": {"grow": {"command": venv_python(), "args": [server]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.display().to_string();
    let (_gateway, url) = gateway(
        &project,
        &[
            "--config",
            &config,
            "--no-builtins",
            "--defer-tools",
            "false",
            "--allow",
            "mcp__grow",
        ],
    )
    .await;
    tool_core::net::install_crypto_provider();
    let client = reqwest::Client::new();
    let names = listed_names(&client, &url, 1).await;
    assert!(names.iter().any(|n| n == "mcp__grow__grow"), "{names:?}");
    assert!(!names.iter().any(|n| n == "read_file"), "{names:?}");
    assert!(!names.iter().any(|n| n == "shell"), "{names:?}");
    let params = json!({"name": "mcp__grow__grow", "arguments": {}});
    let called = post(&client, &url, 2, "tools/call", params).await;
    assert_eq!(called["result"]["content"][0]["text"], "grown", "{called}");

    std::fs::write(project.path().join("broken.json"), "{\"servers\": 1}").unwrap();
    let output = run(project
        .command()
        .args(["mcp", "serve", "--config", "broken.json"]))
    .await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("mcpServers"),
        "{}",
        stderr(&output)
    );
}

/// What the TypeScript SDK's client saw through the gateway at `target` (the binary, for stdio,
/// or a URL) with `args` (serve arguments, or the token).
async fn ts_client(project: &Project, target: &str, args: &[&str], entity: &str) -> Value {
    run_json(
        tokio::process::Command::new("node")
            .arg(fixture!("ts_client.mjs"))
            .arg(target)
            .args(args)
            .env("ENTITY", entity)
            .current_dir(project.path())
            .env("AGENT_CLI_HOME", project.home()),
    )
    .await
}

/// The official TypeScript SDK's client, over stdio and over HTTP, fronting the npm reference
/// memory server: it finds create_entities with tool_search and calls it through execute_tool;
/// bad input is answered with errors that say what is wrong.
#[tokio::test]
async fn the_typescript_sdk_client_uses_the_gateway_over_stdio_and_http() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let project = Project::new();
    let memory = json!({
        "command": "node",
        "args": [npm_server("server-memory")],
        "env": {"MEMORY_FILE_PATH": project.path().join("memory.jsonl")},
    });
    project.mcp_json(&json!({ "memory": memory }));
    let serve_args = ["--trust-project", "--allow", "mcp__memory"];
    let stdio = ts_client(
        &project,
        env!("CARGO_BIN_EXE_agent-cli"),
        &serve_args,
        "Ada",
    )
    .await;
    let mut http_args = serve_args.to_vec();
    http_args.extend(["--token-env", "GATEWAY_TOKEN"]);
    let (_gateway, url) = gateway(&project, &http_args).await;
    let http = ts_client(&project, &url, &["s3cret-token"], "Grace").await;
    for (transport, entity, seen) in [("stdio", "Ada", &stdio), ("http", "Grace", &http)] {
        let tools = seen["tools"].as_array().unwrap();
        assert!(tools.contains(&json!("tool_search")), "{transport}: {seen}");
        assert!(
            !tools.contains(&json!("mcp__memory__create_entities")),
            "{transport}: {seen}"
        );
        let search = seen["search"]["text"].as_str().unwrap();
        assert!(
            search.contains("mcp__memory__create_entities"),
            "{transport}: {seen}"
        );
        assert_eq!(seen["execute"]["is_error"], false, "{transport}: {seen}");
        assert!(
            seen["execute"]["text"].as_str().unwrap().contains(entity),
            "{transport}: {seen}"
        );
        assert_eq!(seen["unknown"]["is_error"], true, "{transport}: {seen}");
        assert_eq!(seen["invalid"]["is_error"], true, "{transport}: {seen}");
    }
    let graph = std::fs::read_to_string(project.path().join("memory.jsonl")).unwrap();
    assert!(graph.contains("Ada") && graph.contains("Grace"), "{graph}");
}

/// The names `tools/list` answers.
async fn listed_names(client: &reqwest::Client, url: &str, id: u64) -> Vec<String> {
    let listed = post(client, url, id, "tools/list", json!({})).await;
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// An upstream server that dies mid-call: the call is answered with an error that says so, the
/// gateway carries on, and once the server is back its tools answer again. Malformed JSON-RPC and
/// an oversized request get clear HTTP errors and leave the gateway serving.
#[tokio::test]
async fn the_gateway_survives_a_crashing_upstream_and_bad_requests() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let project = Project::new();
    let server = fixture!("growing_server.py");
    let servers = json!({"mcpServers": {"grow": {"command": venv_python(), "args": [server]}}});
    std::fs::write(project.path().join("gateway.json"), servers.to_string()).unwrap();
    let args = [
        "--config",
        "gateway.json",
        "--defer-tools",
        "false",
        "--allow",
        "mcp__grow",
    ];
    let (_gateway, url) = gateway(&project, &args).await;
    tool_core::net::install_crypto_provider();
    let client = reqwest::Client::new();

    let params = json!({"name": "mcp__grow__crash", "arguments": {}});
    let crashed = post(&client, &url, 1, "tools/call", params).await;
    assert_eq!(crashed["result"]["isError"], true, "{crashed}");
    let text = crashed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("grow"), "{crashed}");

    // The server is started again; its tools come back.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut id = 2;
    loop {
        let params = json!({"name": "mcp__grow__grow", "arguments": {}});
        let answer = post(&client, &url, id, "tools/call", params).await;
        if answer["result"]["isError"] == false {
            assert_eq!(answer["result"]["content"][0]["text"], "grown", "{answer}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never back: {answer}");
        id += 1;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let malformed = client
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .send()
        .await
        .unwrap();
    assert!(
        malformed.status().is_client_error(),
        "{}",
        malformed.status()
    );
    let oversized = client
        .post(&url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(format!("{{\"pad\": \"{}\"}}", "x".repeat(8 * 1024 * 1024)))
        .send()
        .await;
    // Refused with 413 as soon as the limit is passed; the client may still be writing, and then
    // sees the connection closed instead of the answer.
    match oversized {
        Ok(response) => assert_eq!(response.status(), reqwest::StatusCode::PAYLOAD_TOO_LARGE),
        Err(err) => assert!(err.is_request(), "{err}"),
    }
    // A new connection: the server closes the one the oversized request came on.
    let client = reqwest::Client::new();
    assert!(
        listed_names(&client, &url, 1000)
            .await
            .contains(&"read_file".to_owned())
    );
}

/// A skill's `allowed-tools` grant nothing through the gateway: a grant lasts for the rest of a
/// model's turn, and a gateway's clients have no turns (over HTTP they share one process). The
/// skill still loads; the command it would allow is refused, with nobody to ask.
#[tokio::test]
async fn a_skills_allowed_tools_grant_nothing_through_the_gateway() {
    let project = Project::new();
    let dir = project.home().join("skills/build");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: build\ndescription: Build the project.\nallowed-tools: shell(touch:*)\n---\nTouch built.txt.\n",
    )
    .unwrap();
    let (_gateway, url) = gateway(&project, &[]).await;
    tool_core::net::install_crypto_provider();
    let client = reqwest::Client::new();
    let params = json!({"name": "skill", "arguments": {"name": "build"}});
    let loaded = post(&client, &url, 1, "tools/call", params).await;
    assert_eq!(loaded["result"]["isError"], false, "{loaded}");
    let params = json!({"name": "shell", "arguments": {"command": "touch built.txt"}});
    let touched = post(&client, &url, 2, "tools/call", params).await;
    assert_eq!(touched["result"]["isError"], true, "{touched}");
    assert!(!project.path().join("built.txt").exists());
}
