//! Servers, options and calls shared by the tests; paths to the installed servers and the skip
//! switch for tests that need node or Python come from `test-support`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tool_core::{ExecutionEvent, Session, ToolContext, ToolError, ToolOutput, ToolRegistry};
use tool_mcp::{McpConfig, McpManager, McpOptions, ServerConfig, ServerState};

pub use test_support::{External, external_tests, fixture, npm_server, venv_python};

/// How long any test waits for something that should take well under a second or two.
pub const DEADLINE: Duration = Duration::from_secs(60);

pub fn stdio(command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
    }
}

pub fn node(package: &str, args: &[&str]) -> ServerConfig {
    let script = npm_server(package);
    let mut all = vec![script.as_str()];
    all.extend_from_slice(args);
    stdio("node", &all)
}

pub fn options() -> McpOptions {
    McpOptions {
        connect_timeout: Duration::from_secs(30),
        call_timeout: Duration::from_secs(30),
        ping_timeout: Duration::from_secs(2),
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
    }
}

pub fn start(
    servers: Vec<(&str, ServerConfig)>,
    options: McpOptions,
) -> (McpManager, Arc<ToolRegistry>) {
    let config = McpConfig {
        servers: servers
            .into_iter()
            .map(|(name, server)| (name.to_owned(), server))
            .collect(),
    };
    let registry = Arc::new(ToolRegistry::new());
    let manager = McpManager::start(config, Arc::clone(&registry), options);
    (manager, registry)
}

/// Waits until every server is past connecting, and returns the states.
pub async fn settled(manager: &McpManager) -> BTreeMap<String, ServerState> {
    let (states, held) = manager.settled(DEADLINE).await;
    assert!(held, "servers did not settle: {states:?}");
    states
}

pub fn connected(states: &BTreeMap<String, ServerState>, server: &str) -> usize {
    match &states[server] {
        ServerState::Connected { tools } => *tools,
        other => panic!("{server} is not connected: {other:?}"),
    }
}

pub fn context(name: &str) -> (ToolContext, UnboundedReceiver<ExecutionEvent>) {
    let dir = std::env::temp_dir();
    let session = Arc::new(Session::new("mcp-tests", &dir, &dir));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (
        ToolContext::new("toolu_1", name, session).with_events(tx),
        rx,
    )
}

/// Calls a registered tool directly (the executor's permission stage would ask, and these tests
/// run without a prompter).
pub async fn call(
    registry: &ToolRegistry,
    name: &str,
    input: Value,
) -> Result<ToolOutput, ToolError> {
    let tool = registry
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not registered: {:?}", registry.names()))
        .tool()
        .clone();
    let (ctx, _events) = context(name);
    tool.call(input, &ctx).await
}
