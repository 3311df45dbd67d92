//! What the tools and clients that reach the network share: the TLS crypto provider, an error
//! told with its causes, and whether a host name means this machine.

/// Installs rustls' ring crypto provider once. reqwest is built without a default provider, and
/// every client (web_fetch, an MCP server over HTTP, a model provider) needs one before it is
/// built.
#[cfg(feature = "tls")]
pub fn install_crypto_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // Another part of the program may have installed a provider already; that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An error with its causes, joined by `: `, since an HTTP client's own message leaves out the
/// interesting part ("connection refused"). A cause whose text an earlier part already holds is
/// left out.
///
/// ```
/// let err = std::io::Error::other("connection refused");
/// assert_eq!(tool_core::net::error_chain(&err), "connection refused");
/// ```
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// Whether a host name is `localhost` or one of its subdomains, which resolve to loopback
/// without asking DNS (RFC 6761). A trailing dot and letter case do not matter.
///
/// ```
/// assert!(tool_core::net::is_localhost("LocalHost."));
/// assert!(tool_core::net::is_localhost("app.localhost"));
/// assert!(!tool_core::net::is_localhost("localhost.example.com"));
/// ```
pub fn is_localhost(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}
