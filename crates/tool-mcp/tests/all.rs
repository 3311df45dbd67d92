//! Integration tests against real MCP servers (the reference servers from npm, and small
//! servers written with the official Python SDK) and a real MCP client (the Python SDK).
//!
//! They need `npm ci` and `.venv` (see `.ci/run`) at the workspace root; without them they fail
//! with a message saying how to install them.
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
