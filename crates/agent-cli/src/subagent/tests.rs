//! The `agent` tool through a session's executor, against a provider that answers from a list.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::{CancellationToken, ToolCall};

use super::{AGENT_TOOL, AgentTypes, install, transcript_dir};
use crate::conversation::{Block, StopReason, Usage};
use crate::frontend::Headless;
use crate::provider::{EventStream, ModelRequest, Provider, Response, Scripted};
use crate::runtime::{ToolOptions, ToolRuntime};
use crate::settings::Settings;
use crate::usage::Meter;

/// A provider answering from a list, kept to read its requests back.
fn canned(answers: Vec<Response>) -> Arc<Scripted> {
    Arc::new(Scripted::new(answers))
}

fn text(text: &str) -> Block {
    Block::Text { text: text.into() }
}

fn tool_use(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse(tool_core::ToolCall {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn reply(content: Vec<Block>, input_tokens: u64, output_tokens: u64) -> Response {
    let stop = if content.iter().any(|b| matches!(b, Block::ToolUse(_))) {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    let usage = Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    };
    Response::assistant(content, stop, usage)
}

fn runtime(project: &Path, session_dir: &Path) -> ToolRuntime {
    ToolRuntime::build(
        project,
        "test",
        session_dir.to_path_buf(),
        &Settings::default(),
        &ToolOptions::default(),
        Arc::new(Headless),
    )
    .unwrap()
}

#[tokio::test]
async fn a_sub_agent_answers_reports_its_usage_and_keeps_its_transcript() {
    let project = tempfile::tempdir().unwrap();
    let session_dir = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha\n").unwrap();
    let runtime = runtime(project.path(), session_dir.path());
    let provider = canned(vec![
        reply(
            vec![tool_use("g1", "grep", json!({"pattern": "alpha"}))],
            10,
            2,
        ),
        reply(vec![text("alpha is in a.txt")], 20, 5),
    ]);
    let meter = Meter::default();
    install(
        &runtime,
        AgentTypes::default(),
        provider.clone(),
        "main-model".into(),
        meter.clone(),
    )
    .unwrap();

    let call = ToolCall::new(
        "toolu_1",
        AGENT_TOOL,
        json!({"description": "find alpha", "prompt": "Where is alpha?"}),
    );
    let result = runtime
        .executor
        .execute(call, CancellationToken::new(), None)
        .await;

    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "alpha is in a.txt");
    let usage = meter.total().usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (30, 7));
    let requests = provider.requests();
    assert_eq!(requests[0].model, "main-model");
    assert_eq!(
        requests[0].tools.names(),
        ["glob", "grep", "read_file", "shell"]
    );
    assert!(requests[0].system[0].contains("You are the explore sub-agent"));
    let dir = transcript_dir(session_dir.path(), "toolu_1");
    let saved: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(saved.len(), 1);
    let structured = result.structured.unwrap();
    assert_eq!(structured["subagent_type"], "explore");
    assert!(
        structured["transcript"]
            .as_str()
            .unwrap()
            .starts_with(&dir.display().to_string())
    );
}

#[tokio::test]
async fn only_a_type_whose_tools_all_read_runs_beside_other_calls() {
    let project = tempfile::tempdir().unwrap();
    let session_dir = tempfile::tempdir().unwrap();
    let agents = project.path().join(".claude").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("writer.md"),
        "---\nname: writer\ndescription: Writes.\ntools: Read, Write\n---\nWrite.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("reader.md"),
        "---\nname: reader\ndescription: Reads.\ntools: [read_file, grep]\n---\nRead.\n",
    )
    .unwrap();
    let runtime = runtime(project.path(), session_dir.path());
    let types = AgentTypes::load(&AgentTypes::folders(project.path(), session_dir.path()));
    install(
        &runtime,
        types,
        canned(Vec::new()),
        "m".into(),
        Meter::default(),
    )
    .unwrap();
    let entry = runtime.registry.get(AGENT_TOOL).unwrap();
    let tool = entry.tool();
    let safe = |kind: &str| {
        let input = json!({"description": "d", "prompt": "p", "subagent_type": kind});
        tool.info(&input).unwrap().is_concurrency_safe()
    };
    assert!(safe("explore"));
    assert!(safe("reader"));
    assert!(!safe("writer"));
    assert!(!safe("no-such-type"));
}

/// A type with every tool still gets none that acts for the session: not the `agent` tool,
/// nor the search tools, the `skill` tool (its grants are the session's), the structured
/// answer or plan mode.
#[tokio::test]
async fn a_type_with_every_tool_gets_none_that_acts_for_the_session() {
    let project = tempfile::tempdir().unwrap();
    let session_dir = tempfile::tempdir().unwrap();
    let skill = project.path().join(".agent-cli/skills/build");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: build\ndescription: Builds.\n---\nRun make.\n",
    )
    .unwrap();
    let agents = project.path().join(".claude").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("all.md"),
        "---\nname: all\ndescription: Everything.\ntools: \"*\"\n---\nDo it.\n",
    )
    .unwrap();
    let runtime = runtime(project.path(), session_dir.path());
    runtime
        .registry
        .register(Arc::new(crate::structured::StructuredOutput::new(
            json!({"type": "object"}),
        )))
        .unwrap();
    let types = AgentTypes::load(&AgentTypes::folders(project.path(), session_dir.path()));
    let provider = canned(vec![reply(vec![text("done")], 1, 1)]);
    install(
        &runtime,
        types,
        provider.clone(),
        "m".into(),
        Meter::default(),
    )
    .unwrap();
    assert!(runtime.registry.get(tool_skills::SKILL_TOOL).is_some());

    let call = ToolCall::new(
        "toolu_all",
        AGENT_TOOL,
        json!({"description": "d", "prompt": "p", "subagent_type": "all"}),
    );
    let result = runtime
        .executor
        .execute(call, CancellationToken::new(), None)
        .await;

    assert!(!result.is_error, "{result:?}");
    let requests = provider.requests();
    let offered = requests[0].tools.names();
    for never in super::kinds::NEVER_OFFERED {
        assert!(
            !offered.iter().any(|n| n == never),
            "{never} in {offered:?}"
        );
    }
    assert!(offered.iter().any(|n| n == "write_file"), "{offered:?}");
}

/// Answers the first request with a call, then fails.
struct FailsSecond {
    requests: Mutex<usize>,
}

impl Provider for FailsSecond {
    fn stream<'a>(
        &'a self,
        _request: &'a ModelRequest<'_>,
        _cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let mut requests = self.requests.lock().unwrap();
        *requests += 1;
        if *requests == 1 {
            reply(vec![tool_use("g1", "glob", json!({"pattern": "*"}))], 10, 2).into_events()
        } else {
            futures::StreamExt::boxed(futures::stream::iter([Err(
                crate::provider::ProviderError::Stream("the connection dropped".into()),
            )]))
        }
    }
}

/// What a sub-agent spent before it failed still reaches the session's total.
#[tokio::test]
async fn a_failed_sub_agent_still_reports_what_it_spent() {
    let project = tempfile::tempdir().unwrap();
    let session_dir = tempfile::tempdir().unwrap();
    let runtime = runtime(project.path(), session_dir.path());
    let meter = Meter::default();
    let provider = Arc::new(FailsSecond {
        requests: Mutex::new(0),
    });
    install(
        &runtime,
        AgentTypes::default(),
        provider,
        "m".into(),
        meter.clone(),
    )
    .unwrap();

    let call = ToolCall::new(
        "toolu_f",
        AGENT_TOOL,
        json!({"description": "d", "prompt": "list the files"}),
    );
    let result = runtime
        .executor
        .execute(call, CancellationToken::new(), None)
        .await;

    assert!(result.is_error, "{result:?}");
    assert!(
        result.text().contains("the connection dropped"),
        "{}",
        result.text()
    );
    let usage = meter.total().usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (10, 2));
}

/// An MCP server's tool (deferred), answering with its input.
struct Lookup(tool_core::ToolSpec);

#[async_trait::async_trait]
impl tool_core::Tool for Lookup {
    type Input = Value;

    fn spec(&self, _: Value) -> tool_core::ToolSpec {
        self.0.clone()
    }

    async fn check_permissions(
        &self,
        _: &Value,
        _: &tool_core::ToolContext,
    ) -> tool_core::PermissionCheck {
        tool_core::PermissionCheck::Allow
    }

    async fn call(
        &self,
        input: Value,
        _: &tool_core::ToolContext,
    ) -> Result<tool_core::ToolOutput, tool_core::ToolError> {
        Ok(tool_core::ToolOutput::text(format!("looked up {input}")))
    }
}

/// A sub-agent offered deferred tools gets its own `tool_search` (over its own tools alone) and
/// the main agent's announcement of them; with native activation it loads the found tool from
/// the search's references and calls it by its own name.
#[tokio::test]
async fn a_sub_agent_finds_its_deferred_tools_with_its_own_tool_search() {
    let project = tempfile::tempdir().unwrap();
    let session_dir = tempfile::tempdir().unwrap();
    let agents = project.path().join(".claude").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("looker.md"),
        "---\nname: looker\ndescription: Looks up.\ntools: [read_file, mcp__srv__lookup]\n---\nLook things up.\n",
    )
    .unwrap();
    let options = ToolOptions {
        native_activation: true,
        ..ToolOptions::default()
    };
    let runtime = ToolRuntime::build(
        project.path(),
        "test",
        session_dir.path().to_path_buf(),
        &Settings::default(),
        &options,
        Arc::new(Headless),
    )
    .unwrap();
    for (server, tool) in [("srv", "lookup"), ("srv", "other")] {
        let spec = tool_core::ToolSpec::new(
            format!("mcp__{server}__{tool}"),
            "Looks a word up.",
            json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        )
        .with_origin(tool_core::Origin::Mcp {
            server: server.into(),
            tool: tool.into(),
        });
        runtime
            .pool
            .add_mcp_tool(tool_core::AnyTool::new(Lookup(spec)))
            .unwrap();
    }
    let provider = canned(vec![
        reply(
            vec![tool_use(
                "s1",
                "tool_search",
                json!({"query": "select:mcp__srv__lookup"}),
            )],
            1,
            1,
        ),
        reply(
            vec![tool_use("l1", "mcp__srv__lookup", json!({"word": "x"}))],
            1,
            1,
        ),
        reply(vec![text("x is looked up")], 1, 1),
    ]);
    let types = AgentTypes::load(&AgentTypes::folders(project.path(), session_dir.path()));
    install(
        &runtime,
        types,
        provider.clone(),
        "m".into(),
        Meter::default(),
    )
    .unwrap();
    let call = ToolCall::new(
        "toolu_1",
        AGENT_TOOL,
        json!({"description": "look", "prompt": "Look x up", "subagent_type": "looker"}),
    );
    let result = runtime
        .executor
        .execute(call, CancellationToken::new(), None)
        .await;
    assert!(!result.is_error, "{result:?}");
    let requests = provider.requests();
    assert_eq!(requests[0].tools.names(), ["read_file", "tool_search"]);
    let system = &requests[0].system[0];
    assert!(system.contains("<available-deferred-tools>"), "{system}");
    assert!(system.contains("mcp__srv__lookup"), "{system}");
    assert!(
        !system.contains("mcp__srv__other"),
        "only its own tools: {system}"
    );
    let deferred: Vec<&str> = requests[1]
        .tools
        .deferred()
        .iter()
        .map(|t| t.spec().name.as_str())
        .collect();
    assert_eq!(deferred, ["mcp__srv__lookup"]);
    let Block::ToolResult(found) = &requests[2].messages[4].content[0] else {
        panic!("no result: {:?}", requests[2].messages[4]);
    };
    assert!(found.text().contains("looked up"), "{found:?}");
}
