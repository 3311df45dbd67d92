//! What both providers share: the HTTP client, server-sent-event framing, the retry loop (as a
//! stream) and the sorting of failures into transient and fatal.
//!
//! A provider supplies a [`Decoder`] that reads its own events; [`Endpoint::stream`] posts the
//! request, frames the response into server-sent events with `sse-stream`, feeds them to a fresh
//! decoder per attempt and retries transient failures, announcing each retry with
//! [`StreamEvent::Retrying`].

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt as _};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sse_stream::SseByteStream;
use tool_core::CancellationToken;

use super::config::RetryPolicy;
use super::{EventStream, ProviderError, Response, StreamEvent};

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

/// Reads one provider's server-sent events into [`StreamEvent`]s and, at the end, a
/// [`Response`]. Each attempt gets a fresh decoder.
pub(crate) trait Decoder: Default + Send {
    /// Reads the data of one server-sent event, adding the events it completes to `out`.
    fn event(&mut self, data: &str, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure>;

    /// The stream ended: adds the events that completes to `out` (calls still open) and returns
    /// the finished response, or why there is none.
    fn finish(self, out: &mut VecDeque<StreamEvent>) -> Result<Response, Failure>;
}

/// One server-sent event's data as the provider's typed event; data that does not fit is a
/// fatal stream error, since reading it again would not change it.
pub(crate) fn parse_event<T: DeserializeOwned>(data: &str) -> Result<T, Failure> {
    serde_json::from_str(data).map_err(|err| {
        Failure::Fatal(ProviderError::Stream(format!(
            "an event is not understood ({err}): {data}"
        )))
    })
}

/// One endpoint with its headers and retry policy.
pub(crate) struct Endpoint {
    client: reqwest::Client,
    /// Where requests go.
    url: String,
    /// The model a request that names none is sent to.
    model: String,
    /// The base URL the user configured, for messages.
    base_url: String,
    headers: HeaderMap,
    policy: RetryPolicy,
    /// The environment variable that holds the key, for authentication hints.
    key_env: &'static str,
    /// What to tell the user when nothing answers.
    unreachable_hint: String,
}

/// Where an [`Endpoint`] posts, and what to tell the user when it fails.
pub(crate) struct EndpointSpec {
    /// Where requests go.
    pub url: String,
    /// The base URL the user configured, for messages.
    pub base_url: String,
    /// The model a request that names none is sent to.
    pub model: String,
    /// The provider's own request headers (the key among them); JSON in and an event stream
    /// out go without saying.
    pub headers: Vec<(&'static str, String)>,
    /// How retries are spaced.
    pub policy: RetryPolicy,
    /// The environment variable that holds the key, for authentication hints.
    pub key_env: &'static str,
    /// What to tell the user when nothing answers.
    pub unreachable_hint: String,
}

impl Endpoint {
    /// An endpoint posting to `spec.url`.
    pub(crate) fn new(spec: EndpointSpec) -> Result<Self, ProviderError> {
        tool_core::net::install_crypto_provider();
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        for (name, value) in spec.headers {
            let value =
                HeaderValue::from_str(&value).map_err(|_| ProviderError::Authentication {
                    status: 0,
                    message: format!(
                        "the value for header {name} is not valid; check {}",
                        spec.key_env
                    ),
                })?;
            headers.insert(HeaderName::from_static(name), value);
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("agent-cli/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|err| ProviderError::Unreachable {
                url: spec.base_url.clone(),
                reason: format!(
                    "cannot build an HTTP client: {}",
                    tool_core::net::error_chain(&err)
                ),
            })?;
        Ok(Self {
            client,
            url: spec.url,
            model: spec.model,
            base_url: spec.base_url,
            headers,
            policy: spec.policy,
            key_env: spec.key_env,
            unreachable_hint: spec.unreachable_hint,
        })
    }

    /// The model a request goes to: the one it names, else the configured one.
    pub(crate) fn model_for<'a>(&'a self, requested: &'a str) -> &'a str {
        if requested.is_empty() {
            &self.model
        } else {
            requested
        }
    }

    /// Posts `body`, serialised once, and streams the decoded answer, retrying transient
    /// failures.
    pub(crate) fn stream<'a, D: Decoder + 'a>(
        &'a self,
        body: &impl serde::Serialize,
        cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        let body = match serde_json::to_vec(body) {
            Ok(body) => Bytes::from(body),
            Err(err) => {
                let error = ProviderError::Stream(format!("cannot encode the request: {err}"));
                return stream::once(async move { Err(error) }).boxed();
            }
        };
        let retries = Retries::<D> {
            endpoint: self,
            body,
            cancel,
            attempt: 1,
            current: None,
            delay: None,
            ended: false,
        };
        stream::unfold(retries, |mut retries| async move {
            let item = retries.next().await?;
            Some((item, retries))
        })
        .boxed()
    }

    /// Sends one attempt; on a successful status, the response's events to decode.
    async fn send<D: Decoder>(
        &self,
        body: &Bytes,
        cancel: &CancellationToken,
    ) -> Result<Attempt<D>, Failure> {
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body.clone())
            .send();
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Failure::Fatal(ProviderError::Cancelled)),
            sent = request => sent,
        };
        let response = sent.map_err(|err| self.transport_failure(&err))?;
        if !response.status().is_success() {
            return Err(self.error_response(response, cancel).await);
        }
        Ok(Attempt {
            events: SseByteStream::new(response.bytes_stream().boxed()),
            decoder: Some(D::default()),
            pending: VecDeque::new(),
        })
    }

    /// Sorts an error response, reading its body.
    async fn error_response(
        &self,
        response: reqwest::Response,
        cancel: &CancellationToken,
    ) -> Failure {
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let should_retry = should_retry(response.headers());
        let text = tokio::select! {
            biased;
            () = cancel.cancelled() => return Failure::Fatal(ProviderError::Cancelled),
            text = response.text() => text.unwrap_or_default(),
        };
        match (
            classify_status(status, &text, retry_after, self.key_env),
            should_retry,
        ) {
            // Anthropic's servers say outright when a retry is pointless.
            (Failure::Transient(t), Some(false)) => Failure::Fatal(ProviderError::Api {
                status,
                message: t.message,
            }),
            (Failure::Fatal(ProviderError::Api { status, message }), Some(true)) => {
                Failure::Transient(Transient {
                    retry_after,
                    ..Transient::status(status, message)
                })
            }
            (failure, _) => failure,
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

    fn transport_failure(&self, err: &reqwest::Error) -> Failure {
        if err.is_builder() {
            return Failure::Fatal(ProviderError::Unreachable {
                url: self.base_url.clone(),
                reason: format!("not a usable URL: {}", tool_core::net::error_chain(err)),
            });
        }
        Failure::Transient(Transient {
            unreachable: err.is_connect(),
            ..Transient::stream(tool_core::net::error_chain(err))
        })
    }
}

/// The retry loop, as the state of a stream: one attempt at a time; a transient failure becomes
/// a [`StreamEvent::Retrying`] event, a wait, and a fresh attempt.
struct Retries<'a, D> {
    endpoint: &'a Endpoint,
    body: Bytes,
    cancel: &'a CancellationToken,
    /// The number of the attempt running, or starting next.
    attempt: u32,
    /// The attempt whose events are being read.
    current: Option<Attempt<D>>,
    /// The wait before the next attempt, set when a retry was announced.
    delay: Option<Duration>,
    /// The stream has given its last item.
    ended: bool,
}

impl<D: Decoder> Retries<'_, D> {
    /// The next item, or `None` after the last one (a `Finished` event or an error).
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        if self.ended {
            return None;
        }
        let item = self.step().await;
        self.ended = matches!(item, Err(_) | Ok(StreamEvent::Finished(_)));
        Some(item)
    }

    async fn step(&mut self) -> Result<StreamEvent, ProviderError> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(ProviderError::Cancelled);
            }
            let failure = match &mut self.current {
                Some(attempt) => match attempt.next(self.cancel).await {
                    Ok(event) => return Ok(event),
                    Err(failure) => failure,
                },
                None => {
                    self.wait().await?;
                    match self.endpoint.send(&self.body, self.cancel).await {
                        Ok(attempt) => {
                            self.current = Some(attempt);
                            continue;
                        }
                        Err(failure) => failure,
                    }
                }
            };
            self.current = None;
            return self.retry(failure);
        }
    }

    /// Announces the next attempt after a transient failure, or ends with the error.
    fn retry(&mut self, failure: Failure) -> Result<StreamEvent, ProviderError> {
        let transient = match failure {
            Failure::Fatal(error) => return Err(error),
            Failure::Transient(transient) => transient,
        };
        let policy = &self.endpoint.policy;
        let limit = if transient.unreachable {
            policy.max_retries.min(CONNECT_RETRIES)
        } else {
            policy.max_retries
        };
        if self.attempt > limit {
            return Err(self.endpoint.exhausted(transient, self.attempt));
        }
        let delay = transient
            .retry_after
            .map_or_else(|| policy.delay(self.attempt), |d| d.min(policy.max_delay));
        self.attempt += 1;
        self.delay = Some(delay);
        Ok(StreamEvent::Retrying {
            attempt: self.attempt,
            reason: transient.reason(),
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Sleeps out the announced delay, unless cancelled first.
    async fn wait(&mut self) -> Result<(), ProviderError> {
        let Some(delay) = self.delay.take() else {
            return Ok(());
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

/// One attempt's response: its server-sent events, and the decoder that reads them.
struct Attempt<D> {
    events: SseByteStream<BoxStream<'static, reqwest::Result<Bytes>>>,
    /// `None` once the stream ended and the response was finished.
    decoder: Option<D>,
    /// Decoded events not yet handed out.
    pending: VecDeque<StreamEvent>,
}

impl<D: Decoder> Attempt<D> {
    /// The next event; `Finished` is the last.
    async fn next(&mut self, cancel: &CancellationToken) -> Result<StreamEvent, Failure> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            let Some(decoder) = &mut self.decoder else {
                return Err(Failure::Fatal(ProviderError::Stream(
                    "the response was read past its end".to_owned(),
                )));
            };
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(Failure::Fatal(ProviderError::Cancelled)),
                next = self.events.next() => next,
            };
            match next {
                Some(Ok(event)) => {
                    if let Some(data) = &event.data {
                        decoder.event(data, &mut self.pending)?;
                    }
                }
                Some(Err(err)) => return Err(sse_failure(&err)),
                None => {
                    if let Some(decoder) = self.decoder.take() {
                        let response = decoder.finish(&mut self.pending)?;
                        self.pending.push_back(StreamEvent::Finished(response));
                    }
                }
            }
        }
    }
}

/// A broken connection is worth a retry; bytes that are not server-sent events are not.
fn sse_failure(err: &sse_stream::Error) -> Failure {
    match err {
        sse_stream::Error::Body(cause) => Failure::Transient(Transient::stream(format!(
            "the response stream broke: {}",
            tool_core::net::error_chain(cause.as_ref())
        ))),
        other => Failure::Fatal(ProviderError::Stream(format!(
            "the response is not a valid event stream: {other}"
        ))),
    }
}

/// Feeds `events` (the data of each server-sent event) to a fresh decoder: what it reported,
/// and how it ended.
#[cfg(test)]
pub(crate) fn decode_all<D: Decoder>(
    events: &[&str],
) -> (Result<Response, Failure>, Vec<StreamEvent>) {
    let mut decoder = D::default();
    let mut out = VecDeque::new();
    for data in events {
        if let Err(failure) = decoder.event(data, &mut out) {
            return (Err(failure), out.into());
        }
    }
    let result = decoder.finish(&mut out);
    (result, out.into())
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
            retry_after,
            ..Transient::status(status, message)
        });
    }
    Failure::Fatal(ProviderError::Api { status, message })
}

/// An error object as both APIs send it, in a response body or inside a stream.
#[derive(Debug, Default, Deserialize)]
struct WireError {
    /// Anthropic's `type` (`overloaded_error`), OpenAI's `type` (`invalid_request_error`).
    #[serde(rename = "type", default)]
    kind: Option<String>,
    /// OpenAI's `code` (`context_length_exceeded`); some servers send the HTTP status instead.
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

/// Sorts an error that arrived inside a stream (Anthropic's `error` event, an OpenAI chunk with
/// an `error` object) by its type and message.
pub(crate) fn classify_stream_error(error: &Value, key_env: &str) -> Failure {
    let wire = WireError::deserialize(error).unwrap_or_default();
    let kind = wire
        .kind
        .as_deref()
        .or_else(|| wire.code.as_ref().and_then(Value::as_str))
        .unwrap_or_default();
    let message = wire.message.clone().unwrap_or_else(|| error.to_string());
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

/// An error body: `{"error": {...}}` in both APIs, or a bare message.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    message: Option<String>,
}

/// The `error` field: an object with a message, or only a message.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Object {
        #[serde(default)]
        message: Option<String>,
    },
    Text(String),
    Other(serde::de::IgnoredAny),
}

/// The human part of an error body: `error.message` in both APIs' JSON, else the body itself,
/// shortened.
fn error_message(body: &str) -> String {
    let parsed: Option<ErrorBody> = serde_json::from_str(body).ok();
    let message = parsed.and_then(|body| {
        let (nested, text) = match body.error {
            Some(ErrorField::Object { message }) => (message, None),
            Some(ErrorField::Text(text)) => (None, Some(text)),
            Some(ErrorField::Other(_)) | None => (None, None),
        };
        nested.or(body.message).or(text)
    });
    let text = message.as_deref().unwrap_or(body).trim();
    if text.is_empty() {
        return "no details given".to_owned();
    }
    let end = text.floor_char_boundary(MAX_QUOTED_BODY);
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    }
}

/// Whether the URL points at this machine: a `localhost` name, a loopback address or the
/// unspecified one (`0.0.0.0`, which clients reach as this machine).
pub(crate) fn is_local(url: &str) -> bool {
    match url::Url::parse(url).ok().as_ref().and_then(url::Url::host) {
        Some(url::Host::Domain(name)) => tool_core::net::is_localhost(name),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

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
    fn error_messages_come_from_either_shape_or_the_body() {
        assert_eq!(error_message(r#"{"error":{"message":"a"}}"#), "a");
        assert_eq!(error_message(r#"{"error":"b"}"#), "b");
        assert_eq!(error_message(r#"{"message":"c"}"#), "c");
        assert_eq!(error_message("plain text"), "plain text");
        assert_eq!(error_message("  "), "no details given");
        let long = "é".repeat(400);
        assert!(error_message(&long).ends_with('…'));
    }

    #[test]
    fn stream_errors_are_classified_by_type_or_code() {
        let overloaded = serde_json::json!({"type": "overloaded_error", "message": "Overloaded"});
        assert!(matches!(
            classify_stream_error(&overloaded, "K"),
            Failure::Transient(Transient {
                status: Some(529),
                ..
            })
        ));
        let numeric = serde_json::json!({"code": 400, "message": "bad"});
        assert!(matches!(
            classify_stream_error(&numeric, "K"),
            Failure::Fatal(ProviderError::Stream(m)) if m.ends_with("bad")
        ));
        let bare = serde_json::json!({"code": "invalid_api_key"});
        let Failure::Fatal(ProviderError::Authentication { message, .. }) =
            classify_stream_error(&bare, "K")
        else {
            panic!("not an authentication error");
        };
        assert_eq!(message, r#"{"code":"invalid_api_key"}; check K"#);
    }

    #[test]
    fn local_urls_are_recognised() {
        assert!(is_local("http://localhost:11434/v1"));
        assert!(is_local("http://127.0.0.1:8080"));
        assert!(is_local("http://[::1]:8080/v1"));
        assert!(!is_local("https://api.openai.com/v1"));
    }
}
