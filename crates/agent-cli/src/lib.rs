//! The coding agent behind the `agent-cli` binary: providers, the agent loop, sessions and
//! settings. The binary (`src/main.rs`) wires these to the terminal.

pub mod agent;
pub mod attachments;
pub mod commands;
pub mod compaction;
pub mod conversation;
pub mod frontend;
pub mod input;
pub mod instructions;
mod live;
mod markdown;
mod menu;
pub mod provider;
pub mod recap;
pub mod runtime;
pub mod settings;
pub mod skills;
pub mod structured;
pub mod subagent;
pub mod tool_lines;
pub mod transcript;
pub mod trust;
pub mod ui;
pub mod usage;
