//! The one place that knows every provider: a configuration in, a provider out. The providers
//! depend on the configuration, never the other way round.

use std::sync::Arc;

use super::anthropic::AnthropicProvider;
use super::config::{ProviderConfig, ProviderKind};
use super::openai::OpenAiProvider;
use super::responses::ResponsesProvider;
use super::{Provider, ProviderError};

/// Builds the provider a configuration describes.
pub fn build(config: &ProviderConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match config.kind {
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(config)?),
        ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(config)?),
        ProviderKind::OpenAiResponses => Arc::new(ResponsesProvider::new(config)?),
    })
}
