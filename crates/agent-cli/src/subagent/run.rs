//! One sub-agent run: its tools picked from the parent's, its own conversation saved beside the
//! session, the agent loop ([`Agent::run_turn`]) to the end, and its final answer as the result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tool_core::{AnyTool, ToolContext, ToolError, ToolOutput, ToolRegistry};

use super::guard::{Refused, SubAgentFrontEnd, read_only};
use super::kinds::{AgentType, NEVER_OFFERED};
use crate::agent::{Agent, Outcome, TurnReport};
use crate::provider::Provider;
use crate::runtime::{Inheritance, ToolRuntime};
use crate::transcript::Transcript;
use crate::usage::Meter;

/// The folder under the session's directory where sub-agents' transcripts are saved.
pub(crate) const SUBAGENTS_DIR: &str = "subagents";

/// What every sub-agent of a session shares: the provider, the parent's model and tools, the
/// turn limit and the session's meter.
#[derive(Clone)]
pub struct Launcher {
    /// The provider the main agent talks to.
    pub provider: Arc<dyn Provider>,
    /// The main agent's model, for types that name none.
    pub model: String,
    /// What the sub-agents' runtimes inherit.
    pub parent: Inheritance,
    /// The most model requests of one sub-agent.
    pub max_turns: usize,
    /// The session's usage and cost, which each run's usage is added to (a type may name a
    /// model of its own, with a price of its own).
    pub meter: Meter,
}

impl Launcher {
    /// Runs a sub-agent of type `kind` on `prompt`, for the call `ctx` (its progress, its
    /// cancellation, its id naming the side transcript).
    pub async fn run(
        &self,
        kind: &AgentType,
        prompt: &str,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let runtime = self.runtime(kind, ctx)?;
        let system = system_prompt(kind, &runtime);
        let dir = transcript_dir(ctx.session().dir(), ctx.tool_use_id());
        let transcript = Transcript::create(&dir, ctx.session().cwd()).map_err(|err| {
            ToolError::failed(format!(
                "the sub-agent's transcript could not be created: {err:#}"
            ))
        })?;
        let path = transcript.path().to_path_buf();
        let model = kind.model.clone().unwrap_or_else(|| self.model.clone());
        let mut agent = Agent::new(
            Arc::clone(&self.provider),
            runtime,
            transcript,
            Vec::new(),
            model,
        )
        .with_system_prompt(system);
        agent.max_turns = self.max_turns;
        let outcome = agent.run_turn(prompt, ctx.cancellation()).await;
        // What it spent counts whether or not it finished.
        self.meter
            .record(agent.model(), agent.session_usage().usage);
        let report = outcome.map_err(|err| {
            ToolError::failed(format!("the {} sub-agent failed: {err:#}", kind.name))
        })?;
        answer(kind, &report, &path)
    }

    /// The sub-agent's runtime: only the type's tools offered (each checked to only read for a
    /// read-only type), every other tool of the parent refused with a reason, its tool calls
    /// reported as the progress of the call `ctx`, and permission prompts that name the
    /// sub-agent.
    fn runtime(&self, kind: &AgentType, ctx: &ToolContext) -> Result<ToolRuntime, ToolError> {
        let parent = self
            .parent
            .registry
            .upgrade()
            .ok_or_else(|| ToolError::failed("the session's tools are gone"))?;
        let ToolSets { offered, refused } = tool_sets(kind, &parent);
        let front_end = SubAgentFrontEnd::wrap(
            Arc::clone(&self.parent.front_end),
            &kind.name,
            Arc::clone(&self.parent.permissions),
            Some(ctx.clone()),
        );
        self.parent
            .restricted(offered, refused, front_end)
            .map_err(|err| ToolError::failed(format!("the sub-agent's tools: {err:#}")))
    }
}

/// The tools a sub-agent is offered, and stand-ins refusing every other tool of the parent.
struct ToolSets {
    offered: Vec<AnyTool>,
    refused: Vec<AnyTool>,
}

/// The tools a sub-agent of `kind` is offered, and stand-ins refusing every other tool of the
/// parent (the `agent` tool among them).
fn tool_sets(kind: &AgentType, parent: &ToolRegistry) -> ToolSets {
    let reads_only = kind.reads_only(parent);
    let mut offered: Vec<AnyTool> = Vec::new();
    for name in kind.tool_names(parent) {
        let Some(entry) = parent.get(&name) else {
            continue;
        };
        let tool = entry.tool().clone();
        // An alias may name a tool that is never offered.
        let name = tool.spec().name.as_str();
        if NEVER_OFFERED.contains(&name) || offered.iter().any(|t| t.spec().name == name) {
            continue;
        }
        offered.push(if reads_only {
            read_only(tool, &kind.name)
        } else {
            tool
        });
    }
    let allowed: Vec<String> = offered.iter().map(|t| t.spec().name.clone()).collect();
    let refused = parent
        .names()
        .into_iter()
        .filter(|name| !allowed.contains(name))
        .map(|name| Refused::stand_in(&name, &kind.name, &allowed))
        .collect();
    ToolSets { offered, refused }
}

/// The type's instructions, where the sub-agent works, its tools' guidance, and the
/// announcement of the deferred tools it may find with `tool_search` (as the main agent's, within
/// the same budget).
fn system_prompt(kind: &AgentType, runtime: &ToolRuntime) -> String {
    let mut prompt = format!(
        "{}\n\nYou are the {} sub-agent, working in {}. Another agent gave you this task and sees \
         only your final message: end with a complete answer that stands on its own.\n",
        kind.instructions.trim(),
        kind.name,
        runtime.session.cwd().display()
    );
    for tool in runtime.pool.request_tools().tools {
        if let Some(guidance) = tool.prompt() {
            prompt.push_str(&format!("\n# {}\n{}\n", tool.spec().name, guidance.trim()));
        }
    }
    if let Some(announcement) = runtime.pool.announcement() {
        prompt.push('\n');
        prompt.push_str(&announcement);
        prompt.push('\n');
    }
    prompt
}

/// `<session dir>/subagents/<tool_use_id>`, with anything but letters, digits, `-` and `_` in
/// the id replaced, so that an id can never name another folder.
pub(crate) fn transcript_dir(session_dir: &Path, tool_use_id: &str) -> PathBuf {
    session_dir
        .join(SUBAGENTS_DIR)
        .join(tool_core::file_name_of_id(tool_use_id))
}

/// The tool result: the sub-agent's final text, with where its transcript is for whoever reads
/// the session later.
fn answer(
    kind: &AgentType,
    report: &TurnReport,
    transcript: &Path,
) -> Result<ToolOutput, ToolError> {
    let structured = json!({
        "subagent_type": kind.name,
        "transcript": transcript.display().to_string(),
        "requests": report.requests,
        "usage": report.usage,
    });
    let output = match report.outcome {
        Outcome::Done if report.text.trim().is_empty() => ToolOutput::error_text(format!(
            "the {} sub-agent finished without an answer",
            kind.name
        )),
        Outcome::Done => ToolOutput::text(report.text.clone()),
        Outcome::MaxTurns => ToolOutput::error_text(format!(
            "the {} sub-agent stopped after {} model requests without finishing; its last words: {}",
            kind.name, report.requests, report.text
        )),
        Outcome::Cancelled => {
            return Err(ToolError::failed(format!(
                "the {} sub-agent was cancelled",
                kind.name
            )));
        }
    };
    Ok(output.with_structured(structured))
}
