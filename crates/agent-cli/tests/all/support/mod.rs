//! Helpers shared by agent-cli's integration tests.

#![allow(dead_code, reason = "not every helper is used by every test module")]

pub mod cli;
pub mod pty;
pub mod scripted;
