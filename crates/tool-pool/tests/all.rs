//! Integration tests of tool-pool: one binary, one module per concern.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic here is a failed test, which is what it should be"
)]

mod all {
    pub mod support;

    mod assembly;
    mod deferral;
    #[cfg(feature = "embeddings")]
    mod embeddings;
    mod search_tool;
    mod stability;
}
