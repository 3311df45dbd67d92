//! What both providers share: the HTTP client, retries with backoff, error classification and
//! server-sent-event decoding.

use std::sync::Once;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tool_core::CancellationToken;

use super::{ProviderError, Response, StreamEvent};

/// Connection-refused errors are retried at most this often: when nothing listens, waiting longer
/// rarely helps, and the user should hear about it quickly.
const CONNECT_RETRIES: u32 = 2;

/// How long one read of the response may take before the stream counts as broken. Local servers
/// can take a while to load a model before the first byte.
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest error body quoted back to the user.
const MAX_QUOTED_BODY: usize = 500;

/// How retries are spaced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The delay before the first retry; each later one doubles it.
    pub base_delay: Duration,
    /// The longest delay, also the cap on a server's `retry-after`.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The delay before retry number `retry` (1 for the first): deterministic exponential
    /// backoff, so tests and users see the same spacing every time.
    pub(crate) fn delay(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

/// Why one attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth trying again.
    Transient(Transient),
    /// Not worth trying again.
    Fatal(ProviderError),
}

/// A failure that a later attempt may not meet.
#[derive(Debug)]
pub(crate) struct Transient {
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// What went wrong, for the user.
    pub message: String,
    /// The delay the server asked for.
    pub retry_after: Option<Duration>,
    /// Nothing accepted the connection.
    pub unreachable: bool,
}

impl Transient {
    /// A transient failure with a status and message.
    pub(crate) fn status(status: u16, message: impl Into<String>) -> Self {
        Self {
            status: Some(status),
            message: message.into(),
            retry_after: None,
            unreachable: false,
        }
    }

    /// A transient failure of the connection or the stream.
    pub(crate) fn stream(message: impl Into<String>) -> Self {
        Self {
            status: None,
            message: message.into(),
            retry_after: None,
            unreachable: false,
        }
    }

    fn reason(&self) -> String {
        match self.status {
            Some(status) => format!("{status}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Decodes one provider's event stream into [`StreamEvent`]s and, at the end, a [`Response`].
pub(crate) trait Decoder: Send {
    /// Takes one server-sent event.
    fn event(
        &mut self,
        event: &SseEvent,
        events: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), Failure>;

    /// The stream ended: the finished response, or why there is none.
    fn finish(self, events: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<Response, Failure>;
}

/// One endpoint with its headers and retry policy.
pub(crate) struct Endpoint {
    client: reqwest::Client,
    /// Where requests go.
    url: String,
    /// The base URL the user configured, for messages.
    base_url: String,
    headers: HeaderMap,
    policy: RetryPolicy,
    /// The environment variable that holds the key, for authentication hints.
    key_env: &'static str,
    /// What to tell the user when nothing answers.
    unreachable_hint: String,
}

impl Endpoint {
    /// An endpoint posting to `url`.
    pub(crate) fn new(
        url: String,
        base_url: String,
        headers: Vec<(&'static str, String)>,
        policy: RetryPolicy,
        key_env: &'static str,
        unreachable_hint: String,
    ) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let value =
                HeaderValue::from_str(&value).map_err(|_| ProviderError::Authentication {
                    status: 0,
                    message: format!("the value for header {name} is not valid; check {key_env}"),
                })?;
            map.insert(HeaderName::from_static(name), value);
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("agent-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|err| ProviderError::Unreachable {
                url: base_url.clone(),
                reason: format!("cannot build an HTTP client: {}", describe(&err)),
            })?;
        Ok(Self {
            client,
            url,
            base_url,
            headers: map,
            policy,
            key_env,
            unreachable_hint,
        })
    }

    /// Posts `body` and decodes the streamed answer, retrying transient failures. Each attempt
    /// starts a fresh decoder; after a [`StreamEvent::Retrying`] the caller discards whatever the
    /// failed attempt streamed.
    pub(crate) async fn stream<D: Decoder>(
        &self,
        body: &Value,
        mut new_decoder: impl FnMut() -> D + Send,
        events: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Response, ProviderError> {
        let body = serde_json::to_vec(body)
            .map_err(|err| ProviderError::Stream(format!("cannot encode the request: {err}")))?;
        let mut attempt = 1u32;
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            let transient = match self.attempt(&body, new_decoder(), events, cancel).await {
                Ok(response) => return Ok(response),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Transient(transient)) => transient,
            };
            let limit = if transient.unreachable {
                self.policy.max_retries.min(CONNECT_RETRIES)
            } else {
                self.policy.max_retries
            };
            if attempt > limit {
                return Err(self.exhausted(transient, attempt));
            }
            let delay = transient.retry_after.map_or_else(
                || self.policy.delay(attempt),
                |d| d.min(self.policy.max_delay),
            );
            attempt += 1;
            events(StreamEvent::Retrying {
                attempt,
                reason: transient.reason(),
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            });
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    fn exhausted(&self, transient: Transient, attempts: u32) -> ProviderError {
        if transient.unreachable {
            return ProviderError::Unreachable {
                url: self.base_url.clone(),
                reason: format!(
                    "nothing answers there ({}); {}",
                    transient.message, self.unreachable_hint
                ),
            };
        }
        match transient.status {
            Some(status) => ProviderError::Exhausted {
                status,
                attempts,
                message: transient.message,
            },
            None => {
                ProviderError::Stream(format!("{} (after {attempts} attempts)", transient.message))
            }
        }
    }

    async fn attempt<D: Decoder>(
        &self,
        body: &[u8],
        mut decoder: D,
        events: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Response, Failure> {
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send();
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Failure::Fatal(ProviderError::Cancelled)),
            sent = request => sent,
        };
        let mut response = sent.map_err(|err| self.transport_failure(&err))?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after(response.headers());
            let should_retry = should_retry(response.headers());
            let text = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Failure::Fatal(ProviderError::Cancelled)),
                text = response.text() => text.unwrap_or_default(),
            };
            let failure = classify_status(status, &text, retry_after, self.key_env);
            return Err(match (failure, should_retry) {
                // Anthropic's servers say outright when a retry is pointless.
                (Failure::Transient(t), Some(false)) => Failure::Fatal(ProviderError::Api {
                    status,
                    message: t.message,
                }),
                (Failure::Fatal(ProviderError::Api { status, message }), Some(true)) => {
                    Failure::Transient(Transient {
                        status: Some(status),
                        message,
                        retry_after,
                        unreachable: false,
                    })
                }
                (failure, _) => failure,
            });
        }
        let mut sse = SseDecoder::default();
        loop {
            let chunk = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Failure::Fatal(ProviderError::Cancelled)),
                chunk = response.chunk() => chunk,
            };
            match chunk {
                Ok(Some(bytes)) => {
                    for event in sse.push(&bytes) {
                        decoder.event(&event, events)?;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    return Err(Failure::Transient(Transient::stream(format!(
                        "the response stream broke: {}",
                        describe(&err)
                    ))));
                }
            }
        }
        for event in sse.finish() {
            decoder.event(&event, events)?;
        }
        decoder.finish(events)
    }

    fn transport_failure(&self, err: &reqwest::Error) -> Failure {
        if err.is_builder() {
            return Failure::Fatal(ProviderError::Unreachable {
                url: self.base_url.clone(),
                reason: format!("not a usable URL: {}", describe(err)),
            });
        }
        Failure::Transient(Transient {
            status: None,
            message: describe(err),
            retry_after: None,
            unreachable: err.is_connect(),
        })
    }
}

/// Installs rustls' ring crypto provider once; reqwest is built without a default one.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another part of the program may have installed a provider already; that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An error with its causes, since reqwest's own message leaves out the interesting part
/// ("connection refused").
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
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

/// The delay a `retry-after-ms` or `retry-after` (seconds) header asks for.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = value("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    value("retry-after").map(Duration::from_secs_f64)
}

/// What an `x-should-retry` header says, when there is one.
fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Sorts an error response into transient and fatal.
pub(crate) fn classify_status(
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    key_env: &str,
) -> Failure {
    let message = error_message(body);
    let lower = body.to_lowercase();
    if matches!(status, 401 | 403) {
        return Failure::Fatal(ProviderError::Authentication {
            status,
            message: format!("{message}; check {key_env}"),
        });
    }
    if matches!(status, 400 | 413) && is_context_too_long(&lower) {
        return Failure::Fatal(ProviderError::ContextTooLong { message });
    }
    if matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
        || lower.contains("overloaded_error")
    {
        return Failure::Transient(Transient {
            status: Some(status),
            message,
            retry_after,
            unreachable: false,
        });
    }
    Failure::Fatal(ProviderError::Api { status, message })
}

/// Sorts an error that arrived inside a stream (Anthropic's `error` event, an OpenAI chunk with
/// an `error` object) by its type and message.
pub(crate) fn classify_stream_error(error: &Value, key_env: &str) -> Failure {
    let kind = error
        .get("type")
        .or_else(|| error.get("code"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let lower = format!("{kind} {message}").to_lowercase();
    if is_context_too_long(&lower) {
        return Failure::Fatal(ProviderError::ContextTooLong { message });
    }
    let transient_status = match kind {
        "overloaded_error" => Some(529),
        "rate_limit_error" | "rate_limit_exceeded" => Some(429),
        "api_error" | "server_error" => Some(500),
        _ => None,
    };
    if let Some(status) = transient_status {
        return Failure::Transient(Transient::status(status, message));
    }
    if matches!(
        kind,
        "authentication_error" | "permission_error" | "invalid_api_key"
    ) {
        return Failure::Fatal(ProviderError::Authentication {
            status: 401,
            message: format!("{message}; check {key_env}"),
        });
    }
    Failure::Fatal(ProviderError::Stream(format!(
        "the provider reported an error: {message}"
    )))
}

fn is_context_too_long(lower: &str) -> bool {
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context window",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The human part of an error body: `error.message` in both APIs' JSON, else the body itself,
/// shortened.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    });
    let text = message.unwrap_or(body).trim();
    if text.is_empty() {
        return "no details given".to_owned();
    }
    let mut end = text.len().min(MAX_QUOTED_BODY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when there was one.
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

/// Splits a byte stream into server-sent events. Bytes are buffered until a whole line arrived, so
/// chunks may split lines, and characters, anywhere.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseDecoder {
    /// Takes a chunk; returns the events it completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            self.line(line.trim_end_matches(['\n', '\r']), &mut out);
        }
        out
    }

    /// The stream ended: whatever event was still open.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if !self.buffer.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buffer)).into_owned();
            self.line(line.trim_end_matches('\r'), &mut out);
        }
        self.line("", &mut out);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            self.event = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
    }
}

/// A tool call's streamed input as JSON: an empty input is `{}`, and text that does not parse
/// is kept as a string so the tool can report it.
pub(crate) fn parse_tool_input(json: &str) -> Value {
    if json.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
}

/// Whether the URL points at this machine.
pub(crate) fn is_local(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(['/', ':']).next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1" | "0.0.0.0")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn sse_decoder_handles_lines_and_characters_split_across_chunks() {
        let text = "event: a\ndata: {\"t\":\"é\"}\r\n\r\n: comment\ndata: x\ndata: y\n\n";
        let bytes = text.as_bytes();
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in bytes.chunks(3) {
            events.extend(decoder.push(chunk));
        }
        events.extend(decoder.finish());
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "{\"t\":\"é\"}".into()
                },
                SseEvent {
                    event: None,
                    data: "x\ny".into()
                },
            ]
        );
    }

    #[test]
    fn sse_decoder_flushes_an_unterminated_event_at_the_end() {
        let mut decoder = SseDecoder::default();
        assert!(decoder.push(b"data: [DONE]").is_empty());
        assert_eq!(decoder.finish()[0].data, "[DONE]");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let delays: Vec<u128> = (1..=6).map(|r| policy.delay(r).as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1000, 1000]);
    }

    #[test]
    fn statuses_are_classified() {
        let ctx = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_status(400, ctx, None, "K"),
            Failure::Fatal(ProviderError::ContextTooLong { .. })
        ));
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_status(400, openai, None, "K"),
            Failure::Fatal(ProviderError::ContextTooLong { .. })
        ));
        assert!(matches!(
            classify_status(529, "{}", None, "K"),
            Failure::Transient(_)
        ));
        assert!(matches!(
            classify_status(404, "not found", None, "K"),
            Failure::Fatal(ProviderError::Api { status: 404, .. })
        ));
        let Failure::Fatal(ProviderError::Authentication { message, .. }) = classify_status(
            401,
            r#"{"error":{"message":"invalid x-api-key"}}"#,
            None,
            "KEY",
        ) else {
            panic!("not an authentication error");
        };
        assert_eq!(message, "invalid x-api-key; check KEY");
    }

    #[test]
    fn tool_input_keeps_unparsable_text() {
        assert_eq!(parse_tool_input(""), serde_json::json!({}));
        assert_eq!(parse_tool_input("{\"a\":1}"), serde_json::json!({"a": 1}));
        assert_eq!(parse_tool_input("{\"a\""), Value::String("{\"a\"".into()));
    }

    #[test]
    fn local_urls_are_recognised() {
        assert!(is_local("http://localhost:11434/v1"));
        assert!(is_local("http://127.0.0.1:8080"));
        assert!(is_local("http://[::1]:8080/v1"));
        assert!(!is_local("https://api.openai.com/v1"));
    }
}
