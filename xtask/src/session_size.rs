//! The requests of one scripted session per activation strategy, as Anthropic's API gets them:
//! the model searches the deferred tools, calls the tool it found, reads a file and answers. For
//! each request, its bytes on the wire and the bytes past the longest prefix its prompt shares
//! with the previous request's, the part a prompt cache cannot reuse.
//!
//! The prompt is the request in the order the model reads it: the tools array, the system
//! prompt, the messages. A tool declared deferred (`defer_loading`) is not in the array's part of
//! it: the API shows its definition where a `tool_reference` loads it. Cache breakpoints are
//! left out: they mark where the cache may end and are not part of the prompt.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{AnyTool, CancellationToken, ToolCall};

use agent_cli::agent::Agent;
use agent_cli::conversation::{Block, StopReason, Usage};
use agent_cli::provider::{ModelRequest, Response, Scripted};
use agent_cli::runtime::{ToolOptions, ToolRuntime};
use agent_cli::transcript::Transcript;

/// The tool the session finds and calls, and its input.
const FOUND: &str = "mcp__memory__create_entities";

/// The search the model sends (five tools come back).
const QUERY: &str = "create entities in the knowledge graph";

/// Prints the table for the built-ins plus `mcp`'s tools.
pub(crate) fn table(mcp: &[AnyTool]) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!();
    println!(
        "| activation | request 1 | request 2 | request 3 | request 4 | session total | fresh total |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for activation in ["native", "proxy", "inline"] {
        let requests = runtime.block_on(session(mcp, activation))?;
        let prompts: Vec<String> = requests.iter().map(prompt_order).collect();
        let mut cells = Vec::new();
        let (mut total, mut fresh) = (0, 0);
        for (i, (request, prompt)) in requests.iter().zip(&prompts).enumerate() {
            let shared = i
                .checked_sub(1)
                .map_or(0, |previous| common_prefix(&prompts[previous], prompt));
            let bytes = agent_cli::provider::anthropic::render_request(request)
                .to_string()
                .len();
            cells.push(format!("{bytes} ({} fresh)", prompt.len() - shared));
            total += bytes;
            fresh += prompt.len() - shared;
        }
        println!(
            "| {activation} | {} | {total} | {fresh} |",
            cells.join(" | ")
        );
    }
    Ok(())
}

fn call(id: &str, name: &str, input: Value) -> Response {
    Response::assistant(
        vec![Block::ToolUse(ToolCall::new(id, name, input))],
        StopReason::ToolUse,
        Usage::default(),
    )
}

/// The model's side of the session: search, the found tool (through `execute_tool` with the
/// proxy), a file, the answer.
fn script(activation: &str) -> Vec<Response> {
    let input = json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]});
    let use_found = if activation == "proxy" {
        call(
            "toolu_2",
            "execute_tool",
            json!({"tool_name": FOUND, "input": input}),
        )
    } else {
        call("toolu_2", FOUND, input)
    };
    vec![
        call("toolu_1", "tool_search", json!({"query": QUERY})),
        use_found,
        call("toolu_3", "read_file", json!({"path": "notes.md"})),
        Response::text("Ada is in the graph; the notes say to ship on Friday."),
    ]
}

/// Runs the session with `activation` and returns its requests.
async fn session(mcp: &[AnyTool], activation: &str) -> anyhow::Result<Vec<ModelRequest<'static>>> {
    let dir =
        std::env::temp_dir().join(format!("session-size-{}-{activation}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("notes.md"), "Ship on Friday.\n")?;
    let options = ToolOptions {
        activation: Some(activation.to_owned()),
        ..ToolOptions::default()
    };
    let runtime = ToolRuntime::build(
        &dir,
        "size",
        dir.join("session"),
        &agent_cli::settings::Settings::default(),
        &options,
        Arc::new(agent_cli::frontend::Headless),
    )?;
    for tool in mcp {
        runtime.pool.add_mcp_tool(tool.clone())?;
    }
    let provider = Arc::new(Scripted::new(script(activation)));
    let transcript = Transcript::create(&dir.join("sessions"), &dir)?;
    let mut agent = Agent::new(
        provider.clone(),
        runtime,
        transcript,
        Vec::new(),
        "claude-sonnet-4-5".to_owned(),
    );
    let report = agent
        .run_turn(
            "Remember Ada, then tell me when to ship.",
            &CancellationToken::new(),
        )
        .await?;
    anyhow::ensure!(
        report.requests == 4,
        "the session took {} requests",
        report.requests
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(provider.requests())
}

/// The request's bytes in the order the model reads them, without cache breakpoints.
fn prompt_order(request: &ModelRequest<'_>) -> String {
    let mut body = agent_cli::provider::anthropic::render_request(request);
    strip_cache_control(&mut body);
    let (deferred, loaded): (Vec<Value>, Vec<Value>) = body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .partition(|tool| tool["defer_loading"] == true);
    let mut messages = body["messages"].take();
    expand_references(&mut messages, &deferred);
    format!("{}{}{messages}", Value::from(loaded), body["system"])
}

/// Each `tool_reference` replaced by the definition it loads.
fn expand_references(value: &mut Value, deferred: &[Value]) {
    if value["type"] == "tool_reference"
        && let Some(tool) = deferred.iter().find(|t| t["name"] == value["tool_name"])
    {
        *value = tool.clone();
        return;
    }
    match value {
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| expand_references(v, deferred)),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| expand_references(v, deferred)),
        _ => {}
    }
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// The length of the longest common prefix of `a` and `b`, in bytes.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}
