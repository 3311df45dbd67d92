//! The binary's modules: the grammar, the assembly of a run, the subcommands, print mode and
//! the interactive front end. The engine they drive is the `agent_cli` library.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};
use tool_builtins::SandboxMode;
use tool_core::{CancellationToken, PermissionMode, ToolCall};

use agent_cli::agent::{Agent, AgentEvent, Outcome};
use agent_cli::commands::{self, Slash};
use agent_cli::compaction::{self, Window};
use agent_cli::frontend::{FrontEnd, Headless};
use agent_cli::input::Read;
use agent_cli::instructions;
use agent_cli::runtime::{ToolOptions, ToolRuntime};
use agent_cli::settings::{Paths, Settings};
use agent_cli::structured::{self, StructuredOutput};
use agent_cli::subagent::{self, AgentTypes};
use agent_cli::transcript::{self, Transcript};
use agent_cli::trust;
use agent_cli::ui;
use agent_cli::usage::{self, Meter};

mod cli;
mod context;
mod interactive;
mod print;
mod run;
mod subcommands;

pub(crate) use cli::*;
pub(crate) use context::*;
pub(crate) use interactive::*;
pub(crate) use print::*;
pub(crate) use run::*;
pub(crate) use subcommands::*;
