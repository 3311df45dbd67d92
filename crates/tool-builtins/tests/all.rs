//! Integration tests of the built-in tools, one module per tool.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support code: a panic here is a failed test, which is what it should be"
)]

#[path = "all/support.rs"]
mod support;

#[path = "all/edit.rs"]
mod edit;
#[path = "all/glob.rs"]
mod glob;
#[path = "all/grep.rs"]
mod grep;
#[path = "all/hostile.rs"]
mod hostile;
#[path = "all/plan.rs"]
mod plan;
#[path = "all/read.rs"]
mod read;
#[path = "all/registry.rs"]
mod registry;
#[path = "all/sandbox.rs"]
mod sandbox;
#[path = "all/shell.rs"]
mod shell;
#[path = "all/shell_safety.rs"]
mod shell_safety;
#[path = "all/todo.rs"]
mod todo;
#[path = "all/web_fetch.rs"]
mod web_fetch;
#[path = "all/write.rs"]
mod write;
