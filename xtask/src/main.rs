//! Project chores, run as `cargo xtask <command>`.
//!
//! - `cargo xtask tidy`: checks the workspace's invariants (crate layering, lints, crate docs).

mod tidy;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Project chores for this workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check the workspace's invariants: which crate may depend on which, workspace lints, crate docs.
    Tidy,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Tidy => {
            let root = tidy::workspace_root()?;
            let problems = tidy::check(&root)?;
            if problems.is_empty() {
                println!("tidy: all invariants hold");
                Ok(())
            } else {
                for problem in &problems {
                    eprintln!("tidy: {problem}");
                }
                anyhow::bail!("{} invariant(s) broken", problems.len())
            }
        }
    }
}
