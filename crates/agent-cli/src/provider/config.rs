//! Which provider to talk to, chosen from flags, settings and the environment.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use backon::{BackoffBuilder as _, ExponentialBuilder};

/// The environment variable with the Anthropic API key.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The environment variable that overrides Anthropic's base URL.
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The environment variable with the OpenAI API key.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable with an OpenAI-compatible base URL.
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// Anthropic's API.
pub(crate) const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The model used with Anthropic when none is named.
pub(crate) const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// OpenAI's API.
pub(crate) const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used with OpenAI when none is named.
pub(crate) const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
/// Ollama's OpenAI-compatible endpoint, used when no key is set.
pub(crate) const DEFAULT_LOCAL_BASE_URL: &str = "http://localhost:11434/v1";
/// The model used with the local endpoint when none is named.
pub(crate) const DEFAULT_LOCAL_MODEL: &str = "qwen2.5-coder";

/// The model used with OpenAI's Responses API when none is named: one that takes client-side
/// tool search.
pub(crate) const DEFAULT_RESPONSES_MODEL: &str = "gpt-5.4";

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenAI-compatible chat completions (OpenAI, Ollama, llama.cpp, vLLM, ...).
    OpenAi,
    /// OpenAI's Responses API: reasoning kept across tool calls, client-side tool search.
    OpenAiResponses,
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => Ok(Self::Anthropic),
            "openai" | "openai-compatible" | "openai-chat" | "ollama" | "local" => Ok(Self::OpenAi),
            "openai-responses" | "responses" => Ok(Self::OpenAiResponses),
            other => Err(format!(
                "unknown provider `{other}`: expected `anthropic`, `openai` (chat completions) or \
                 `openai-responses`"
            )),
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
        })
    }
}

/// One layer of provider choices (the command-line flags, or the settings file); each field is
/// optional and an earlier layer wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderChoice {
    /// `--provider`.
    pub provider: Option<ProviderKind>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
}

/// Everything needed to build a provider.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The wire protocol.
    pub kind: ProviderKind,
    /// The base URL (`https://api.anthropic.com`, `https://api.openai.com/v1`, ...).
    pub base_url: String,
    /// The API key, when there is one.
    pub api_key: Option<String>,
    /// The model, used when a request names none.
    pub model: String,
    /// Retries after the first attempt for transient failures.
    pub max_retries: u32,
    /// The delay before the first retry; each later one doubles it.
    pub base_delay: Duration,
    /// The longest delay between attempts, also the cap on a server's `retry-after`.
    pub max_delay: Duration,
    /// A chat completions server that loads deferred tools natively (`defer_loading` tools and
    /// `tool_reference` parts, the `nativeToolSearch` setting).
    pub native_tool_search: bool,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs and panics.
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_retries", &self.max_retries)
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("native_tool_search", &self.native_tool_search)
            .finish()
    }
}

impl ProviderConfig {
    /// The default number of retries.
    pub const DEFAULT_MAX_RETRIES: u32 = 6;
    /// The default first delay.
    pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(500);
    /// The default longest delay.
    pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

    /// A configuration with the default retry policy.
    pub fn new(
        kind: ProviderKind,
        base_url: impl Into<String>,
        api_key: Option<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            api_key,
            model: model.into(),
            max_retries: Self::DEFAULT_MAX_RETRIES,
            base_delay: Self::DEFAULT_BASE_DELAY,
            max_delay: Self::DEFAULT_MAX_DELAY,
            native_tool_search: false,
        }
    }

    /// Whether the provider loads deferred tools itself, which makes `native` the default
    /// activation: Anthropic's Messages API (`tool_reference`), the Responses API with a model
    /// that takes client-side tool search (`tool_search_output`; GPT-5.4 on), and a chat
    /// completions server the `nativeToolSearch` setting declares capable.
    pub fn loads_deferred_tools(&self) -> bool {
        match self.kind {
            ProviderKind::Anthropic => true,
            ProviderKind::OpenAiResponses => takes_tool_search(&self.model),
            ProviderKind::OpenAi => self.native_tool_search,
        }
    }

    /// Chooses the provider: `flags` win over `settings`, which win over the environment
    /// (read through `env`, so callers and tests decide where it comes from).
    ///
    /// Without an explicit provider, `ANTHROPIC_API_KEY` selects Anthropic; otherwise it is an
    /// OpenAI-compatible endpoint: OpenAI's own when `OPENAI_API_KEY` is set without a base URL
    /// (spoken to through the Responses API, which keeps reasoning across tool calls and
    /// searches deferred tools natively), chat completions at a base URL when one is set, and a
    /// local Ollama at `http://localhost:11434/v1` when nothing is.
    pub fn resolve(
        flags: &ProviderChoice,
        settings: &ProviderChoice,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let explicit_base = flags.base_url.clone().or_else(|| settings.base_url.clone());
        let kind = flags.provider.or(settings.provider).unwrap_or_else(|| {
            if env(ANTHROPIC_API_KEY).is_some() {
                ProviderKind::Anthropic
            } else if env(OPENAI_API_KEY).is_some()
                && explicit_base.is_none()
                && env(OPENAI_BASE_URL).is_none()
            {
                ProviderKind::OpenAiResponses
            } else {
                ProviderKind::OpenAi
            }
        });
        let model = flags.model.clone().or_else(|| settings.model.clone());
        match kind {
            ProviderKind::Anthropic => Self::new(
                kind,
                explicit_base
                    .or_else(|| env(ANTHROPIC_BASE_URL))
                    .unwrap_or_else(|| DEFAULT_ANTHROPIC_BASE_URL.to_owned()),
                env(ANTHROPIC_API_KEY),
                model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.to_owned()),
            ),
            ProviderKind::OpenAi => {
                let api_key = env(OPENAI_API_KEY);
                let base = explicit_base.or_else(|| env(OPENAI_BASE_URL));
                let (base, default_model) = match (base, &api_key) {
                    (Some(base), _) => (base, DEFAULT_OPENAI_MODEL),
                    (None, Some(_)) => (DEFAULT_OPENAI_BASE_URL.to_owned(), DEFAULT_OPENAI_MODEL),
                    (None, None) => (DEFAULT_LOCAL_BASE_URL.to_owned(), DEFAULT_LOCAL_MODEL),
                };
                Self::new(
                    kind,
                    base,
                    api_key,
                    model.unwrap_or_else(|| default_model.to_owned()),
                )
            }
            ProviderKind::OpenAiResponses => Self::new(
                kind,
                explicit_base
                    .or_else(|| env(OPENAI_BASE_URL))
                    .unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.to_owned()),
                env(OPENAI_API_KEY),
                model.unwrap_or_else(|| DEFAULT_RESPONSES_MODEL.to_owned()),
            ),
        }
    }

    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            base_delay: self.base_delay,
            max_delay: self.max_delay,
        }
    }
}

/// Whether an OpenAI model takes client-side tool search: GPT-5.4 and later.
fn takes_tool_search(model: &str) -> bool {
    let Some(version) = model.strip_prefix("gpt-") else {
        return false;
    };
    let mut parts = version.split(['.', '-']);
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    major > 5 || (major == 5 && minor >= 4)
}

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
    /// The delay before retry number `retry` (1 for the first): the base delay doubled for each
    /// retry before, plus a random jitter of up to as much again (so that many clients refused
    /// together do not come back together), capped at the longest delay.
    pub(crate) fn delay(&self, retry: u32) -> Duration {
        let delays = ExponentialBuilder::new()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build();
        let skipped = usize::try_from(retry.saturating_sub(1)).unwrap_or(usize::MAX);
        let delay = delays.into_iter().nth(skipped).unwrap_or(self.max_delay);
        // The delays are whole milliseconds, as the `Retrying` event reports them.
        let millis = (delay.as_secs_f64() * 1000.0).round() as u64;
        Duration::from_millis(millis).min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn resolve(flags: &ProviderChoice, env: &[(&str, &str)]) -> ProviderConfig {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ProviderConfig::resolve(flags, &ProviderChoice::default(), |name| {
            env.get(name).cloned()
        })
    }

    #[test]
    fn nothing_set_means_local_ollama() {
        let config = resolve(&ProviderChoice::default(), &[]);
        assert_eq!(config.kind, ProviderKind::OpenAi);
        assert_eq!(config.base_url, DEFAULT_LOCAL_BASE_URL);
        assert_eq!(config.model, DEFAULT_LOCAL_MODEL);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn anthropic_key_selects_anthropic() {
        let config = resolve(
            &ProviderChoice::default(),
            &[("ANTHROPIC_API_KEY", "sk-ant"), ("OPENAI_API_KEY", "sk-oa")],
        );
        assert_eq!(config.kind, ProviderKind::Anthropic);
        assert_eq!(config.base_url, DEFAULT_ANTHROPIC_BASE_URL);
        assert_eq!(config.model, DEFAULT_ANTHROPIC_MODEL);
        assert_eq!(config.api_key.as_deref(), Some("sk-ant"));
    }

    #[test]
    fn openai_key_selects_the_responses_api_and_a_base_url_chat_completions() {
        let config = resolve(&ProviderChoice::default(), &[("OPENAI_API_KEY", "sk-oa")]);
        assert_eq!(config.kind, ProviderKind::OpenAiResponses);
        assert_eq!(config.base_url, DEFAULT_OPENAI_BASE_URL);
        assert_eq!(config.model, DEFAULT_RESPONSES_MODEL);
        assert!(config.loads_deferred_tools());
        let chat = ProviderChoice {
            provider: Some(ProviderKind::OpenAi),
            ..ProviderChoice::default()
        };
        let config = resolve(&chat, &[("OPENAI_API_KEY", "sk-oa")]);
        assert_eq!(config.kind, ProviderKind::OpenAi);
        assert_eq!(config.base_url, DEFAULT_OPENAI_BASE_URL);
        assert_eq!(config.model, DEFAULT_OPENAI_MODEL);
        assert!(!config.loads_deferred_tools());
        let config = resolve(
            &ProviderChoice::default(),
            &[("OPENAI_BASE_URL", "http://gpu:8000/v1")],
        );
        assert_eq!(config.base_url, "http://gpu:8000/v1");
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn flags_win_over_settings_and_env() {
        let flags = ProviderChoice {
            provider: Some(ProviderKind::OpenAi),
            model: Some("llama3".into()),
            base_url: Some("http://localhost:8080/v1".into()),
        };
        let settings = ProviderChoice {
            provider: Some(ProviderKind::Anthropic),
            model: Some("claude-opus-4-1".into()),
            base_url: None,
        };
        let config = ProviderConfig::resolve(&flags, &settings, |name| {
            (name == ANTHROPIC_API_KEY).then(|| "sk-ant".to_owned())
        });
        assert_eq!(config.kind, ProviderKind::OpenAi);
        assert_eq!(config.model, "llama3");
        assert_eq!(config.base_url, "http://localhost:8080/v1");
        let config = ProviderConfig::resolve(&ProviderChoice::default(), &settings, |_| None);
        assert_eq!(config.kind, ProviderKind::Anthropic);
        assert_eq!(config.model, "claude-opus-4-1");
    }

    #[test]
    fn tool_search_needs_gpt_5_4_or_later() {
        for model in ["gpt-5.4", "gpt-5.4-mini", "gpt-5.10", "gpt-6"] {
            assert!(takes_tool_search(model), "{model}");
        }
        for model in ["gpt-5", "gpt-5.1", "gpt-4.1", "o3", "llama3"] {
            assert!(!takes_tool_search(model), "{model}");
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let config = resolve(
            &ProviderChoice::default(),
            &[("ANTHROPIC_API_KEY", "sk-secret")],
        );
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20 {
            let delays: Vec<u128> = (1..=6).map(|r| policy.delay(r).as_millis()).collect();
            for (delay, doubled) in delays.iter().zip([100, 200, 400, 800, 1000, 1000]) {
                assert!(
                    (doubled..=(2 * doubled).min(1000)).contains(delay),
                    "{delays:?}"
                );
            }
            seen.insert(delays[2]);
        }
        assert!(seen.len() > 1, "the jitter varies the delays: {seen:?}");
    }

    #[test]
    fn provider_names_parse() {
        assert_eq!("Anthropic".parse(), Ok(ProviderKind::Anthropic));
        assert_eq!("ollama".parse(), Ok(ProviderKind::OpenAi));
        assert_eq!(
            "openai-responses".parse(),
            Ok(ProviderKind::OpenAiResponses)
        );
        assert!("gemini".parse::<ProviderKind>().is_err());
    }
}
