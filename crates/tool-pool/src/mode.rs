//! Deferral modes, activation strategies and token counting.

use std::fmt;
use std::str::FromStr;

use crate::error::PoolError;

/// When deferrable tools are kept out of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DeferralMode {
    /// Always defer (the default): deferrable tools are found through tool search.
    #[default]
    Always,
    /// Defer only when the deferrable tools' schemas would take more than this percentage of the
    /// model's context window.
    Auto {
        /// The threshold, in percent of the context window (1 to 100).
        percent: u8,
    },
    /// Never defer: every tool is sent with every request.
    Standard,
}

impl DeferralMode {
    /// The threshold `auto` uses when no percentage is given.
    pub const DEFAULT_AUTO_PERCENT: u8 = 10;
}

impl fmt::Display for DeferralMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Always => f.write_str("true"),
            Self::Auto { percent } => write!(f, "auto:{percent}"),
            Self::Standard => f.write_str("false"),
        }
    }
}

impl FromStr for DeferralMode {
    type Err = PoolError;

    /// Parses `true` (always), `false` (standard), `auto` and `auto:N`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_lowercase();
        let invalid = || PoolError::InvalidDeferralMode {
            value: s.to_owned(),
        };
        match text.as_str() {
            "true" | "always" | "1" => Ok(Self::Always),
            "false" | "standard" | "0" => Ok(Self::Standard),
            "auto" => Ok(Self::Auto {
                percent: Self::DEFAULT_AUTO_PERCENT,
            }),
            other => {
                let percent = other
                    .strip_prefix("auto:")
                    .ok_or_else(invalid)?
                    .trim()
                    .trim_end_matches('%')
                    .parse::<u8>()
                    .map_err(|_| invalid())?;
                if (1..=100).contains(&percent) {
                    Ok(Self::Auto { percent })
                } else {
                    Err(invalid())
                }
            }
        }
    }
}

/// How a discovered deferred tool becomes usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// The tools array never changes; discovered tools are called through `execute_tool`. Keeps
    /// the prompt cache warm.
    #[default]
    Proxy,
    /// Discovered tools' schemas are appended to the tools array from the next request on, after
    /// the stable part, in the order they were discovered.
    Inline,
    /// The provider loads found tools itself: `tool_search` answers with references to them (an
    /// Anthropic `tool_reference` block, an OpenAI Responses `tool_search_output`), they join the
    /// request after the stable part declared deferred (`defer_loading`), which leaves the
    /// prompt-cache prefix as it was, and the model calls them by their own names with their own
    /// schemas. For providers that load deferred tools natively.
    Native,
}

impl FromStr for Activation {
    type Err = PoolError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "proxy" => Ok(Self::Proxy),
            "inline" => Ok(Self::Inline),
            "native" => Ok(Self::Native),
            _ => Err(PoolError::InvalidActivation {
                value: s.to_owned(),
            }),
        }
    }
}

impl fmt::Display for Activation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Proxy => "proxy",
            Self::Inline => "inline",
            Self::Native => "native",
        })
    }
}

/// Counts tokens the way a provider would. Implement it over a provider's token-counting API or a
/// local tokenizer; return `None` when it cannot count right now, and the estimate is used.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens in `text`, if it can tell.
    fn count_tokens(&self, text: &str) -> Option<usize>;
}

/// The fallback estimate: 2.5 characters per token, rounded up.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharEstimate;

impl CharEstimate {
    /// Characters per token in the estimate.
    pub const CHARS_PER_TOKEN: f64 = 2.5;

    /// The estimated token count of `text`.
    pub fn estimate(text: &str) -> usize {
        Self::estimate_chars(text.chars().count())
    }

    /// The estimated token count of a text of `chars` characters.
    pub fn estimate_chars(chars: usize) -> usize {
        (chars as f64 / Self::CHARS_PER_TOKEN).ceil() as usize
    }

    /// Characters per token when a budget given as a share of the context window becomes a
    /// number of characters (the skills listing's, the announcement's): four, as the reference
    /// agents count a listing's budget. A budget converted at the estimate's 2.5 would shrink the
    /// listings by more than a third for no better accuracy; this is a convention for room, not a
    /// second estimate.
    pub const BUDGET_CHARS_PER_TOKEN: usize = 4;

    /// The characters a budget of `tokens` tokens allows (see
    /// [`CharEstimate::BUDGET_CHARS_PER_TOKEN`]).
    pub fn budget_chars(tokens: usize) -> usize {
        tokens.saturating_mul(Self::BUDGET_CHARS_PER_TOKEN)
    }
}

impl TokenCounter for CharEstimate {
    fn count_tokens(&self, text: &str) -> Option<usize> {
        Some(Self::estimate(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_like_the_reference_setting() {
        assert_eq!(
            "true".parse::<DeferralMode>().unwrap(),
            DeferralMode::Always
        );
        assert_eq!(
            "false".parse::<DeferralMode>().unwrap(),
            DeferralMode::Standard
        );
        assert_eq!(
            "auto".parse::<DeferralMode>().unwrap(),
            DeferralMode::Auto { percent: 10 }
        );
        assert_eq!(
            " AUTO:25 ".parse::<DeferralMode>().unwrap(),
            DeferralMode::Auto { percent: 25 }
        );
        for bad in ["auto:0", "auto:101", "auto:x", "sometimes", ""] {
            let err = bad.parse::<DeferralMode>().unwrap_err();
            assert!(
                err.to_string().contains("use true, false, auto or auto:N"),
                "{err}"
            );
        }
        assert_eq!(DeferralMode::Auto { percent: 7 }.to_string(), "auto:7");
    }

    #[test]
    fn the_estimate_rounds_up() {
        assert_eq!(CharEstimate::estimate(""), 0);
        assert_eq!(CharEstimate::estimate("ab"), 1);
        assert_eq!(CharEstimate::estimate("abcde"), 2);
        assert_eq!(CharEstimate::estimate("abcdef"), 3);
    }
}
