//! The crate's one error type.

/// What can go wrong reading MCP configuration or talking to an MCP server.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The configuration file could not be read.
    #[error("cannot read mcp config {path}: {source}")]
    ReadConfig {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration is not valid JSON of the expected shape.
    #[error("invalid mcp config{}: {reason}", location.as_deref().map(|l| format!(" {l}")).unwrap_or_default())]
    InvalidConfig {
        /// The file, when there is one.
        location: Option<String>,
        /// What is wrong.
        reason: String,
    },
    /// A `${VAR}` reference names an unset variable and gives no default.
    #[error(
        "mcp server {server}: environment variable {variable} is not set and has no default (write ${{{variable}:-default}})"
    )]
    MissingVariable {
        /// The server whose entry uses it.
        server: String,
        /// The variable.
        variable: String,
    },
    /// The server process or connection could not be started.
    #[error("cannot start mcp server {server}: {reason}")]
    Spawn {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server did not finish the MCP handshake within the connect timeout.
    #[error("mcp server {server} did not answer initialize within {seconds:.1}s")]
    ConnectTimeout {
        /// The server.
        server: String,
        /// The timeout.
        seconds: f64,
    },
    /// The MCP handshake or a request failed.
    #[error("mcp server {server}: {reason}")]
    Protocol {
        /// The server.
        server: String,
        /// What failed.
        reason: String,
    },
    /// Serving tools over MCP failed.
    #[error("mcp serve failed: {0}")]
    Serve(String),
}
