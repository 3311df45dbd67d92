//! Deferred tools loaded natively: `tool_search` answers with the provider's own references
//! (Anthropic `tool_reference` blocks, Responses `tool_search_output` items), the found tools
//! join the request declared deferred after the unchanged stable part, and the model calls them
//! by their own names through the whole lifecycle (hooks, permissions).

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// A user settings file with a pre-tool hook that logs every call of the plan-mode tools (both
/// deferred built-ins) to `hooks.log` in the project.
fn with_hook(project: &Project) {
    std::fs::create_dir_all(project.home()).unwrap();
    std::fs::write(
        project.home().join("settings.json"),
        json!({"hooks": {"preToolUse": [
            {"matcher": "enter_plan_mode|exit_plan_mode", "command": "cat >> hooks.log; echo >> hooks.log"}
        ]}})
        .to_string(),
    )
    .unwrap();
}

/// Every `tool_reference` of an Anthropic request body, with whether the body's tools array
/// declares that tool deferred.
fn references(body: &Value) -> Vec<(String, bool)> {
    let deferred = |name: &str| {
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == name && t["defer_loading"] == true)
    };
    let mut found = Vec::new();
    for message in messages(body) {
        for block in message["content"].as_array().into_iter().flatten() {
            for part in block["content"].as_array().into_iter().flatten() {
                if part["type"] == "tool_reference" {
                    let name = part["tool_name"].as_str().unwrap().to_owned();
                    let ok = deferred(&name);
                    found.push((name, ok));
                }
            }
        }
    }
    found
}

/// With Anthropic, native is the default: a search loads the plan-mode tools by reference, they
/// join the array declared deferred after the unchanged stable part, and the model calls them by
/// their own names: the hook sees both calls, the permission stage allows the one that only
/// takes permissions away and refuses the one that needs the user's approval in print mode.
#[tokio::test]
async fn anthropic_loads_found_tools_by_reference_and_calls_them_through_the_lifecycle() {
    let project = Project::new();
    with_hook(&project);
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "toolu_search",
            "tool_search",
            json!({"query": "select:enter_plan_mode,exit_plan_mode"}),
        ),
        Turn::tool_use("toolu_enter", "enter_plan_mode", json!({})).then_tool_use(
            "toolu_exit",
            "exit_plan_mode",
            json!({"plan": "Read, then edit."}),
        ),
        Turn::text("Planned."),
    ])
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "Plan the change."]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let first = tool_names(&bodies[0]);
    assert!(first.contains(&"tool_search".to_owned()), "{first:?}");
    assert!(!first.contains(&"execute_tool".to_owned()), "{first:?}");
    assert!(!bodies[0].to_string().contains("defer_loading"));

    // The stable part keeps its bytes; the found tools follow it, declared deferred.
    let stable = bodies[0]["tools"].as_array().unwrap();
    let later = bodies[1]["tools"].as_array().unwrap();
    assert_eq!(&later[..stable.len()], &stable[..]);
    let added: Vec<(&str, &Value)> = later[stable.len()..]
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), &t["defer_loading"]))
        .collect();
    assert_eq!(
        added,
        [
            ("enter_plan_mode", &json!(true)),
            ("exit_plan_mode", &json!(true))
        ]
    );
    assert!(stable.iter().any(|t| t.get("defer_loading").is_none()));

    // Every reference names a tool the same request declares deferred.
    for body in &bodies {
        for (name, deferred) in references(body) {
            assert!(deferred, "{name} is referenced but not declared deferred");
        }
    }
    assert_eq!(references(&bodies[2]).len(), 2);
    let search_answer = &messages(&bodies[1])[2];
    insta::assert_json_snapshot!("anthropic_search_answer", search_answer);

    // The search's result (references only), then the two calls'.
    let results = tool_results(&bodies[2]);
    assert_eq!(results[0], (false, String::new()));
    assert!(!results[1].0, "enter_plan_mode ran: {results:?}");
    assert!(results[1].1.contains("Entered plan mode"), "{results:?}");
    assert!(results[2].0, "exit_plan_mode needs approval: {results:?}");
    assert!(results[2].1.contains("non-interactive"), "{results:?}");
    let log = project.read("hooks.log");
    assert!(log.contains("\"tool_name\":\"enter_plan_mode\""), "{log}");
    assert!(log.contains("\"tool_name\":\"exit_plan_mode\""), "{log}");
}

/// `--activation proxy` keeps the old shape with Anthropic: execute_tool, and no deferred
/// declarations or references.
#[tokio::test]
async fn the_proxy_stays_available_with_anthropic() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "toolu_search",
            "tool_search",
            json!({"query": "select:enter_plan_mode"}),
        ),
        Turn::text("Found."),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--activation",
        "proxy",
        "-p",
        "Plan.",
    ]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert!(tool_names(&bodies[1]).contains(&"execute_tool".to_owned()));
    assert_eq!(bodies[0]["tools"], bodies[1]["tools"]);
    assert!(!bodies[1].to_string().contains("tool_reference"));
}

/// The input items of a Responses request, by type.
fn items<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

/// A Responses-API session: stateless (the whole conversation each time, nothing stored), the
/// reasoning item sent back unchanged across the tool calls, the client tool search answered by
/// a `tool_search_output` with the found tool's definition while the tools array stays as it
/// was, then the found tool called by its own name as a function call.
#[tokio::test]
async fn a_responses_session_with_tool_search_function_calls_and_reasoning() {
    let project = Project::new();
    with_hook(&project);
    project.write("notes.md", "Friday.\n");
    let server = ScriptedServer::start(vec![
        Turn::thinking("Find a planning tool.", "enc-reasoning-1").then_tool_use(
            "call_search",
            "tool_search",
            json!({"query": "select:enter_plan_mode"}),
        ),
        Turn::tool_use("call_enter", "enter_plan_mode", json!({})).then_tool_use(
            "call_read",
            "read_file",
            json!({"path": "notes.md"}),
        ),
        Turn::text("Friday."),
    ])
    .await;
    let mut command = project.command();
    command
        .args([
            "--provider",
            "openai-responses",
            "--base-url",
            &server.openai_url(),
            "--model",
            "gpt-5.4",
        ])
        .env("OPENAI_API_KEY", "test-key")
        .args(["--thinking", "adaptive", "-p", "When?"]);
    let output = run(&mut command).await;
    assert_success(&output);
    let requests = server.requests();
    assert!(
        requests[0].path.ends_with("/v1/responses"),
        "{}",
        requests[0].path
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert!(body.get("previous_response_id").is_none());
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["prompt_cache_key"], bodies[0]["prompt_cache_key"]);
        assert_eq!(
            body["tools"], bodies[0]["tools"],
            "the tools array never changes"
        );
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
    }
    let search = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "tool_search")
        .unwrap();
    assert_eq!(search["execution"], "client");
    assert!(
        bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "function")
            .all(|t| t["strict"] == false)
    );

    let reasoning = json!({"type": "reasoning", "encrypted_content": "enc-reasoning-1",
                           "summary": [{"type": "summary_text", "text": "Find a planning tool."}]});
    for body in &bodies[1..] {
        assert_eq!(items(body, "reasoning"), [&reasoning]);
    }
    let call = items(&bodies[1], "tool_search_call");
    assert_eq!(call[0]["call_id"], "call_search");
    assert_eq!(
        call[0]["arguments"],
        json!({"query": "select:enter_plan_mode"})
    );
    let answer = items(&bodies[1], "tool_search_output");
    assert_eq!(answer[0]["call_id"], "call_search");
    let loaded: Vec<&Value> = answer[0]["tools"].as_array().unwrap().iter().collect();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0]["name"], "enter_plan_mode");
    assert_eq!(loaded[0]["defer_loading"], true);
    insta::assert_json_snapshot!("responses_input_after_search", bodies[1]["input"]);

    let calls: Vec<&Value> = items(&bodies[2], "function_call");
    let names: Vec<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["enter_plan_mode", "read_file"]);
    let outputs = items(&bodies[2], "function_call_output");
    assert!(
        outputs[0]["output"]
            .as_str()
            .unwrap()
            .contains("Entered plan mode")
    );
    assert!(outputs[1]["output"].as_str().unwrap().contains("Friday."));
    assert!(
        project
            .read("hooks.log")
            .contains("\"tool_name\":\"enter_plan_mode\"")
    );
    assert_eq!(stdout(&output).trim(), "Friday.");
}

/// With a model that takes no client tool search, the Responses API gets the proxy: plain
/// function tools, `execute_tool`, and function calls and outputs.
#[tokio::test]
async fn the_responses_api_uses_the_proxy_with_older_models() {
    let project = Project::new();
    project.write("notes.md", "Friday.\n");
    let server = ScriptedServer::start(vec![
        Turn::tool_use("call_read", "read_file", json!({"path": "notes.md"})),
        Turn::text("Friday."),
    ])
    .await;
    let output = run(project
        .agent(&server, ProviderKind::OpenAiResponses)
        .args(["-p", "When?"]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    let tools = bodies[0]["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["type"] == "function"));
    assert!(tools.iter().any(|t| t["name"] == "execute_tool"));
    assert!(bodies[0].get("reasoning").is_none());
    let output_item = items(&bodies[1], "function_call_output");
    assert_eq!(output_item[0]["call_id"], "call_read");
    assert!(
        output_item[0]["output"]
            .as_str()
            .unwrap()
            .contains("Friday.")
    );
}
