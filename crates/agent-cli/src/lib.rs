//! The coding agent behind the `agent-cli` binary: providers, the conversation, sessions and
//! settings. The binary (`src/main.rs`) wires these to the terminal.

pub mod conversation;
pub mod provider;
