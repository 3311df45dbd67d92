//! Which tools go in each LLM request.
//!
//! This crate is filled by the tool-pool work: the core whitelist, deferral, cache-stable
//! ordering, session activation, and the `tool_search` and `execute_tool` tools.
