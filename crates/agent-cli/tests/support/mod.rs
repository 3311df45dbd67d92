//! Helpers shared by agent-cli's integration tests.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the support code"
)]

pub mod scripted;
