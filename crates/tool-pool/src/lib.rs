//! Which tools go in each LLM request, and how the model finds the rest.
//!
//! A [`ToolPool`] reads a [`tool_core::ToolRegistry`] and decides, for every request:
//!
//! - **assembly**: built-in tools sorted by name, then MCP tools sorted by name, appended after
//!   them; a built-in wins a name clash; disabled tools and tools denied outright (including whole
//!   servers, `mcp__slack`) are left out. The same set of tools gives the same bytes whatever order
//!   they were registered in, so the provider's prompt cache keeps hitting;
//! - **deferral**: tools outside the core whitelist (every MCP tool, by default) are left out and
//!   announced by name; the model finds them with `tool_search` ([`DeferralMode`]: always, auto:N,
//!   standard);
//! - **activation**: a found tool is called through `execute_tool` ([`Activation::Proxy`], the tools
//!   array never changes), appended to the array ([`Activation::Inline`]), or appended declared
//!   deferred and loaded by the provider from the search's references ([`Activation::Native`],
//!   the prompt-cache prefix never changes and the tool keeps its own name and schema).
//!
//! `tool_search` ranks by keywords (BM25+). With the `embeddings` feature (off by default: it
//! brings candle), `ToolPool::set_dense_index` gives it a dense side, and its keyword searches
//! fuse both rankings, so tools are also found by meaning.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tool_core::{Origin, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec};
//! use tool_pool::{PoolConfig, ToolPool};
//!
//! struct Stub(ToolSpec);
//! #[async_trait::async_trait]
//! impl Tool for Stub {
//!     type Input = serde_json::Value;
//!     fn spec(&self, _: serde_json::Value) -> ToolSpec { self.0.clone() }
//!     async fn call(&self, _: serde_json::Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text("ok"))
//!     }
//! }
//!
//! let registry = Arc::new(ToolRegistry::new());
//! let schema = json!({"type": "object", "properties": {}});
//! registry.register(Arc::new(Stub(ToolSpec::new("read_file", "Reads a file.", schema.clone())))).unwrap();
//! let pool = ToolPool::new(Arc::clone(&registry), PoolConfig::default()).unwrap();
//! let send = ToolSpec::new("mcp__slack__send_message", "Sends a Slack message.", schema)
//!     .with_origin(Origin::Mcp { server: "slack".into(), tool: "send_message".into() });
//! pool.add_mcp_tool(Stub(send)).unwrap();
//!
//! // The MCP tool is deferred: the request carries the core tools and the two search tools.
//! assert_eq!(pool.request_tools().names(), ["execute_tool", "read_file", "tool_search"]);
//! assert_eq!(pool.deferred_names(), ["mcp__slack__send_message"]);
//! ```

mod announce;
mod config;
mod discovery;
mod error;
mod index;
mod mode;
mod pool;
mod reference;
mod related;
mod shared;
mod suggest;
mod tools;

pub use config::{DEFAULT_CORE_TOOLS, EXECUTE_TOOL, PoolConfig, TOOL_SEARCH};
pub use error::PoolError;
pub use mode::{Activation, CharEstimate, DeferralMode, TokenCounter};
pub use pool::{RequestTools, ToolDeclaration, ToolPool};
pub use reference::tool_references;
pub use related::RelatedSearch;
pub use shared::document;
