//! `agent-cli`: a coding agent in the terminal.

use clap::Parser;

/// A coding agent in the terminal, built on the tool-core toolkit.
///
/// The tool layer (tool-core) is ready; the agent loop, providers and subcommands are not built
/// yet, so this binary offers no commands beyond --help and --version.
#[derive(Parser)]
#[command(name = "agent-cli", version, about, long_about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    println!("agent-cli: the agent loop is not built yet; see --help for what exists.");
    Ok(())
}
