//! Integration tests of tool-core: one binary, one module per concern.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support code: a panic here is a failed test, which is what it should be"
)]

mod all {
    pub mod support;

    mod concurrency;
    mod hooks;
    mod lifecycle;
    mod permissions;
}
