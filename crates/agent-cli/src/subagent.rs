//! Sub-agents: the `agent` tool starts an agent of a chosen type on a task, with its own
//! conversation, its own system prompt (the type's instructions), the same provider and only the
//! type's tools, and returns its final answer as the tool's result.
//!
//! - [`kinds`]: agent types, the built-in read-only `explore` and markdown files in the
//!   `.claude/agents` format (`.agent-cli/agents/` and `.claude/agents/` in the project,
//!   `agents/` in the user's directory; the project wins a name clash).
//! - [`run`]: one run. The loop is [`crate::agent::Agent::run_turn`] itself, over a runtime
//!   restricted to the type's tools ([`crate::runtime::Inheritance::restricted`]): the same
//!   session, rules, mode and hooks; a tool outside the set, the `agent` tool among them, is
//!   refused with a reason; permission prompts name the sub-agent. Each tool call it starts is
//!   the `agent` call's progress; the call's cancellation cancels it; its messages are saved in
//!   `<session dir>/subagents/<tool_use_id>/`, and the result's structured part says where.
//! - [`tool`]: the `agent` tool. A call is read-only, and so runs beside other read-only calls,
//!   when every tool of its type only reads.

pub mod guard;
pub mod kinds;
pub mod run;
pub mod tool;

pub use kinds::{AGENT_TOOL, AgentFolder, AgentType, AgentTypes, FolderOwner, ToolChoice};
pub use run::Launcher;
pub(crate) use run::transcript_dir;
pub use tool::{AgentInput, install};

#[cfg(test)]
mod tests;
