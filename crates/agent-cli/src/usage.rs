//! Token usage and what it costs: a small table of the known models' context windows and
//! prices, overridable in the settings, and the session's running total.
//!
//! ```
//! use agent_cli::conversation::Usage;
//! use agent_cli::usage::{Price, model_price};
//!
//! let price = model_price("claude-sonnet-4-5", &Default::default()).unwrap();
//! let usage = Usage { input_tokens: 1_000_000, output_tokens: 0, ..Usage::default() };
//! assert_eq!(price.cost(&usage), 3.0);
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::conversation::Usage;

/// What a model charges, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Input written to the prompt cache.
    #[serde(default)]
    pub cache_write: f64,
}

impl Price {
    const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Self {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    /// What `usage` costs at this price, in dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let tokens = |count: u64, per_million: f64| count as f64 * per_million / 1_000_000.0;
        tokens(usage.input_tokens, self.input)
            + tokens(usage.output_tokens, self.output)
            + tokens(usage.cache_read_input_tokens, self.cache_read)
            + tokens(usage.cache_creation_input_tokens, self.cache_write)
    }
}

/// One known model family: its name prefix, context window, most output tokens and price.
struct Known {
    prefix: &'static str,
    window: u64,
    max_output: u32,
    price: Price,
}

/// The models whose window, output limit and price are known, matched by the longest name prefix. Prices are
/// the providers' list prices per million tokens; a `prices` setting overrides them.
const KNOWN: &[Known] = &[
    known(
        "claude-opus-4-5",
        200_000,
        64_000,
        Price::new(5.0, 25.0, 0.5, 6.25),
    ),
    known(
        "claude-opus-4",
        200_000,
        32_000,
        Price::new(15.0, 75.0, 1.5, 18.75),
    ),
    known(
        "claude-sonnet-4",
        200_000,
        64_000,
        Price::new(3.0, 15.0, 0.3, 3.75),
    ),
    known(
        "claude-3-7-sonnet",
        200_000,
        64_000,
        Price::new(3.0, 15.0, 0.3, 3.75),
    ),
    known(
        "claude-haiku-4-5",
        200_000,
        64_000,
        Price::new(1.0, 5.0, 0.1, 1.25),
    ),
    known(
        "claude-3-5-haiku",
        200_000,
        8_192,
        Price::new(0.8, 4.0, 0.08, 1.0),
    ),
    known(
        "gpt-5-mini",
        400_000,
        128_000,
        Price::new(0.25, 2.0, 0.025, 0.0),
    ),
    known(
        "gpt-5-nano",
        400_000,
        128_000,
        Price::new(0.05, 0.4, 0.005, 0.0),
    ),
    known(
        "gpt-5",
        400_000,
        128_000,
        Price::new(1.25, 10.0, 0.125, 0.0),
    ),
    known(
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        Price::new(0.4, 1.6, 0.1, 0.0),
    ),
    known(
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        Price::new(0.1, 0.4, 0.025, 0.0),
    ),
    known("gpt-4.1", 1_047_576, 32_768, Price::new(2.0, 8.0, 0.5, 0.0)),
    known(
        "gpt-4o-mini",
        128_000,
        16_384,
        Price::new(0.15, 0.6, 0.075, 0.0),
    ),
    known("gpt-4o", 128_000, 16_384, Price::new(2.5, 10.0, 1.25, 0.0)),
    known(
        "o4-mini",
        200_000,
        100_000,
        Price::new(1.1, 4.4, 0.275, 0.0),
    ),
    known("o3", 200_000, 100_000, Price::new(2.0, 8.0, 0.5, 0.0)),
];

const fn known(prefix: &'static str, window: u64, max_output: u32, price: Price) -> Known {
    Known {
        prefix,
        window,
        max_output,
        price,
    }
}

/// The context window assumed for a model the table does not know and the settings do not
/// name: small enough for most local models' defaults not to be overrun by much.
pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

fn known_model(model: &str) -> Option<&'static Known> {
    KNOWN
        .iter()
        .filter(|k| model.starts_with(k.prefix))
        .max_by_key(|k| k.prefix.len())
}

/// The context window of `model`: the setting when given, else the table's, else
/// [`DEFAULT_CONTEXT_WINDOW`].
pub fn context_window(model: &str, setting: Option<usize>) -> u64 {
    setting
        .map(|w| w as u64)
        .or_else(|| known_model(model).map(|k| k.window))
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

/// The most output tokens `model` may produce in one answer, when the table knows it.
pub fn max_output_tokens(model: &str) -> Option<u32> {
    known_model(model).map(|k| k.max_output)
}

/// The price of `model`: from `overrides` (the `prices` setting, keyed by model name or name
/// prefix, the longest match winning), else from the table; `None` when unknown.
pub fn model_price(model: &str, overrides: &BTreeMap<String, Price>) -> Option<Price> {
    overrides
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
        .or_else(|| known_model(model).map(|k| k.price))
}

/// Usage with its cost; the cost is `None` when any part of it came from a model whose price
/// is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Costed {
    /// The tokens.
    pub usage: Usage,
    /// The cost in dollars, when every request's price was known.
    pub cost_usd: Option<f64>,
    /// How many model requests.
    pub requests: u64,
}

impl Costed {
    /// Adds one request's usage at `price`.
    pub fn add(&mut self, usage: Usage, price: Option<Price>) {
        let first = self.requests == 0;
        self.requests += 1;
        self.usage += usage;
        self.cost_usd = match (price, self.cost_usd) {
            (Some(price), Some(so_far)) => Some(so_far + price.cost(&usage)),
            (Some(price), None) if first => Some(price.cost(&usage)),
            _ => None,
        };
    }

    /// Adds another total (a sub-agent's, say).
    pub fn absorb(&mut self, other: &Costed) {
        let first = self.requests == 0;
        self.requests += other.requests;
        self.usage += other.usage;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (None, Some(b)) if first => Some(b),
            _ => None,
        };
    }

    /// One line for the terminal: tokens in, out, cache read and write, and the cost when known.
    pub fn line(&self) -> String {
        let u = &self.usage;
        let mut line = format!(
            "{} in · {} out · {} cache read · {} cache write",
            tokens(u.input_tokens),
            tokens(u.output_tokens),
            tokens(u.cache_read_input_tokens),
            tokens(u.cache_creation_input_tokens)
        );
        match self.cost_usd {
            Some(cost) => line.push_str(&format!(" · ${cost:.4}")),
            None if self.requests > 0 => line.push_str(" · cost unknown for this model"),
            None => {}
        }
        line
    }
}

/// A token count the way people read it: `950`, `12.3k`, `1.20M`.
pub fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.2}M", count as f64 / 1_000_000.0),
    }
}

/// The session's usage and cost, shared by the agent and the sub-agents it starts.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    prices: Arc<BTreeMap<String, Price>>,
    total: Arc<Mutex<Costed>>,
}

impl Meter {
    /// A meter pricing with the table and `overrides`.
    pub fn new(overrides: BTreeMap<String, Price>) -> Self {
        Self {
            prices: Arc::new(overrides),
            total: Arc::default(),
        }
    }

    /// The price of `model`, when known.
    pub fn price(&self, model: &str) -> Option<Price> {
        model_price(model, &self.prices)
    }

    /// Records one request of `model`; returns it costed.
    pub fn record(&self, model: &str, usage: Usage) -> Costed {
        let mut one = Costed::default();
        one.add(usage, self.price(model));
        if let Ok(mut total) = self.total.lock() {
            total.absorb(&one);
        }
        one
    }

    /// The session so far.
    pub fn total(&self) -> Costed {
        self.total.lock().map(|t| *t).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_names_the_model_and_settings_override_the_table() {
        let none = BTreeMap::new();
        assert_eq!(
            model_price("claude-opus-4-5-20251101", &none)
                .unwrap()
                .input,
            5.0
        );
        assert_eq!(model_price("claude-opus-4-1", &none).unwrap().input, 15.0);
        assert_eq!(model_price("gpt-4o-mini-2024", &none).unwrap().input, 0.15);
        assert_eq!(model_price("llama3.2", &none), None);
        let mine = BTreeMap::from([("llama".to_owned(), Price::new(0.0, 0.0, 0.0, 0.0))]);
        assert_eq!(model_price("llama3.2", &mine).unwrap().output, 0.0);
        assert_eq!(context_window("claude-sonnet-4-5", None), 200_000);
        assert_eq!(context_window("qwen3", None), DEFAULT_CONTEXT_WINDOW);
        assert_eq!(context_window("claude-sonnet-4-5", Some(1_000)), 1_000);
    }

    #[test]
    fn an_unknown_price_makes_the_total_unknown_and_the_line_says_so() {
        let meter = Meter::new(BTreeMap::new());
        let usage = Usage {
            input_tokens: 1_200,
            output_tokens: 300,
            cache_read_input_tokens: 10_000,
            cache_creation_input_tokens: 2_000,
        };
        let one = meter.record("claude-sonnet-4-5", usage);
        assert_eq!(
            one.line(),
            "1.2k in · 300 out · 10.0k cache read · 2.0k cache write · $0.0186"
        );
        meter.record("llama3", usage);
        assert_eq!(meter.total().cost_usd, None);
        assert_eq!(meter.total().requests, 2);
        assert!(
            meter
                .total()
                .line()
                .ends_with("cost unknown for this model")
        );
    }
}
