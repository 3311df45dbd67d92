//! Integration tests of tool-search.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic here is a failed test, which is what it should be"
)]

mod all {
    #[cfg(feature = "embeddings")]
    mod embeddings;
    mod index;
}
