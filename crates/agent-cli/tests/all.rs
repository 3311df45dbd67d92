//! Integration tests of agent-cli: the providers against a scripted server on loopback, and the
//! real binary end to end (print mode, sessions, MCP servers, `mcp serve`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a test is a failed assertion"
)]

#[path = "all/support/mod.rs"]
mod support;

#[path = "all/durability.rs"]
mod durability;
#[path = "all/gateway.rs"]
mod gateway;
#[path = "all/hybrid.rs"]
mod hybrid;
#[path = "all/mcp.rs"]
mod mcp;
#[path = "all/native.rs"]
mod native;
#[path = "all/print_mode.rs"]
mod print_mode;
#[path = "all/provider.rs"]
mod provider;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/sessions.rs"]
mod sessions;
#[path = "all/skills.rs"]
mod skills;
#[path = "all/subagents.rs"]
mod subagents;
#[path = "all/terminal.rs"]
mod terminal;
#[path = "all/trust.rs"]
mod trust;
