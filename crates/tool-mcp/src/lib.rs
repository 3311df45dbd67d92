//! MCP both ways: tools from MCP servers as [`tool_core`] tools, and our tools served over MCP.
//!
//! This crate is filled by the tool-mcp work.
