//! Many MCP servers at once: concurrent start, per-server state, list changes, reconnection.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};
use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tool_core::ToolRegistry;

use crate::client::{LinkEvent, LinkHandler, McpTool, ServerLink};
use crate::config::{McpConfig, ServerConfig};
use crate::error::McpError;
use crate::names::{server_parts, tool_name};

/// Timeouts and backoff for [`McpManager`].
#[derive(Debug, Clone, PartialEq)]
pub struct McpOptions {
    /// How long a server may take to start and answer `initialize` (and the first `tools/list`).
    pub connect_timeout: Duration,
    /// How long one tool call may take before it is cancelled and answered with an error.
    pub call_timeout: Duration,
    /// How long a suspect server has to answer a ping before it is marked down.
    pub ping_timeout: Duration,
    /// The first delay before reconnecting a server that went down; doubled after each failed
    /// attempt, up to `max_backoff`, each with a random jitter of up to as much again.
    pub initial_backoff: Duration,
    /// The longest delay between reconnection attempts.
    pub max_backoff: Duration,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(300),
            ping_timeout: Duration::from_secs(10),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Where one server stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// Starting and shaking hands for the first time.
    Connecting,
    /// Connected; its tools are registered.
    Connected {
        /// How many of its tools are registered.
        tools: usize,
    },
    /// It never connected (bad command, no answer to `initialize`); it is not retried.
    Failed {
        /// Why.
        reason: String,
    },
    /// It was connected and went away (crashed, hung); it is being reconnected with backoff.
    Down {
        /// Why.
        reason: String,
    },
}

/// A change to the registry made on behalf of one server, for listeners such as a tool pool or
/// a search index that must follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryChange {
    /// The server's configured name.
    pub server: String,
    /// Tool names removed, sorted.
    pub removed: Vec<String>,
    /// Tool names added, sorted.
    pub added: Vec<String>,
}

struct Slot {
    name: String,
    prefix: String,
    config: ServerConfig,
    link: Arc<ServerLink>,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<LinkEvent>>,
    registered: Mutex<Vec<String>>,
    /// The last lines a stdio server wrote to stderr, shown with the reason it failed.
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The task draining the current process's stderr.
    stderr_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// How many stderr lines of a stdio server are kept for failure reasons.
const STDERR_LINES: usize = 5;

impl Slot {
    fn new(name: String, prefix: String, config: ServerConfig, call_timeout: Duration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            prefix,
            link: Arc::new(ServerLink::new(name.clone(), call_timeout, tx)),
            name,
            config,
            events: tokio::sync::Mutex::new(rx),
            registered: Mutex::new(Vec::new()),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            stderr_task: Mutex::new(None),
        }
    }

    /// Why the server went away: `reason`, followed by its last stderr lines when it wrote
    /// any. The stderr drain gets a moment to read what a dying server said last.
    async fn failure(&self, reason: String) -> String {
        let drain = self
            .stderr_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(drain) = drain {
            let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
        }
        self.explain(reason)
    }

    /// `reason`, followed by the server's last stderr lines when it wrote any.
    fn explain(&self, reason: String) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            reason
        } else {
            let tail: Vec<&str> = lines.iter().map(String::as_str).collect();
            format!("{reason} (stderr: {})", tail.join(" | "))
        }
    }
}

struct Inner {
    registry: Arc<ToolRegistry>,
    options: McpOptions,
    states: watch::Sender<BTreeMap<String, ServerState>>,
    changes: broadcast::Sender<RegistryChange>,
    shutdown: CancellationToken,
    /// The instructions each server returned at `initialize`, by its part of its tools' names.
    instructions: Mutex<BTreeMap<String, String>>,
}

/// Connects to the servers of an [`McpConfig`] and keeps their tools in a [`ToolRegistry`].
///
/// Every server starts at once, each under its own connect timeout, so one slow or broken server
/// never holds up the others. A `notifications/tools/list_changed` re-lists the server's tools
/// and updates the registry in place; a server that crashes or stops answering leaves the
/// registry, is marked [`ServerState::Down`], and is reconnected with exponential backoff.
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("states", &self.states())
            .finish_non_exhaustive()
    }
}

impl McpManager {
    /// Starts connecting to every configured server in the background and returns at once.
    /// Must be called inside a tokio runtime.
    pub fn start(config: McpConfig, registry: Arc<ToolRegistry>, options: McpOptions) -> Self {
        let initial: BTreeMap<String, ServerState> = config
            .servers
            .keys()
            .map(|name| (name.clone(), ServerState::Connecting))
            .collect();
        let (states, _) = watch::channel(initial);
        let (changes, _) = broadcast::channel(256);
        let inner = Arc::new(Inner {
            registry,
            options,
            states,
            changes,
            shutdown: CancellationToken::new(),
            instructions: Mutex::new(BTreeMap::new()),
        });
        let parts: BTreeMap<String, String> =
            server_parts(config.servers.keys()).into_iter().collect();
        for (name, server) in config.servers {
            let prefix = parts.get(&name).cloned().unwrap_or_else(|| name.clone());
            let slot = Slot::new(name, prefix, server, inner.options.call_timeout);
            tokio::spawn(supervise(Arc::clone(&inner), Arc::new(slot)));
        }
        Self { inner }
    }

    /// The current state of every server, by name.
    pub fn states(&self) -> BTreeMap<String, ServerState> {
        self.inner.states.borrow().clone()
    }

    /// A receiver that sees every state change.
    pub fn watch_states(&self) -> watch::Receiver<BTreeMap<String, ServerState>> {
        self.inner.states.subscribe()
    }

    /// What each connected server said about itself at `initialize` (its `instructions`), by
    /// the server's part of its tools' names (`mcp__PART__tool`).
    pub fn instructions(&self) -> BTreeMap<String, String> {
        self.inner
            .instructions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A receiver of registry changes (tools added and removed per server).
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryChange> {
        self.inner.changes.subscribe()
    }

    /// Waits until `done` holds for the server states, or `timeout` passes; returns the states
    /// seen last and whether `done` held.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&BTreeMap<String, ServerState>) -> bool,
    ) -> (BTreeMap<String, ServerState>, bool) {
        let mut rx = self.watch_states();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|s| done(s))).await;
        let held = matches!(waited, Ok(Ok(_)));
        (self.states(), held)
    }

    /// Waits until no server is still connecting (each is connected or has failed), or `timeout`
    /// passes; returns the states seen last and whether they settled.
    pub async fn settled(&self, timeout: Duration) -> (BTreeMap<String, ServerState>, bool) {
        self.wait_for(timeout, |states| {
            states
                .values()
                .all(|s| !matches!(s, ServerState::Connecting))
        })
        .await
    }

    /// Disconnects every server and removes its tools.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.inner.shutdown.cancel();
    }
}

impl Inner {
    fn set_state(&self, server: &str, state: ServerState) {
        self.states.send_modify(|states| {
            states.insert(server.to_owned(), state);
        });
    }

    /// Replaces the server's tools in the registry with `listing`, keeping names deterministic:
    /// tools are named in the order of their remote names, avoiding every name the registry
    /// holds for anything else.
    fn apply_tools(&self, slot: &Slot, listing: &[serde_json::Value]) -> usize {
        let mut registered = slot.registered.lock().unwrap_or_else(|e| e.into_inner());
        let old: Vec<String> = std::mem::take(&mut *registered);
        for name in &old {
            self.registry.unregister(name);
        }
        let mut taken: BTreeSet<String> = self.registry.names().into_iter().collect();
        let mut sorted: Vec<&serde_json::Value> = listing.iter().collect();
        sorted.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        for entry in sorted {
            let remote = entry["name"].as_str().unwrap_or_default();
            let name = tool_name(&slot.prefix, remote, &taken);
            let tool = McpTool::from_listing(name.clone(), entry, Arc::clone(&slot.link));
            // A tool whose schema or name the registry refuses is left out rather than taking
            // the whole server down.
            if self.registry.register(tool).is_ok() {
                taken.insert(name.clone());
                registered.push(name);
            }
        }
        registered.sort();
        let added: Vec<String> = registered
            .iter()
            .filter(|n| !old.contains(n))
            .cloned()
            .collect();
        let removed: Vec<String> = old
            .iter()
            .filter(|n| !registered.contains(n))
            .cloned()
            .collect();
        let count = registered.len();
        drop(registered);
        if !added.is_empty() || !removed.is_empty() {
            // No receiver is fine: nobody follows the registry yet.
            let _ = self.changes.send(RegistryChange {
                server: slot.name.clone(),
                removed,
                added,
            });
        }
        count
    }
}

/// Starts the server (or opens the HTTP connection) and shakes hands.
async fn connect(slot: &Slot) -> Result<RunningService<RoleClient, LinkHandler>, McpError> {
    let handler = LinkHandler {
        link: Arc::clone(&slot.link),
    };
    let protocol = |err: rmcp::service::ClientInitializeError| McpError::Protocol {
        server: slot.name.clone(),
        reason: err.to_string(),
    };
    match &slot.config {
        ServerConfig::Stdio { command, args, env } => {
            let transport = spawn_stdio(slot, command, args, env)?;
            handler.serve(transport).await.map_err(protocol)
        }
        ServerConfig::Http { url, headers } => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(http_headers(&slot.name, headers)?);
            tool_core::net::install_crypto_provider();
            let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
            handler.serve(transport).await.map_err(protocol)
        }
    }
}

/// Spawns a stdio server, with its stderr drained into the slot's tail of recent lines.
fn spawn_stdio(
    slot: &Slot,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> Result<TokioChildProcess, McpError> {
    let mut cmd = tokio::process::Command::new(command);
    tool_core::child_env::scrub(&mut cmd);
    cmd.args(args).envs(env);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| McpError::Spawn {
            server: slot.name.clone(),
            reason: format!("{command}: {err}"),
        })?;
    slot.stderr
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    if let Some(stderr) = stderr {
        let task = tokio::spawn(keep_stderr_tail(stderr, Arc::clone(&slot.stderr)));
        *slot.stderr_task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    }
    Ok(transport)
}

/// The configured headers of an HTTP server, checked to be valid HTTP.
fn http_headers(
    server: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(key, value)| {
            let key = http::HeaderName::from_bytes(key.as_bytes());
            let value = http::HeaderValue::from_str(value);
            match (key, value) {
                (Ok(key), Ok(value)) => Ok((key, value)),
                _ => Err(McpError::Spawn {
                    server: server.to_owned(),
                    reason: "a header name or value is not valid http".to_owned(),
                }),
            }
        })
        .collect()
}

/// Drains a server's stderr (so it never blocks on a full pipe), keeping the last lines.
async fn keep_stderr_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    use tokio::io::AsyncBufReadExt as _;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line.chars().take(300).collect());
    }
}

async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    timeout: Duration,
) -> Result<Vec<serde_json::Value>, McpError> {
    let tools = tokio::time::timeout(timeout, peer.list_all_tools())
        .await
        .map_err(|_| McpError::Protocol {
            server: server.to_owned(),
            reason: format!("tools/list took longer than {:.1}s", timeout.as_secs_f64()),
        })?
        .map_err(|err| McpError::Protocol {
            server: server.to_owned(),
            reason: format!("tools/list failed: {err}"),
        })?;
    Ok(tools
        .into_iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect())
}

async fn ping(peer: &Peer<RoleClient>, timeout: Duration) -> bool {
    let request = ClientRequest::PingRequest(PingRequest::default());
    match peer
        .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
        .await
    {
        Ok(handle) => handle.await_response().await.is_ok(),
        Err(_) => false,
    }
}

/// Runs one server for the manager's lifetime: connect, follow list changes, notice failure,
/// reconnect with backoff.
async fn supervise(inner: Arc<Inner>, slot: Arc<Slot>) {
    let options = inner.options.clone();
    let mut delays = reconnect_delays(&options);
    let mut ever_connected = false;
    let mut events = slot.events.lock().await;
    loop {
        let outcome = tokio::select! {
            outcome = connect_and_list(&slot, &options) => outcome,
            () = inner.shutdown.cancelled() => return,
        };
        let reason = match outcome {
            Err(err) => err.to_string(),
            Ok((running, tools)) => {
                ever_connected = true;
                delays = reconnect_delays(&options);
                match run_connection(&inner, &slot, &mut events, running, &tools).await {
                    Some(reason) => reason,
                    None => return,
                }
            }
        };
        let reason = slot.failure(reason).await;
        if !ever_connected {
            inner.set_state(&slot.name, ServerState::Failed { reason });
            return;
        }
        inner.set_state(&slot.name, ServerState::Down { reason });
        let delay = delays.next().unwrap_or(options.max_backoff);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// The delays between reconnection attempts: `initial_backoff`, doubled after each failed
/// attempt up to `max_backoff`, each plus a random jitter of up to as much again, without end.
fn reconnect_delays(options: &McpOptions) -> backon::ExponentialBackoff {
    ExponentialBuilder::new()
        .with_min_delay(options.initial_backoff)
        .with_max_delay(options.max_backoff)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
        .build()
}

/// Connects within the connect timeout and lists the server's tools.
async fn connect_and_list(
    slot: &Slot,
    options: &McpOptions,
) -> Result<
    (
        RunningService<RoleClient, LinkHandler>,
        Vec<serde_json::Value>,
    ),
    McpError,
> {
    let running = tokio::time::timeout(options.connect_timeout, connect(slot))
        .await
        .map_err(|_| McpError::ConnectTimeout {
            server: slot.name.clone(),
            seconds: options.connect_timeout.as_secs_f64(),
        })??;
    let tools = list_tools(running.peer(), &slot.name, options.connect_timeout).await?;
    Ok((running, tools))
}

/// Serves a live connection until it ends: registers its tools, follows list changes and
/// checks on the server when a call suspects it. Afterwards its tools are gone from the
/// registry and the connection is closed. Returns why it ended, or `None` when the manager
/// shut down.
async fn run_connection(
    inner: &Inner,
    slot: &Slot,
    events: &mut mpsc::UnboundedReceiver<LinkEvent>,
    running: RunningService<RoleClient, LinkHandler>,
    tools: &[serde_json::Value],
) -> Option<String> {
    // Reports from an earlier connection are about a server that is gone.
    while events.try_recv().is_ok() {}
    let peer = running.peer().clone();
    if let Some(text) = peer.peer_info().and_then(|info| info.instructions.clone()) {
        inner
            .instructions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(slot.prefix.clone(), text);
    }
    let count = inner.apply_tools(slot, tools);
    slot.link.set_peer(Some(peer.clone()));
    inner.set_state(&slot.name, ServerState::Connected { tools: count });
    let stop = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = loop {
        tokio::select! {
            quit = &mut waiting => {
                break Some(match quit {
                    Ok(reason) => format!("the connection closed ({reason:?})"),
                    Err(err) => format!("the connection task failed: {err}"),
                });
            }
            event = events.recv() => {
                if let Some(reason) = on_event(inner, slot, &peer, event).await {
                    break Some(reason);
                }
            }
            () = inner.shutdown.cancelled() => break None,
        }
    };
    slot.link.set_peer(None);
    inner.apply_tools(slot, &[]);
    stop.cancel();
    ended
}

/// Acts on a connection's report; returns why the connection is to be dropped, if it is.
async fn on_event(
    inner: &Inner,
    slot: &Slot,
    peer: &Peer<RoleClient>,
    event: Option<LinkEvent>,
) -> Option<String> {
    let options = &inner.options;
    match event {
        Some(LinkEvent::ListChanged) => {
            match list_tools(peer, &slot.name, options.call_timeout).await {
                Ok(tools) => {
                    let count = inner.apply_tools(slot, &tools);
                    inner.set_state(&slot.name, ServerState::Connected { tools: count });
                    None
                }
                Err(err) => Some(err.to_string()),
            }
        }
        Some(LinkEvent::Suspect) if !ping(peer, options.ping_timeout).await => {
            Some("the server stopped answering".to_owned())
        }
        Some(LinkEvent::Suspect) | None => None,
    }
}
