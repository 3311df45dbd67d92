//! tool-core tools served over MCP.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
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
        }
    }

    /// Lists what `listing` returns instead of the whole registry.
    pub(crate) fn listing_from(mut self, listing: Listing) -> Self {
        self.listing = Some(listing);
        self
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
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info.name = self.name.clone();
        info.server_info.version = env!("CARGO_PKG_VERSION").to_owned();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = match &self.listing {
            Some(listing) => listing(),
            None => self.executor.registry().tools(),
        };
        let tools: Vec<Value> = tools
            .iter()
            .filter(|t| t.is_enabled())
            .map(Self::listing)
            .collect();
        serde_json::from_value(json!({ "tools": tools, "resultType": "complete" }))
            .map_err(internal)
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

/// [`serve_stdio`], listing only what `listing` returns (every tool of the registry stays
/// callable, and each call still goes through the executor).
pub async fn serve_stdio_listing(
    executor: Arc<Executor>,
    name: &str,
    listing: Listing,
) -> Result<(), McpError> {
    serve(ToolServer::new(executor, name).listing_from(listing)).await
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
