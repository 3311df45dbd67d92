//! Project chores, run as `cargo xtask <command>`.
//!
//! - `cargo xtask tidy`: checks the workspace's invariants (crate layering, lints, crate docs,
//!   no module cycles, no function over 80 lines) and prints the longest functions.
//! - `cargo xtask bench-search`: measures tool search against its peers on real data.
//! - `cargo xtask test`: installs the test prerequisites if missing, then `cargo test --workspace`
//!   with the tests that need node or Python switched on (`TOOLKIT_EXTERNAL_TESTS=1`).
//! - `cargo xtask bench-gateway`: measures the MCP gateway (`agent-cli mcp serve`) fronting an
//!   upstream server of the benchmark sets' tools.
//! - `cargo xtask pool-size`: the tools array's size per deferral mode, with real MCP servers' tools.

mod alloc;
mod bench_gateway;
mod bench_search;
mod pool_size;
mod session_size;
mod test;
mod tidy;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Project chores for this workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check the workspace's invariants: which crate may depend on which, workspace lints, crate
    /// docs, no module cycles inside a crate, no function over 80 lines; print the longest ones.
    Tidy,
    /// Measure tool search: quality on the benchmark sets, speed and memory at 500 to 100k tools.
    BenchSearch(bench_search::Options),
    /// Measure the MCP gateway (`agent-cli mcp serve`) fronting an upstream server of the
    /// benchmark sets' tools: tools/list size, tool_search round trips over stdio and HTTP,
    /// nDCG@10 through it, many HTTP clients at once, memory per upstream tool.
    BenchGateway(bench_gateway::Options),
    /// The upstream MCP server of bench-gateway: benchmark tools over stdio.
    #[command(hide = true)]
    BenchUpstream(bench_gateway::UpstreamOptions),
    /// Print the size of the request's tools array for the built-ins plus real MCP servers' tools.
    PoolSize,
    /// Install what the tests need (npm MCP servers, the MCP Python SDK) if missing, then run
    /// `cargo test --workspace` with any extra arguments and TOOLKIT_EXTERNAL_TESTS=1, which
    /// switches on the tests that need them.
    Test {
        /// Passed on to `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::BenchSearch(options) => bench_search::run(options),
        Command::BenchGateway(options) => bench_gateway::run(options),
        Command::BenchUpstream(options) => bench_gateway::serve_upstream(options),
        Command::PoolSize => pool_size::run(),
        Command::Test { args } => test::run_tests(&tidy::workspace_root()?, &args),
        Command::Tidy => {
            let root = tidy::workspace_root()?;
            let tidy::Report { problems, notes } = tidy::check(&root)?;
            for note in &notes {
                println!("tidy: {note}");
            }
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
