//! An MCP server's tools as tool-core [`Tool`]s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, ProgressNotificationParam, ProgressToken, RequestId,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tool_core::{
    CallInfo, Content, Loading, Origin, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// Something a connection tells its supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkEvent {
    /// The server sent `notifications/tools/list_changed`.
    ListChanged,
    /// A call failed in a way that suggests the server is dead or stuck.
    Suspect,
}

/// What a server's tools share with its supervisor: the live connection (if any), the progress
/// routes of running calls, and a channel to report trouble.
pub(crate) struct ServerLink {
    pub(crate) server: String,
    pub(crate) call_timeout: Duration,
    peer: RwLock<Option<Peer<RoleClient>>>,
    progress: Mutex<HashMap<String, ToolContext>>,
    events: UnboundedSender<LinkEvent>,
}

impl ServerLink {
    pub(crate) fn new(
        server: String,
        call_timeout: Duration,
        events: UnboundedSender<LinkEvent>,
    ) -> Self {
        Self {
            server,
            call_timeout,
            peer: RwLock::new(None),
            progress: Mutex::new(HashMap::new()),
            events,
        }
    }

    pub(crate) fn set_peer(&self, peer: Option<Peer<RoleClient>>) {
        *self.peer.write().unwrap_or_else(|e| e.into_inner()) = peer;
    }

    fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, HashMap<String, ToolContext>> {
        // The map only holds clones of contexts, so a poisoned lock still guards usable data.
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn report(&self, event: LinkEvent) {
        // A closed channel means the manager has shut down; nobody needs the report.
        let _ = self.events.send(event);
    }
}

fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

/// The rmcp client handler of one connection: routes progress to the calling tool's context and
/// list changes to the supervisor.
pub(crate) struct LinkHandler {
    pub(crate) link: Arc<ServerLink>,
}

impl ClientHandler for LinkHandler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let ctx = self
            .link
            .routes()
            .get(&token_key(&params.progress_token))
            .cloned();
        if let Some(ctx) = ctx {
            ctx.progress_with(
                params.message.unwrap_or_default(),
                Some(params.progress),
                params.total,
            );
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.link.report(LinkEvent::ListChanged);
    }
}

/// One tool of an MCP server, registered in a tool-core registry as `mcp__{server}__{tool}`.
pub(crate) struct McpTool {
    spec: ToolSpec,
    remote_name: String,
    read_only: bool,
    destructive: bool,
    link: Arc<ServerLink>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("server", &self.link.server)
            .field("remote_name", &self.remote_name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// Builds the tool from the server's `tools/list` entry (as JSON), under the given name.
    pub(crate) fn from_listing(name: String, listing: &Value, link: Arc<ServerLink>) -> Self {
        let remote_name = listing["name"].as_str().unwrap_or_default().to_owned();
        let description = listing["description"].as_str().unwrap_or_default();
        let input_schema = match &listing["inputSchema"] {
            Value::Object(_) => listing["inputSchema"].clone(),
            _ => serde_json::json!({"type": "object"}),
        };
        let annotations = &listing["annotations"];
        let read_only = annotations["readOnlyHint"].as_bool() == Some(true);
        // MCP's default for destructiveHint is true; a read-only tool is never destructive.
        let destructive = !read_only && annotations["destructiveHint"].as_bool() != Some(false);
        let loading = if listing["_meta"]["anthropic/alwaysLoad"].as_bool() == Some(true) {
            Loading::AlwaysLoad
        } else {
            Loading::Defer
        };
        let mut spec = ToolSpec::new(name, description, input_schema)
            .with_loading(loading)
            .with_origin(Origin::Mcp {
                server: link.server.clone(),
                tool: remote_name.clone(),
            });
        if let Some(title) = listing["title"]
            .as_str()
            .or_else(|| annotations["title"].as_str())
        {
            spec = spec.with_search_hint(title);
        }
        if let Some(output) = listing.get("outputSchema").filter(|v| v.is_object()) {
            spec = spec.with_output_schema(output.clone());
        }
        Self {
            spec,
            remote_name,
            read_only,
            destructive,
            link,
        }
    }
}

/// Removes a call's progress route when the call ends, and tells the server the call was
/// cancelled when it ends without an answer (cancelled by the user, or its future dropped).
struct CallGuard {
    link: Arc<ServerLink>,
    key: String,
    pending: Option<(Peer<RoleClient>, RequestId)>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.link.routes().remove(&self.key);
        if let Some((peer, id)) = self.pending.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was cancelled".to_owned()),
                ));
                // Best-effort: a server that is gone needs no cancellation.
                let _ = peer
                    .send_notification(ClientNotification::CancelledNotification(notification))
                    .await;
            });
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    type Input = Value;

    /// The schema the server listed (not the derived one, which accepts any JSON).
    fn spec(&self, _derived: Value) -> ToolSpec {
        self.spec.clone()
    }

    fn info(&self, _input: &Value) -> CallInfo {
        CallInfo::reads_if(self.read_only)
            .with_destructive(self.destructive)
            .with_concurrency_safe(self.read_only)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let server = &self.link.server;
        let Some(peer) = self.link.peer() else {
            return Err(ToolError::failed(format!(
                "mcp server {server} is not connected (it is down or reconnecting); try again later or use another tool"
            )));
        };
        let mut params = CallToolRequestParams::new(self.remote_name.clone());
        params.arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => return Err(ToolError::invalid("the input must be a JSON object")),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = self.link.call_timeout;
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
            .map_err(|err| self.transport_failure(&err))?;
        let key = token_key(&handle.progress_token);
        self.link.routes().insert(key.clone(), ctx.clone());
        let mut guard = CallGuard {
            link: Arc::clone(&self.link),
            key,
            pending: Some((peer, handle.id.clone())),
        };
        let response = tokio::select! {
            response = handle.await_response() => response,
            () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
        };
        // Answered (or timed out, in which case rmcp has already sent the cancellation).
        guard.pending = None;
        match response {
            Ok(ServerResult::CallToolResult(result)) => Ok(map_result(
                &serde_json::to_value(result).unwrap_or_default(),
            )),
            Ok(_) => Err(ToolError::failed(format!(
                "mcp server {server} answered tools/call with an unexpected response"
            ))),
            Err(ServiceError::McpError(error)) => Err(ToolError::failed(format!(
                "mcp server {server} refused the call: {}",
                error.message
            ))),
            Err(ServiceError::Timeout { timeout }) => {
                self.link.report(LinkEvent::Suspect);
                Err(ToolError::failed(format!(
                    "mcp tool {} on server {server} did not answer within {:.1}s; the call was cancelled",
                    self.remote_name,
                    timeout.as_secs_f64()
                )))
            }
            Err(err) => Err(self.transport_failure(&err)),
        }
    }
}

impl McpTool {
    fn transport_failure(&self, err: &ServiceError) -> ToolError {
        self.link.report(LinkEvent::Suspect);
        ToolError::failed(format!(
            "mcp server {} failed during the call ({err}); it will be reconnected, try again later",
            self.link.server
        ))
    }
}

/// Maps an MCP `CallToolResult` (as JSON) to a tool output: text and images as they are,
/// embedded resources and resource links as text, audio described in words,
/// `structuredContent` kept (and shown as text when there is no other content), `isError` kept.
pub(crate) fn map_result(result: &Value) -> ToolOutput {
    let mut content: Vec<Content> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(map_block)
        .collect();
    let structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    if content.is_empty()
        && let Some(structured) = &structured
    {
        content.push(Content::text(structured.to_string()));
    }
    ToolOutput {
        content,
        structured,
        is_error: result["isError"].as_bool() == Some(true),
    }
}

/// One content block of a result: text and images as they are, anything else as text.
fn map_block(block: &Value) -> Content {
    match block["type"].as_str().unwrap_or_default() {
        "text" => Content::text(block["text"].as_str().unwrap_or_default()),
        "image" => Content::Image {
            media_type: block["mimeType"].as_str().unwrap_or("image/png").to_owned(),
            data: block["data"].as_str().unwrap_or_default().to_owned(),
        },
        "resource" => Content::text(resource_text(&block["resource"])),
        "resource_link" => {
            let uri = block["uri"].as_str().unwrap_or_default();
            let name = block["name"].as_str().unwrap_or(uri);
            Content::text(format!("[resource link {name}: {uri}]"))
        }
        "audio" => {
            let mime = block["mimeType"].as_str().unwrap_or("audio");
            Content::text(format!("[audio ({mime}) that cannot be shown as text]"))
        }
        other => Content::text(format!("[unsupported content type {other}]")),
    }
}

/// An embedded resource as text: its text when it has some, else its size and type.
fn resource_text(resource: &Value) -> String {
    let uri = resource["uri"].as_str().unwrap_or_default();
    match (resource["text"].as_str(), resource["blob"].as_str()) {
        (Some(text), _) => format!("[resource {uri}]\n{text}"),
        (None, Some(blob)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_or(0, |b| b.len());
            let mime = resource["mimeType"].as_str().unwrap_or("binary");
            format!("[resource {uri}: {bytes} bytes of {mime}]")
        }
        (None, None) => format!("[resource {uri}]"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn link() -> Arc<ServerLink> {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(ServerLink::new("srv".into(), Duration::from_secs(1), tx))
    }

    #[test]
    fn listings_map_annotations_and_loading() {
        let read_only = tool_core::AnyTool::new(McpTool::from_listing(
            "mcp__srv__get".into(),
            &json!({
                "name": "get",
                "description": "Gets.",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
                "annotations": {"readOnlyHint": true},
                "_meta": {"anthropic/alwaysLoad": true},
            }),
            link(),
        ));
        let input = json!({});
        assert!(read_only.info(&input).unwrap().is_read_only());
        assert!(read_only.info(&input).unwrap().is_concurrency_safe());
        assert!(!read_only.info(&input).unwrap().is_destructive());
        assert_eq!(read_only.spec().loading, Loading::AlwaysLoad);
        assert_eq!(read_only.spec().description, "Gets.");
        assert_eq!(
            read_only.spec().origin,
            Origin::Mcp {
                server: "srv".into(),
                tool: "get".into()
            }
        );
        assert_eq!(
            read_only.spec().input_schema["properties"]["id"]["type"],
            "string"
        );

        let additive = tool_core::AnyTool::new(McpTool::from_listing(
            "mcp__srv__add".into(),
            &json!({"name": "add", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": false}}),
            link(),
        ));
        assert!(!additive.info(&input).unwrap().is_read_only());
        assert!(!additive.info(&input).unwrap().is_concurrency_safe());
        assert!(!additive.info(&input).unwrap().is_destructive());
        assert_eq!(additive.spec().loading, Loading::Defer);

        // No annotations: the fail-closed defaults.
        let plain = tool_core::AnyTool::new(McpTool::from_listing(
            "mcp__srv__run".into(),
            &json!({"name": "run", "inputSchema": {"type": "object"}}),
            link(),
        ));
        assert!(!plain.info(&input).unwrap().is_read_only());
        assert!(plain.info(&input).unwrap().is_destructive());
        assert!(!plain.info(&input).unwrap().is_concurrency_safe());
    }

    #[test]
    fn results_map_every_content_kind() {
        let output = map_result(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/gif"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk=", "mimeType": "x/y"}},
            ],
            "structuredContent": {"n": 1},
            "isError": true
        }));
        assert!(output.is_error);
        assert_eq!(output.structured, Some(json!({"n": 1})));
        assert_eq!(
            output.content,
            vec![
                Content::text("hello"),
                Content::Image {
                    media_type: "image/gif".into(),
                    data: "aGk=".into()
                },
                Content::text("[resource file:///a]\nbody"),
                Content::text("[resource file:///b: 2 bytes of x/y]"),
            ]
        );
        let only_structured = map_result(&json!({"content": [], "structuredContent": {"a": [1]}}));
        assert_eq!(only_structured.joined_text(), r#"{"a":[1]}"#);
        assert!(!only_structured.is_error);
    }
}
