//! `agent-cli`: a coding agent in the terminal.

mod app;

use std::process::ExitCode;

use clap::Parser as _;

use app::*;

fn main() -> ExitCode {
    // First, before any thread starts: this executable is also the shell sandbox's launcher.
    tool_builtins::run_if_launcher();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async_main())
}

async fn async_main() -> ExitCode {
    // The provider's key is the agent's, never a tool's: no shell command, hook or MCP server
    // this process starts sees it.
    for name in [
        agent_cli::provider::ANTHROPIC_API_KEY,
        agent_cli::provider::OPENAI_API_KEY,
    ] {
        tool_core::child_env::withhold(name);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Trust { dir }) => trust_command(dir),
        Some(Command::Doctor) => doctor_command(),
        Some(Command::Tools { command }) => tools_command(command, cli.trust_project).await,
        Some(Command::Mcp { command }) => mcp_command(command, cli.trust_project).await,
        Some(Command::Skills { command }) => skills_command(command, cli.trust_project),
        None => run(cli.run, cli.trust_project).await,
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
