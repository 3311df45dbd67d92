//! Compaction: when the conversation nears the model's context window, the model summarises it
//! and the session goes on from that summary plus the most recent messages kept verbatim.
//!
//! This module holds the decisions, free of I/O: how big the context is
//! ([`estimate_tokens`]), whether it is time ([`Window::needs_compaction`]), where the kept part
//! starts without splitting a tool call from its result ([`kept_from`]), and the messages that ask
//! for the summary and carry it. [`crate::agent::Agent::compact`] does the request, and the
//! transcript records where the summary replaced the history, so that a resumed session starts
//! from it too.

use serde::{Deserialize, Serialize};

use tool_core::Content;
use tool_pool::CharEstimate;

use crate::conversation::{Block, Message, Role};

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The context neared the threshold.
    Auto,
    /// The provider said the conversation no longer fits.
    ContextLimit,
    /// The user asked (`/compact`).
    Manual,
}

/// The context window and when to compact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// The model's context window in tokens.
    pub tokens: u64,
    /// The share of the window past which the conversation is compacted (0.85 by default).
    pub threshold: f64,
}

/// The share of the window used before compacting, unless the settings say otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.85;

/// The share of the window the verbatim recent messages may take after a compaction.
const KEEP_SHARE: f64 = 0.2;

impl Window {
    /// The token count past which the conversation is compacted.
    pub fn limit(&self) -> u64 {
        (self.tokens as f64 * self.threshold.clamp(0.05, 1.0)) as u64
    }

    /// Whether a request of `tokens` would pass the threshold.
    pub fn needs_compaction(&self, tokens: u64) -> bool {
        tokens > self.limit()
    }

    /// How many tokens of recent messages a compaction keeps verbatim, for a conversation of
    /// `current` tokens: a fifth of the window, and never more than half the conversation (so a
    /// compaction always shrinks it).
    pub fn keep_budget(&self, current: u64) -> u64 {
        ((self.tokens as f64 * KEEP_SHARE) as u64).min(current / 2)
    }
}

/// What an image costs in tokens, whatever its size: providers scale images down to about a
/// megapixel and charge by area (about 1,600 tokens at most), not by the bytes of its encoding.
pub(crate) const IMAGE_TOKENS: u64 = 1_600;

/// An estimate of the tokens `messages` take: their JSON by [`CharEstimate`], and an image
/// [`IMAGE_TOKENS`]. Used for what the provider has not counted yet.
pub(crate) fn estimate_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

fn message_tokens(message: &Message) -> u64 {
    MESSAGE_TOKENS + message.content.iter().map(block_tokens).sum::<u64>()
}

/// What a message's role and framing take, beside its blocks.
const MESSAGE_TOKENS: u64 = 4;

fn block_tokens(block: &Block) -> u64 {
    match block {
        Block::Image { .. } => IMAGE_TOKENS,
        Block::ToolResult(result) => result
            .content
            .iter()
            .map(|content| match content {
                Content::Image { .. } => IMAGE_TOKENS,
                Content::Text { .. } => json_tokens(content),
            })
            .sum::<u64>()
            .saturating_add(result.structured.as_ref().map_or(0, json_tokens)),
        other => json_tokens(other),
    }
}

/// The tokens of a value's JSON, by the one estimate ([`CharEstimate`]).
fn json_tokens<T: Serialize>(value: &T) -> u64 {
    serde_json::to_string(value).map_or(0, |s| estimate_text_tokens(&s))
}

/// An estimate of the tokens of a text ([`CharEstimate`], the estimate tool-pool's deferral uses
/// too).
pub(crate) fn estimate_text_tokens(text: &str) -> u64 {
    CharEstimate::estimate(text) as u64
}

/// An estimate of the tokens of a text of `chars` characters.
pub(crate) fn estimate_chars_tokens(chars: usize) -> u64 {
    CharEstimate::estimate_chars(chars) as u64
}

/// Where the kept part of `messages` starts: the earliest index from which the messages fit in
/// `budget` tokens and at which a conversation may start again. That is an assistant message
/// (its calls' results follow it) or a user message that answers no call; so a call and its
/// result are never split. `messages.len()` when nothing is kept.
pub fn kept_from(messages: &[Message], budget: u64) -> usize {
    let tokens: Vec<u64> = messages.iter().map(message_tokens).collect();
    kept_from_sized(messages, &tokens, budget)
}

/// [`kept_from`] with each message's estimate already known (`tokens[i]` for `messages[i]`).
fn kept_from_sized(messages: &[Message], tokens: &[u64], budget: u64) -> usize {
    let mut size = 0u64;
    let mut start = messages.len();
    for at in (0..messages.len()).rev() {
        size += tokens.get(at).copied().unwrap_or(0);
        if size > budget {
            break;
        }
        if may_start_at(&messages[at]) {
            start = at;
        }
    }
    start
}

fn may_start_at(message: &Message) -> bool {
    match message.role {
        Role::Assistant => true,
        Role::User => !message
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult(_))),
    }
}

/// The last message of the summary request: what the summary must hold, and what the user asked
/// to keep (`/compact KEEP`).
pub fn summary_request(keep: Option<&str>) -> Message {
    let mut text = String::from(
        "Your context is nearly full, so the messages so far are about to be replaced by a summary \
         that you write now. Write it for yourself, to continue the work from it alone, as plain \
         text with these sections:\n\
         1. Goal: what the user asked for, in their words where the wording matters.\n\
         2. Decisions: what was decided or learned, and why.\n\
         3. Files: each file read, created or changed, with what matters about it.\n\
         4. Pending: what is left to do, and the very next step.\n\
         Do not call tools; answer with the summary only.",
    );
    if let Some(keep) = keep.map(str::trim).filter(|k| !k.is_empty()) {
        text.push_str(&format!(
            "\nThe user asks you to keep in particular: {keep}"
        ));
    }
    Message::user_text(text)
}

const SUMMARY_HEAD: &str = "<conversation-summary>\nThe earlier part of this conversation was \
     compacted to save context. This summary replaces it; the messages after it are the most \
     recent ones, unchanged.\n\n";
const SUMMARY_TAIL: &str = "\n</conversation-summary>";

/// The message that stands for the compacted history at the start of the conversation.
pub(crate) fn summary_message(summary: &str) -> Message {
    Message::user_text(format!("{SUMMARY_HEAD}{}{SUMMARY_TAIL}", summary.trim()))
}

/// The summary a [`summary_message`]'s text carries, or `None` for any other text.
pub(crate) fn summary_in(text: &str) -> Option<&str> {
    text.strip_prefix(SUMMARY_HEAD)?.strip_suffix(SUMMARY_TAIL)
}

/// The conversation with each message's token estimate, computed once, when the message joins
/// it: a round estimates only its new messages, and a compaction adds up what is there.
#[derive(Debug, Default)]
pub(crate) struct History {
    messages: Vec<Message>,
    tokens: Vec<u64>,
}

impl History {
    /// `messages`, each estimated once.
    pub(crate) fn new(messages: Vec<Message>) -> Self {
        let tokens = messages.iter().map(message_tokens).collect();
        Self { messages, tokens }
    }

    /// Adds a message at the end.
    pub(crate) fn push(&mut self, message: Message) {
        self.tokens.push(message_tokens(&message));
        self.messages.push(message);
    }

    /// The estimated tokens of the messages from `from` on.
    pub(crate) fn tokens_from(&self, from: usize) -> u64 {
        self.tokens
            .get(from..)
            .map_or(0, |tokens| tokens.iter().sum())
    }

    /// Where the kept part starts within `budget` (see [`kept_from`]).
    pub(crate) fn kept_from(&self, budget: u64) -> usize {
        kept_from_sized(&self.messages, &self.tokens, budget)
    }

    /// The summary, then the messages from `from` on (see [`compacted`]); the kept messages keep
    /// their estimates.
    pub(crate) fn compact(&mut self, summary: &str, from: usize) {
        let from = from.min(self.messages.len());
        let summary = summary_message(summary);
        let mut tokens = vec![message_tokens(&summary)];
        tokens.extend_from_slice(&self.tokens[from..]);
        self.messages = compacted_from(summary, &self.messages, from);
        self.tokens = tokens;
    }

    /// Empties the conversation.
    pub(crate) fn clear(&mut self) {
        self.messages.clear();
        self.tokens.clear();
    }
}

impl std::ops::Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

/// The conversation after a compaction: the summary, then the kept messages.
pub fn compacted(summary: &str, messages: &[Message], kept_from: usize) -> Vec<Message> {
    compacted_from(summary_message(summary), messages, kept_from)
}

fn compacted_from(summary: Message, messages: &[Message], kept_from: usize) -> Vec<Message> {
    let kept_from = kept_from.min(messages.len());
    let mut next = Vec::with_capacity(messages.len() - kept_from + 1);
    next.push(summary);
    next.extend_from_slice(&messages[kept_from..]);
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tool_core::{Content, ToolResult};

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse(tool_core::ToolCall {
                id: id.into(),
                name: "read_file".into(),
                input: json!({"path": "a"}),
            })],
        }
    }

    fn result(id: &str, size: usize) -> Message {
        Message {
            role: Role::User,
            content: vec![Block::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: vec![Content::text("x".repeat(size))],
                structured: None,
                is_error: false,
            })],
        }
    }

    #[test]
    fn the_kept_part_never_starts_with_a_result_whose_call_is_cut_off() {
        let messages = vec![
            Message::user_text("fix the bug"),
            call("a"),
            result("a", 4_000),
            call("b"),
            result("b", 400),
        ];
        // Room for the last result but not its call: nothing can start there, so the kept part
        // starts at the call or later.
        let size = |m: &Message| estimate_tokens(std::slice::from_ref(m));
        let small = size(&messages[4]) + 1;
        assert_eq!(kept_from(&messages, small), messages.len());
        let both = size(&messages[3]) + size(&messages[4]);
        assert_eq!(kept_from(&messages, both), 3);
        assert_eq!(kept_from(&messages, u64::MAX), 0);
        let next = compacted("the summary", &messages, 3);
        assert_eq!(next.len(), 3);
        assert_eq!(summary_in(&next[0].text()), Some("the summary"));
        assert_eq!(summary_in("fix the bug"), None);
        assert_eq!(next[1], messages[3]);
    }

    #[test]
    fn an_image_counts_as_what_a_provider_charges_not_its_encoding() {
        let data = "A".repeat(2_000_000);
        let attached = Message {
            role: Role::User,
            content: vec![Block::Image {
                media_type: "image/png".into(),
                data: data.clone(),
            }],
        };
        assert_eq!(estimate_tokens(&[attached]), MESSAGE_TOKENS + IMAGE_TOKENS);
        let read = Message {
            role: Role::User,
            content: vec![Block::ToolResult(ToolResult {
                tool_use_id: "a".into(),
                content: vec![Content::Image {
                    media_type: "image/png".into(),
                    data,
                }],
                structured: None,
                is_error: false,
            })],
        };
        assert_eq!(estimate_tokens(&[read]), MESSAGE_TOKENS + IMAGE_TOKENS);
    }

    #[test]
    fn a_compaction_keeps_at_most_half_and_triggers_past_the_threshold() {
        let window = Window {
            tokens: 100_000,
            threshold: DEFAULT_THRESHOLD,
        };
        assert!(!window.needs_compaction(85_000));
        assert!(window.needs_compaction(85_001));
        assert_eq!(window.keep_budget(90_000), 20_000);
        assert_eq!(window.keep_budget(10_000), 5_000);
        assert!(
            summary_request(Some("the API design"))
                .text()
                .ends_with("keep in particular: the API design")
        );
    }

    #[test]
    fn a_history_keeps_each_estimate_through_pushes_and_a_compaction() {
        let texts = ["one", "a longer second message", "three", "four, the last"];
        let mut history = History::new(texts[..2].iter().map(|t| Message::user_text(*t)).collect());
        for text in &texts[2..] {
            history.push(Message::user_text(*text));
        }
        assert_eq!(history.tokens_from(0), estimate_tokens(&history));
        assert_eq!(history.tokens_from(2), estimate_tokens(&history[2..]));
        assert_eq!(history.tokens_from(9), 0);
        history.compact("what happened", 2);
        assert_eq!(history.len(), 3);
        assert_eq!(history.tokens_from(0), estimate_tokens(&history));
        assert_eq!(history.kept_from(u64::MAX), kept_from(&history, u64::MAX));
        history.clear();
        assert_eq!(history.tokens_from(0), 0);
    }
}
