//! Integration tests against real MCP servers (the reference servers from npm, and small
//! servers written with the official Python SDK) and a real MCP client (the Python SDK).
//!
//! Those are switched on by `cargo xtask test`, which installs the servers and the SDK and sets
//! `TOOLKIT_EXTERNAL_TESTS`; a bare `cargo test` skips them with one line each and runs the rest.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a panic in a test is a failed assertion"
)]

mod support;

mod cancel;
mod client;
mod failures;
mod http;
mod serve;
