//! A provider that plays a script: for tests, examples and offline demonstrations of an agent.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;
use tool_core::CancellationToken;

use super::{EventStream, ModelRequest, Provider, ProviderError, Response};
use crate::conversation::{Block, StopReason, Usage};

/// Answers each request with the next response of its script, and keeps the requests it was
/// sent. Once the script has run out, a request fails with an error that says so.
#[derive(Debug, Default)]
pub struct Scripted {
    script: Mutex<VecDeque<Response>>,
    requests: Mutex<Vec<ModelRequest<'static>>>,
}

impl Scripted {
    /// A provider answering with `script`, in order.
    pub fn new(script: impl IntoIterator<Item = Response>) -> Self {
        Self {
            script: Mutex::new(script.into_iter().collect()),
            requests: Mutex::default(),
        }
    }

    /// The requests sent so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest<'static>> {
        self.requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }
}

impl Provider for Scripted {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        _cancel: &'a CancellationToken,
    ) -> EventStream<'a> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone().into_owned());
        }
        let next = self.script.lock().ok().and_then(|mut s| s.pop_front());
        match next {
            Some(response) => response.into_events(),
            None => futures::StreamExt::boxed(futures::stream::iter([Err(ProviderError::Stream(
                "the scripted provider's script has run out: give it one response per \
                     model request"
                    .to_owned(),
            ))])),
        }
    }
}

impl Response {
    /// An assistant message of `text` that ends the turn.
    pub fn text(text: impl Into<String>) -> Self {
        Self::assistant(
            vec![Block::Text { text: text.into() }],
            StopReason::EndTurn,
            Usage::default(),
        )
    }

    /// An assistant message that calls the tool `name` with `input`, under the id `id`.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::assistant(
            vec![Block::ToolUse(tool_core::ToolCall {
                id: id.into(),
                name: name.into(),
                input,
            })],
            StopReason::ToolUse,
            Usage::default(),
        )
    }
}
