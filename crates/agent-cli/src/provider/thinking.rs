//! Extended thinking: whether, and how much, the model reasons before it answers.

use serde::{Deserialize, Serialize};

/// How much the model may think before it answers: the `thinking` setting and `--thinking`.
/// Anthropic's Messages API takes it; Chat Completions has no such parameter and ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "ThinkingText", into = "ThinkingText")]
pub enum Thinking {
    /// No thinking (the default).
    #[default]
    Off,
    /// The model decides how much to think.
    Adaptive,
    /// At most this many tokens of thinking per request ([`Thinking::MIN_BUDGET`] or more).
    Budget(u32),
}

impl Thinking {
    /// The smallest budget the API takes.
    pub const MIN_BUDGET: u32 = 1_024;

    /// The output token limit of a request that thinks: the answer's `max_tokens` on top of
    /// the thinking budget, which counts against the same limit.
    pub fn max_tokens(self, answer: u32) -> u32 {
        match self {
            Self::Budget(budget) if answer <= budget => budget.saturating_add(answer),
            _ => answer,
        }
    }
}

impl std::str::FromStr for Thinking {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "off" => Ok(Self::Off),
            "adaptive" => Ok(Self::Adaptive),
            number => match number.parse::<u32>() {
                Ok(budget) if budget >= Self::MIN_BUDGET => Ok(Self::Budget(budget)),
                Ok(budget) => Err(format!(
                    "a thinking budget of {budget} tokens is below the smallest the API takes \
                     ({}): give {} or more, `adaptive` or `off`",
                    Self::MIN_BUDGET,
                    Self::MIN_BUDGET
                )),
                Err(_) => Err(format!(
                    "`{number}` is not a thinking setting: use `off`, `adaptive` or a budget in \
                     tokens such as 8000"
                )),
            },
        }
    }
}

impl std::fmt::Display for Thinking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Adaptive => f.write_str("adaptive"),
            Self::Budget(budget) => write!(f, "{budget}"),
        }
    }
}

/// How the setting is written: `"off"`, `"adaptive"`, or a budget as a number (or a string).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ThinkingText {
    Budget(u32),
    Text(String),
}

impl TryFrom<ThinkingText> for Thinking {
    type Error = String;

    fn try_from(value: ThinkingText) -> Result<Self, Self::Error> {
        match value {
            ThinkingText::Budget(budget) => budget.to_string().parse(),
            ThinkingText::Text(text) => text.parse(),
        }
    }
}

impl From<Thinking> for ThinkingText {
    fn from(value: Thinking) -> Self {
        match value {
            Thinking::Budget(budget) => Self::Budget(budget),
            other => Self::Text(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_words_and_budgets_and_says_what_is_wrong() {
        assert_eq!("off".parse(), Ok(Thinking::Off));
        assert_eq!("adaptive".parse(), Ok(Thinking::Adaptive));
        assert_eq!("8000".parse(), Ok(Thinking::Budget(8_000)));
        let low = "100".parse::<Thinking>().unwrap_err();
        assert!(low.contains("1024 or more"), "{low}");
        let word = "lots".parse::<Thinking>().unwrap_err();
        assert!(word.contains("`off`, `adaptive`"), "{word}");
        let json: Thinking = serde_json::from_str("16000").unwrap();
        assert_eq!(json, Thinking::Budget(16_000));
        let json: Thinking = serde_json::from_str("\"adaptive\"").unwrap();
        assert_eq!(json, Thinking::Adaptive);
        assert!(serde_json::from_str::<Thinking>("\"maybe\"").is_err());
        assert_eq!(
            serde_json::to_string(&Thinking::Budget(2_000)).unwrap(),
            "2000"
        );
    }

    #[test]
    fn a_budget_adds_to_the_answers_limit_when_it_would_leave_no_room() {
        assert_eq!(Thinking::Off.max_tokens(8_192), 8_192);
        assert_eq!(Thinking::Budget(4_000).max_tokens(8_192), 8_192);
        assert_eq!(Thinking::Budget(16_000).max_tokens(8_192), 24_192);
    }
}
