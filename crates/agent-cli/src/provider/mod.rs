//! Model providers: Anthropic's Messages API, OpenAI-compatible chat completions and OpenAI's
//! Responses API, all streaming.
//!
//! [`ProviderConfig::resolve`] picks the provider from flags, settings and the environment,
//! [`build`] makes it, and [`Provider::stream`] sends one request and returns the answer as a
//! stream of [`StreamEvent`]s that ends with [`StreamEvent::Finished`]. Each provider owns its
//! wire format both ways: it renders the request (tools, messages, tool results) and reads its
//! event stream into typed events, parsing each tool call's input once. Transient failures (429,
//! 529, 5xx, overload, broken connections) are retried inside the stream with doubling, jittered delays,
//! each announced by [`StreamEvent::Retrying`]; anything else ends the stream with a
//! [`ProviderError`] with a message for the user.
//!
//! ```no_run
//! use agent_cli::conversation::Message;
//! use agent_cli::provider::{
//!     ModelRequest, ProviderChoice, ProviderConfig, StreamEvent, Thinking, build,
//! };
//! use futures::StreamExt as _;
//!
//! # async fn demo() -> anyhow::Result<()> {
//! let config = ProviderConfig::resolve(
//!     &ProviderChoice::default(),
//!     &ProviderChoice::default(),
//!     |name| std::env::var(name).ok(),
//! );
//! let provider = build(&config)?;
//! let request = ModelRequest {
//!     model: config.model.clone(),
//!     system: vec!["You are a coding agent.".to_owned()],
//!     messages: vec![Message::user_text("Say hello.")].into(),
//!     tools: tool_pool::RequestTools::default(),
//!     max_tokens: 1024,
//!     thinking: Thinking::Off,
//! };
//! let cancel = tool_core::CancellationToken::new();
//! let mut events = provider.stream(&request, &cancel);
//! while let Some(event) = events.next().await {
//!     match event? {
//!         StreamEvent::TextDelta(text) => print!("{text}"),
//!         StreamEvent::Finished(response) => println!("\n{:?}", response.stop_reason),
//!         _ => {}
//!     }
//! }
//! # Ok(())
//! # }
//! ```

pub mod anthropic;
mod config;
mod factory;
pub mod openai;
pub mod responses;
mod scripted;
mod thinking;
mod transport;

use futures::stream::BoxStream;
use tool_core::{CancellationToken, ToolCall};
use tool_pool::RequestTools;

pub use anthropic::AnthropicProvider;
pub use config::{
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL, ProviderChoice,
    ProviderConfig, ProviderKind,
};
pub use factory::build;
pub use openai::OpenAiProvider;
pub use responses::ResponsesProvider;
pub use scripted::Scripted;
pub use thinking::Thinking;

use std::borrow::Cow;

use crate::conversation::{Block, Message, Role, StopReason, Usage};

/// What one model request carries, in neutral form; each provider renders it to its wire format.
/// It borrows the conversation (the agent's own messages are never copied to send them).
#[derive(Debug, Clone)]
pub struct ModelRequest<'a> {
    /// The model's name.
    pub model: String,
    /// The system prompt: a stable part (cached) and optional later additions.
    pub system: Vec<String>,
    /// The conversation so far.
    pub messages: Cow<'a, [Message]>,
    /// The tools, as the pool chose them; the provider renders them (and, for Anthropic, puts
    /// the cache breakpoint where the stable part ends).
    pub tools: RequestTools,
    /// The most output tokens (thinking included).
    pub max_tokens: u32,
    /// How much the model may think first.
    pub thinking: Thinking,
}

impl ModelRequest<'_> {
    /// The same request, owning its messages (to keep it past the conversation it borrows).
    pub fn into_owned(self) -> ModelRequest<'static> {
        ModelRequest {
            messages: Cow::Owned(self.messages.into_owned()),
            ..self
        }
    }
}

/// What a provider reports while a response streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of text.
    TextDelta(String),
    /// A piece of reasoning.
    ThinkingDelta(String),
    /// A tool call started (its input is still streaming).
    ToolUseStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A tool call is complete and its input parsed: it can start now, while the model goes
    /// on. Every `tool_use` block of the finished message comes first as one of these, with the
    /// same input.
    ToolCall(ToolCall),
    /// The request is being retried after a transient failure. Whatever the failed attempt
    /// streamed before this event is void: the retry streams the whole answer again, so the
    /// caller drops partial text and cancels (or ignores the results of) the calls it started
    /// on that attempt's [`StreamEvent::ToolCall`] events.
    Retrying {
        /// Which attempt is next (2 for the first retry).
        attempt: u32,
        /// Why.
        reason: String,
        /// How long until it.
        delay_ms: u64,
    },
    /// The answer is complete: the last event of a stream that did not fail.
    Finished(Response),
}

/// A finished assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The message, with its blocks in order.
    pub message: Message,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Token usage.
    pub usage: Usage,
}

impl Response {
    /// A finished assistant message with these blocks.
    pub fn assistant(content: Vec<Block>, stop_reason: StopReason, usage: Usage) -> Self {
        Self {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            usage,
        }
    }

    /// The events a provider streams for this whole response: each `tool_use` block as a
    /// [`StreamEvent::ToolCall`], then [`StreamEvent::Finished`]. For providers that answer in
    /// one piece (a cache, a test double, a model run in process).
    pub fn into_events<'a>(self) -> EventStream<'a> {
        let calls: Vec<_> = self
            .message
            .tool_uses()
            .map(|(id, name, input)| {
                Ok(StreamEvent::ToolCall(ToolCall::new(
                    id,
                    name,
                    input.clone(),
                )))
            })
            .collect();
        futures::StreamExt::boxed(futures::stream::iter(
            calls.into_iter().chain([Ok(StreamEvent::Finished(self))]),
        ))
    }
}

/// A failure talking to a provider, with a message for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Nothing answers at the endpoint.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The key is missing or rejected.
    #[error("authentication failed ({status}): {message}")]
    Authentication {
        /// HTTP status.
        status: u16,
        /// What the provider said, and what to do.
        message: String,
    },
    /// The conversation is longer than the model's context window.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextTooLong {
        /// What the provider said.
        message: String,
    },
    /// Still rate-limited or overloaded after every retry.
    #[error(
        "the provider is busy ({status}) and still refused after {attempts} attempts: {message}"
    )]
    Exhausted {
        /// HTTP status.
        status: u16,
        /// How many attempts were made.
        attempts: u32,
        /// What the provider said.
        message: String,
    },
    /// Any other error response.
    #[error("the provider answered {status}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// The stream broke or could not be understood.
    #[error("the response stream failed: {0}")]
    Stream(String),
    /// The turn was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// The answer to one request as it arrives: events, then [`StreamEvent::Finished`], or an error
/// that ends the stream.
pub type EventStream<'a> = BoxStream<'a, Result<StreamEvent, ProviderError>>;

/// A model provider.
pub trait Provider: Send + Sync {
    /// Sends `request` and streams the answer. Transient failures (429, 529, overload, reset
    /// connections) are retried with backoff inside the stream. Once `cancel` fires, the next
    /// item is [`ProviderError::Cancelled`]; dropping the stream drops the request.
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<'_>,
        cancel: &'a CancellationToken,
    ) -> EventStream<'a>;
}
