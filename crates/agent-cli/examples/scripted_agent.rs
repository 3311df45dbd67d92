//! The smallest agent: the built-in tools over a temporary folder, a scripted model that reads a
//! file and answers, and every event printed. `cargo run -p agent-cli --example scripted_agent`
use std::sync::Arc;

use agent_cli::agent::{Agent, AgentEvent};
use agent_cli::provider::{Response, Scripted};
use agent_cli::runtime::{ToolOptions, ToolRuntime};
use agent_cli::settings::Settings;
use agent_cli::transcript::Transcript;
use serde_json::json;
use tool_core::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let project = tempfile::tempdir()?;
    std::fs::write(project.path().join("notes.md"), "Friday.\n")?;
    let transcript = Transcript::create(&project.path().join(".sessions"), project.path())?;
    let front_end = Arc::new(|event: AgentEvent| {
        if let AgentEvent::ToolResult { name, result } = event {
            println!("{name} → {}", result.text());
        }
    });
    let (cwd, id) = (project.path(), transcript.id().to_owned());
    let dir = cwd.join(".sessions").join(&id);
    let (settings, options) = (Settings::default(), ToolOptions::default());
    let runtime = ToolRuntime::build(cwd, &id, dir, &settings, &options, front_end)?;
    let model = Scripted::new([
        Response::tool_call("call_1", "read_file", json!({"path": "notes.md"})),
        Response::text("The release is on Friday."),
    ]);
    let mut agent = Agent::new(Arc::new(model), runtime, transcript, Vec::new(), "m".into());
    let report = agent
        .run_turn("When is the release?", &CancellationToken::new())
        .await?;
    println!("{}", report.text);
    Ok(())
}
