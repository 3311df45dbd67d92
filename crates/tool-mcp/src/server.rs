//! tool-core tools served over MCP.

use std::sync::Arc;

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;
use tool_core::{AnyTool, Content, ExecutionEvent, Executor, ToolCall, ToolResult};

use crate::error::McpError;

/// An MCP server handler exposing the tools of an [`Executor`]'s registry: `tools/list` lists
/// every enabled tool's spec and `tools/call` runs the call through the executor, so validation,
/// hooks and permission rules apply exactly as they do for a model's calls.
#[derive(Clone)]
pub(crate) struct ToolServer {
    executor: Arc<Executor>,
    name: String,
    listing: Option<Listing>,
    changes: Option<watch::Receiver<()>>,
    /// Signalled after each call this server answered.
    calls: Arc<watch::Sender<()>>,
    /// What each `subscriptions/listen` stream starts from, taken before the stream is
    /// acknowledged (so a change right after the acknowledgment is never missed), oldest first.
    baselines: Arc<std::sync::Mutex<std::collections::VecDeque<Baseline>>>,
}

/// The list a client was told of, and what to watch for changes to it.
type Baseline = (Vec<Value>, ListWatch);

/// What may change a server's list: upstream changes, and its own calls.
struct ListWatch {
    changes: Option<watch::Receiver<()>>,
    calls: watch::Receiver<()>,
}

impl ListWatch {
    /// Waits for the next signal that the list may have changed; `false` once none can come.
    async fn changed(&mut self) -> bool {
        loop {
            let Some(changes) = &mut self.changes else {
                return self.calls.changed().await.is_ok();
            };
            tokio::select! {
                changed = changes.changed() => match changed {
                    Ok(()) => return true,
                    // Upstream has nothing more to say; the calls still may.
                    Err(_) => self.changes = None,
                },
                changed = self.calls.changed() => return changed.is_ok(),
            }
        }
    }
}

/// Which tools a server lists, asked at each `tools/list` (every tool stays callable): a tool
/// pool's request tools, say, so that a client sees the few tools an agent would.
pub type Listing = Arc<dyn Fn() -> Vec<AnyTool> + Send + Sync>;

impl std::fmt::Debug for ToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolServer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ToolServer {
    /// A handler for the executor's registry, announcing itself under `name`.
    pub(crate) fn new(executor: Arc<Executor>, name: impl Into<String>) -> Self {
        Self {
            executor,
            name: name.into(),
            listing: None,
            changes: None,
            calls: Arc::new(watch::channel(()).0),
            baselines: Arc::default(),
        }
    }

    /// Waits until what `tools/list` answers differs from `seen`, which it then becomes; `false`
    /// once nothing can change it any more.
    async fn list_changed(&self, watch: &mut ListWatch, seen: &mut Vec<Value>) -> bool {
        while watch.changed().await {
            let now = self.entries();
            if now != *seen {
                *seen = now;
                return true;
            }
        }
        false
    }

    /// What to watch for changes to announce; `None` when this server announces none.
    fn watch(&self) -> Option<ListWatch> {
        let changes = self.changes.clone()?;
        Some(ListWatch {
            changes: Some(changes),
            calls: self.calls.subscribe(),
        })
    }

    /// What `tools/list` answers now: each enabled tool's entry.
    fn entries(&self) -> Vec<Value> {
        let tools = match &self.listing {
            Some(listing) => listing(),
            None => self.executor.registry().tools(),
        };
        tools
            .iter()
            .filter(|t| t.is_enabled())
            .map(Self::listing)
            .collect()
    }

    /// The `tools/list` entry for one tool (keys in a fixed order).
    fn listing(tool: &AnyTool) -> Value {
        let spec = tool.spec();
        // What a call with no arguments would be; an input that does not fit is fail-closed.
        let probe = tool
            .info(&Value::Object(serde_json::Map::new()))
            .unwrap_or_default();
        let mut entry = json!({
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
            "annotations": {
                "readOnlyHint": probe.is_read_only(),
                "destructiveHint": probe.is_destructive(),
            },
        });
        if let Some(output) = &spec.output_schema {
            entry["outputSchema"] = output.clone();
        }
        entry
    }
}

/// Maps a tool-core result to an MCP `CallToolResult` (as JSON).
fn result_to_mcp(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| match block {
            Content::Text { text } => json!({"type": "text", "text": text}),
            Content::Image { media_type, data } => {
                json!({"type": "image", "data": data, "mimeType": media_type})
            }
        })
        .collect();
    let mut out = json!({"content": content, "isError": result.is_error});
    if let Some(structured) = &result.structured {
        out["structuredContent"] = structured.clone();
    }
    out
}

fn internal(err: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(err.to_string(), None)
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        let tools = ServerCapabilities::builder().enable_tools();
        let capabilities = if self.changes.is_some() {
            tools.enable_tool_list_changed().build()
        } else {
            tools.build()
        };
        let mut info = ServerConfig::new(capabilities);
        info.server_info.name = self.name.clone();
        info.server_info.version = env!("CARGO_PKG_VERSION").to_owned();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({ "tools": self.entries(), "resultType": "complete" }))
            .map_err(internal)
    }

    /// With changes to announce, watches them for this client: each time what `tools/list` would
    /// answer differs from what it answered last, the client gets `notifications/tools/list_changed`.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(mut watch) = self.watch() else {
            return;
        };
        let server = self.clone();
        let peer = context.peer;
        let mut seen = server.entries();
        tokio::spawn(async move {
            while server.list_changed(&mut watch, &mut seen).await {
                // A client that left needs no notification, and nothing more will reach it.
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    /// A client on protocol 2026-07-28 asks for changes with `subscriptions/listen`; with changes
    /// to announce, it gets what it asked of `tools/list_changed` (the SDK keeps the rest out).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let watch = self.watch()?;
        if requested.tools_list_changed == Some(true) {
            let baseline = (self.entries(), watch);
            self.baselines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back(baseline);
        }
        Some(requested.clone())
    }

    /// One `subscriptions/listen` stream: `notifications/tools/list_changed` each time what
    /// `tools/list` would answer has changed, until the client cancels it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let baseline = self
            .baselines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let Some((mut seen, mut watch)) =
            baseline.or_else(|| self.watch().map(|watch| (self.entries(), watch)))
        else {
            context.cancelled().await;
            return Ok(());
        };
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = self.list_changed(&mut watch, &mut seen) => {
                    if !changed {
                        // Nothing will change any more: keep the stream open until the client
                        // ends it.
                        context.cancelled().await;
                        return Ok(());
                    }
                    if context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let input = Value::Object(request.arguments.unwrap_or_default());
        let id = format!(
            "mcp_{}",
            serde_json::to_string(&context.id).unwrap_or_default()
        );
        let call = ToolCall::new(id, request.name.as_ref(), input);
        let (events_tx, mut events_rx) = tokio::sync::mpsc::unbounded_channel();
        let progress_token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let forward = async move {
            while let Some(event) = events_rx.recv().await {
                if let (
                    ExecutionEvent::Progress {
                        message,
                        progress,
                        total,
                        ..
                    },
                    Some(token),
                ) = (event, &progress_token)
                {
                    let params = json!({
                        "progressToken": token,
                        "progress": progress.unwrap_or(0.0),
                        "total": total,
                        "message": message,
                    });
                    if let Ok(params) = serde_json::from_value(params) {
                        // Progress is best-effort: a client that left needs none.
                        let _ = peer.notify_progress(params).await;
                    }
                }
            }
        };
        let run = self
            .executor
            .execute(call, context.ct.clone(), Some(events_tx));
        let (result, ()) = tokio::join!(run, forward);
        // A call may change what this server lists (a search that activates the tools it
        // found, say): the watchers look again.
        self.calls.send_replace(());
        let mut mapped = result_to_mcp(&result);
        // rmcp strips `resultType` again for peers on protocol versions without it.
        mapped["resultType"] = json!("complete");
        let mapped: CallToolResult = serde_json::from_value(mapped).map_err(internal)?;
        Ok(CallToolResponse::Complete(mapped))
    }
}

/// Serves the executor's tools over MCP on this process's stdin and stdout until the client
/// disconnects. `agent-cli mcp serve` and the `serve_demo` example call this.
pub async fn serve_stdio(executor: Arc<Executor>, name: &str) -> Result<(), McpError> {
    serve(ToolServer::new(executor, name)).await
}

/// An MCP server over an [`Executor`]'s tools, configured before it serves: what it lists, and
/// whether it announces changes to that list.
#[derive(Debug)]
pub struct McpServe {
    handler: ToolServer,
}

impl McpServe {
    /// A server for the executor's registry, announcing itself under `name`; it lists every
    /// enabled tool, and each call goes through the executor.
    pub fn new(executor: Arc<Executor>, name: &str) -> Self {
        Self {
            handler: ToolServer::new(executor, name),
        }
    }

    /// Lists only what `listing` returns (every tool of the registry stays callable).
    #[must_use]
    pub fn listing(mut self, listing: Listing) -> Self {
        self.handler.listing = Some(listing);
        self
    }

    /// Declares `tools.listChanged`, and sends each client `notifications/tools/list_changed`
    /// when, after a signal on `changes`, what its `tools/list` would answer has changed (an
    /// upstream server came, went or changed its tools, say).
    #[must_use]
    pub fn announcing(mut self, changes: watch::Receiver<()>) -> Self {
        self.handler.changes = Some(changes);
        self
    }

    /// Serves one client on this process's stdin and stdout until it disconnects.
    pub async fn stdio(self) -> Result<(), McpError> {
        serve(self.handler).await
    }

    /// Serves clients over streamable HTTP on `listener`, path [`crate::MCP_PATH`], until the
    /// process ends: statelessly (any process serving the same tools can answer any request),
    /// each connection on its own task. With `token`, a request without the header
    /// `Authorization: Bearer <token>` is answered 401. A non-loopback address accepts any
    /// `Host` (the token is what guards it); a loopback one only local names.
    pub async fn http(
        self,
        listener: tokio::net::TcpListener,
        token: Option<String>,
    ) -> Result<(), McpError> {
        crate::http::serve(self.handler, listener, token).await
    }
}

async fn serve(handler: ToolServer) -> Result<(), McpError> {
    let server = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|err| McpError::Serve(err.to_string()))?;
    server
        .waiting()
        .await
        .map_err(|err| McpError::Serve(err.to_string()))?;
    Ok(())
}
