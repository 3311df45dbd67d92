//! MCP both ways for tool-core: tools from MCP servers as [`tool_core::Tool`]s, and a tool-core
//! registry served over MCP.
//!
//! - [`McpConfig`] reads the familiar `.mcp.json` (`{"mcpServers": {...}}`, stdio and
//!   streamable HTTP servers, `${VAR}` and `${VAR:-default}` expansion).
//! - [`McpManager`] connects to every server at once, each under its own connect timeout, and
//!   keeps their tools in a [`tool_core::ToolRegistry`] as `mcp__{server}__{tool}`, following
//!   `tools/list_changed`, timing out calls, and reconnecting servers that crash or hang;
//!   [`McpManager::subscribe`] tells listeners what changed.
//! - [`serve_stdio`] exposes a registry's tools to any MCP client, each call going through the
//!   [`tool_core::Executor`] so permission rules apply.
//!
//! ```no_run
//! use std::{path::Path, sync::Arc, time::Duration};
//! use tool_core::ToolRegistry;
//! use tool_mcp::{McpConfig, McpManager, McpOptions};
//!
//! # async fn demo() -> Result<(), tool_mcp::McpError> {
//! let config = McpConfig::load(Path::new(".mcp.json"))?;
//! let registry = Arc::new(ToolRegistry::new());
//! let manager = McpManager::start(config, Arc::clone(&registry), McpOptions::default());
//! // Every server connected or failed (each under its own connect timeout).
//! let (states, _all_settled) = manager.settled(Duration::from_secs(30)).await;
//! for (server, state) in states {
//!     println!("{server}: {state:?}");
//! }
//! println!("tools: {:?}", registry.names());
//! # Ok(())
//! # }
//! ```

mod client;
mod config;
mod error;
mod http;
mod manager;
mod names;
mod server;

pub use config::{McpConfig, ServerConfig};
pub use error::McpError;
pub use http::MCP_PATH;
pub use manager::{McpManager, McpOptions, RegistryChange, ServerState};
pub use server::{Listing, McpServe, serve_stdio};
