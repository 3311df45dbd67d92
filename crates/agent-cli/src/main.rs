//! `agent-cli`: a coding agent in the terminal.

use clap::Parser;

/// A coding agent in the terminal, built on the tool-core toolkit.
#[derive(Parser)]
#[command(name = "agent-cli", version, about)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
