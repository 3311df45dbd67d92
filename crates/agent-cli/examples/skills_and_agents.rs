//! Skills and sub-agents in an agent loop of your own.
//!
//! The loop is agent-cli's [`Agent`] over a [`ToolRuntime`] (the built-in tools, permissions and
//! the tool pool). On top of it this example adds:
//!
//! - skills with `tool_skills`: `SKILL.md` folders found with [`discover`], listed in the system
//!   prompt, and loaded on demand through the `skill` tool;
//! - sub-agents with [`subagent::install`]: the `agent` tool, with the built-in `explore` type and
//!   the types of `.claude/agents/*.md`; what sub-agents spend is added to a [`Meter`].
//!
//! ```text
//! cargo run -p agent-cli --example skills_and_agents
//! ```
//!
//! With no provider configured it talks to a small scripted model in this file, so it runs
//! offline; with `ANTHROPIC_API_KEY` (or `OPENAI_API_KEY`, `OPENAI_BASE_URL`) set it asks that
//! model instead.

use std::path::Path;
use std::sync::Arc;

use agent_cli::agent::{Agent, AgentEvent};
use agent_cli::conversation::{Block, Message, Role, StopReason, Usage};
use agent_cli::frontend::FrontEnd;
use agent_cli::provider::{
    self, EventStream, ModelRequest, Provider, ProviderChoice, ProviderConfig, Response,
};
use agent_cli::runtime::{ToolOptions, ToolRuntime};
use agent_cli::settings::Settings;
use agent_cli::subagent::{self, AgentTypes};
use agent_cli::transcript::Transcript;
use agent_cli::usage::Meter;
use serde_json::json;
use tool_core::{CancellationToken, ExecutionEvent};
use tool_skills::{SKILL_TOOL, SkillRoot, SkillSession, SkillSet, SkillTool, discover};

const TASK: &str = "Review the change in src/lib.rs and write the changelog entry for it.";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let project = tempfile::tempdir()?;
    let dir = project.path();
    write_project(dir)?;

    let sessions = dir.join(".sessions");
    let transcript = Transcript::create(&sessions, dir)?;
    let session_dir = sessions.join(transcript.id());
    let runtime = ToolRuntime::build(
        dir,
        transcript.id(),
        session_dir,
        &Settings::default(),
        &ToolOptions::default(),
        printer(),
    )?;

    // Skills: this loop's own folder of SKILL.md files, searched and loaded by the `skill` tool.
    let found = discover(&[SkillRoot::project(dir.join("team-skills"))]);
    for warning in &found.warnings {
        eprintln!("warning: {warning}");
    }
    let skills = Arc::new(SkillSession::new(Arc::new(SkillSet::new(found.skills))));
    // The runtime registers the skills of the standard folders; this loop uses its own instead.
    runtime.registry.unregister(SKILL_TOOL);
    runtime
        .registry
        .register(SkillTool::new(Arc::clone(&skills)))?;

    // Sub-agents: the `agent` tool, with `explore` and the project's `.claude/agents` types.
    let (provider, model) = provider_and_model()?;
    let types = AgentTypes::load(&AgentTypes::folders(dir, &dir.join(".user")));
    let sub_agents_spent = Meter::default();
    subagent::install(
        &runtime,
        types,
        Arc::clone(&provider),
        model.clone(),
        sub_agents_spent.clone(),
    )?;

    // The system prompt says which skills exist; the model loads one when it needs it.
    let mut system = runtime.system_prompt();
    if let Some(listing) = skills.set().listing(2_000) {
        system.push_str(&format!(
            "\n# Skills (load one with the skill tool)\n{listing}\n"
        ));
    }
    let mut agent =
        Agent::new(provider, runtime, transcript, Vec::new(), model).with_system_prompt(system);
    let report = agent.run_turn(TASK, &CancellationToken::new()).await?;

    println!("\n{}", report.text);
    let sub_agents = sub_agents_spent.total().usage;
    println!(
        "tokens: {} in, {} out (sub-agents: {} in, {} out)",
        report.usage.input_tokens,
        report.usage.output_tokens,
        sub_agents.input_tokens,
        sub_agents.output_tokens
    );
    Ok(())
}

/// A small project: a source file, a skill and an agent type.
fn write_project(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn total(items: &[u32]) -> u32 {\n    items.iter().sum()\n}\n",
    )?;
    let skill = dir.join("team-skills/changelog");
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: changelog\ndescription: Writes a CHANGELOG.md entry in the team's style.\n---\n\
         Add one line under `## Unreleased`: the change in the past tense, then the file.\n",
    )?;
    let agents = dir.join(".claude/agents");
    std::fs::create_dir_all(&agents)?;
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews a change for bugs.\ntools: Read, Grep\n---\n\
         You review code. List each bug with its file and line, or say there are none.\n",
    )
}

/// The provider the environment names, or the scripted one when it names none.
fn provider_and_model() -> anyhow::Result<(Arc<dyn Provider>, String)> {
    let configured = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"]
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if !configured {
        return Ok((Arc::new(Scripted), "scripted".to_owned()));
    }
    let config = ProviderConfig::resolve(
        &ProviderChoice::default(),
        &ProviderChoice::default(),
        |name| std::env::var(name).ok(),
    );
    let model = config.model.clone();
    Ok((provider::build(&config)?, model))
}

/// Prints the tool calls as they start, and what the sub-agents do.
fn printer() -> Arc<dyn FrontEnd> {
    Arc::new(|event| match event {
        AgentEvent::Tool {
            event: ExecutionEvent::Started { tool, activity, .. },
        } => println!("⏺ {}", activity.unwrap_or(tool)),
        AgentEvent::Tool {
            event: ExecutionEvent::Progress { message, .. },
        } => println!("  ⎿ {message}"),
        _ => {}
    })
}

/// A stand-in model: the main agent loads the skill and asks the reviewer, the reviewer
/// answers, and the main agent sums up.
struct Scripted;

impl Scripted {
    fn answer(request: &ModelRequest<'_>) -> Vec<Block> {
        let text = |text: &str| Block::Text { text: text.into() };
        let call = |id: &str, name: &str, input| {
            Block::ToolUse(tool_core::ToolCall {
                id: id.into(),
                name: name.into(),
                input,
            })
        };
        let has_results = request.messages.iter().any(|m| {
            m.role == Role::User && m.content.iter().any(|b| matches!(b, Block::ToolResult(_)))
        });
        let sub_agent = request
            .system
            .iter()
            .any(|s| s.contains("sub-agent, working in"));
        match (sub_agent, has_results) {
            (true, false) => vec![call("r1", "read_file", json!({"path": "src/lib.rs"}))],
            (true, true) => vec![text(
                "No bugs: `total` sums the items (it can overflow only past u32::MAX).",
            )],
            (false, false) => vec![
                call("s1", SKILL_TOOL, json!({"name": "changelog"})),
                call(
                    "a1",
                    subagent::AGENT_TOOL,
                    json!({"description": "review src/lib.rs", "prompt": "Review src/lib.rs for bugs.", "subagent_type": "reviewer"}),
                ),
            ],
            (false, true) => vec![text(
                "The reviewer found no bugs. Changelog entry: \"Added `total`, which sums the items (src/lib.rs).\"",
            )],
        }
    }
}

impl Provider for Scripted {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        _cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let content = Self::answer(request);
        let message = Message {
            role: Role::Assistant,
            content,
        };
        let stop = if message.tool_uses().next().is_none() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 20,
            ..Usage::default()
        };
        Response::assistant(message.content, stop, usage).into_events()
    }
}
