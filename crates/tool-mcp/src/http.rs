//! The server over streamable HTTP (path `/mcp`): stateless, so that any number of gateway
//! processes can serve the same clients behind a load balancer, and behind a bearer token when
//! one is given.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tower_service::Service as _;

use crate::error::McpError;

/// The path clients post to.
pub const MCP_PATH: &str = "/mcp";

type Body = BoxBody<Bytes, Infallible>;

/// What answers each HTTP request: the token check, then rmcp's streamable HTTP service.
struct Gate<S: ServerHandler> {
    token: Option<String>,
    service: StreamableHttpService<S, NeverSessionManager>,
}

/// Serves `handler` to every client that connects to `listener`, until the process ends. Each
/// connection runs on its own task, so a slow call never holds up another client.
pub(crate) async fn serve<S>(
    handler: S,
    listener: TcpListener,
    token: Option<String>,
) -> Result<(), McpError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    let local = listener
        .local_addr()
        .map_err(|err| McpError::Serve(err.to_string()))?;
    let mut config = StreamableHttpServerConfig::default();
    // Every request stands alone: no session to find again, whichever process answers.
    config.legacy_session_mode = false;
    config.json_response = true;
    if !local.ip().is_loopback() {
        // Reachable from elsewhere under names this process cannot know; the token guards it.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate { token, service });
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors, say: wait a moment rather than spin or stop serving.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let gate = Arc::clone(&gate);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move { Ok::<_, Infallible>(gate.answer(request).await) }
            });
            // A client that hangs up mid-request ends only its own connection.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl<S: ServerHandler + Send + 'static> Gate<S> {
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return text(
                StatusCode::NOT_FOUND,
                format!("no MCP endpoint here: post to {MCP_PATH}"),
            );
        }
        if let Some(token) = &self.token
            && !bearer_matches(request.headers(), token)
        {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "this MCP server needs a bearer token: send the header `Authorization: Bearer <token>`"
                    .to_owned(),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        let mut service = self.service.clone();
        match service.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// Whether the request carries `Authorization: Bearer <token>`, compared in constant time.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(sent) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (sent, token) = (sent.trim().as_bytes(), token.as_bytes());
    sent.len() == token.len()
        && sent
            .iter()
            .zip(token)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(message)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            headers
        };
        assert!(bearer_matches(&with("Bearer s3cret"), "s3cret"));
        assert!(!bearer_matches(&with("Bearer s3cre"), "s3cret"));
        assert!(!bearer_matches(&with("Bearer s3cretX"), "s3cret"));
        assert!(!bearer_matches(&with("Basic s3cret"), "s3cret"));
        assert!(!bearer_matches(&HeaderMap::new(), "s3cret"));
    }
}
