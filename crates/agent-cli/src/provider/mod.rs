//! Model providers: Anthropic's Messages API and OpenAI-compatible chat completions, both
//! streaming.
//!
//! [`ProviderConfig::resolve`] picks the provider from flags, settings and the environment,
//! [`build`] makes it, and [`Provider::stream`] sends one request, reporting
//! [`StreamEvent`]s as the answer arrives. Transient failures (429, 529, 5xx, overload, broken
//! connections) are retried with doubling delays; the rest come back as a [`ProviderError`]
//! with a message for the user.
//!
//! ```no_run
//! use agent_cli::conversation::Message;
//! use agent_cli::provider::{ModelRequest, ProviderChoice, ProviderConfig, StreamEvent, build};
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
//!     messages: vec![Message::user_text("Say hello.")],
//!     tools: serde_json::json!([]),
//!     max_tokens: 1024,
//! };
//! let cancel = tool_core::CancellationToken::new();
//! let response = provider
//!     .stream(
//!         &request,
//!         &mut |event| {
//!             if let StreamEvent::TextDelta(text) = event {
//!                 print!("{text}");
//!             }
//!         },
//!         &cancel,
//!     )
//!     .await?;
//! println!("\n{:?}", response.stop_reason);
//! # Ok(())
//! # }
//! ```

pub mod anthropic;
mod config;
mod http;
pub mod openai;

use async_trait::async_trait;
use serde_json::Value;

pub use anthropic::AnthropicProvider;
pub use config::{
    ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_LOCAL_BASE_URL, DEFAULT_LOCAL_MODEL, DEFAULT_OPENAI_BASE_URL, DEFAULT_OPENAI_MODEL,
    OPENAI_API_KEY, OPENAI_BASE_URL, ProviderChoice, ProviderConfig, ProviderKind, build,
};
pub use openai::OpenAiProvider;

use crate::conversation::{Message, StopReason, Usage};

/// What one model request carries, in neutral form; each provider renders it to its wire format.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model's name.
    pub model: String,
    /// The system prompt: a stable part (cached) and optional later additions.
    pub system: Vec<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools array, already rendered for this provider ([`anthropic::render_tools`] or
    /// [`openai::render_tools`]).
    pub tools: Value,
    /// The most output tokens.
    pub max_tokens: u32,
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
    /// A tool call's block is complete: it can start now, while the model goes on.
    ToolUseComplete {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The input as streamed (JSON text).
        input_json: String,
    },
    /// The request is being retried after a transient failure. Whatever the failed attempt
    /// streamed before this event is void: the retry streams the whole answer again, so the
    /// caller drops partial text and cancels (or ignores the results of) tool calls it started
    /// on that attempt's `ToolUseComplete` events.
    Retrying {
        /// Which attempt is next (2 for the first retry).
        attempt: u32,
        /// Why.
        reason: String,
        /// How long until it.
        delay_ms: u64,
    },
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

/// A model provider.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Which wire format the tools array must be rendered in.
    fn format(&self) -> ToolFormat;

    /// Sends a request and streams the response, reporting events as they arrive; retries
    /// transient failures (429, 529, overload, reset connections) with backoff.
    async fn stream(
        &self,
        request: &ModelRequest,
        events: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &tool_core::CancellationToken,
    ) -> Result<Response, ProviderError>;
}

/// The tools-array format a provider wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// Anthropic's `tools` with `input_schema`.
    Anthropic,
    /// OpenAI's function tools.
    OpenAi,
}
