//! The agent's side of compaction: the context's size in tokens, when to compact, the summary
//! request, and `/clear`.

use super::*;

impl Agent {
    /// The next request's size in tokens: what the provider counted for the last request plus
    /// an estimate of the messages since; an estimate of everything before the first answer.
    pub fn context_tokens(&self) -> u64 {
        match self.last_input {
            Some((tokens, sent)) if tokens > 0 && sent <= self.messages.len() => {
                tokens + self.messages.tokens_from(sent)
            }
            _ => self.fixed_tokens().0 + self.fixed_tokens().1 + self.messages.tokens_from(0),
        }
    }

    /// Estimated tokens of the system prompt and of the tools array, which every request
    /// carries unchanged.
    pub fn fixed_tokens(&self) -> (u64, u64) {
        let tools = serde_json::to_string(&self.runtime.pool.request_tools())
            .map_or(0, |t| compaction::estimate_text_tokens(&t));
        (compaction::estimate_text_tokens(&self.system), tools)
    }

    /// Counts a response's usage for the turn and the session, and remembers its input size.
    pub(super) fn account(&mut self, usage: &Usage, sent: usize, report: &mut TurnReport) {
        report.add(&self.meter.record(&self.model, *usage));
        self.front_end.event(AgentEvent::Usage {
            model: self.model.clone(),
            usage: *usage,
        });
        let input =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        self.last_input = Some((input, sent));
    }

    /// Compacts the conversation now (`/compact`); returns what the summary request cost.
    pub async fn compact_now(
        &mut self,
        keep: Option<&str>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Costed> {
        let mut report = TurnReport::new();
        self.compact(Trigger::Manual, keep, cancel, &mut report)
            .await?;
        Ok(report.costed())
    }

    /// Replaces the conversation by the model's summary of it and its most recent messages
    /// (`keep` says what the summary must keep in particular), and records that in the
    /// transcript. The system prompt and the tools stay as they are, so the prompt cache of
    /// their prefix still serves the next request.
    pub(super) async fn compact(
        &mut self,
        trigger: Trigger,
        keep: Option<&str>,
        cancel: &CancellationToken,
        report: &mut TurnReport,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.messages.is_empty(),
            "there is nothing to compact yet: the conversation is empty"
        );
        let before = self.context_tokens();
        let budget = self.window.keep_budget(self.messages.tokens_from(0));
        let from = self.messages.kept_from(budget);
        let (summary, usage) = self.summarize(keep, cancel).await?;
        report.add(&self.meter.record(&self.model, usage));
        self.front_end.event(AgentEvent::Usage {
            model: self.model.clone(),
            usage,
        });
        let kept = self.messages.len() - from;
        self.transcript.compaction(trigger, &summary, kept)?;
        self.messages.compact(&summary, from);
        self.last_input = None;
        self.front_end.event(AgentEvent::Compacted {
            trigger,
            tokens_before: before,
            tokens_after: self.context_tokens(),
            kept,
        });
        Ok(())
    }

    /// Asks the model for the summary, with the same system prompt and tools as every request
    /// (so the cached prefix serves it). When even that request is too long, the oldest half
    /// of what is left is left out, a few times at most.
    pub(super) async fn summarize(
        &self,
        keep: Option<&str>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<(String, Usage)> {
        let mut history: &[Message] = &self.messages;
        let mut shortened = false;
        loop {
            let mut messages = Vec::with_capacity(history.len() + 2);
            if shortened {
                messages.push(Message::user_text(
                    "[The oldest messages of this conversation were left out here: they no longer fit in the context window.]",
                ));
            }
            messages.extend_from_slice(history);
            messages.push(compaction::summary_request(keep));
            let request = ModelRequest {
                messages: messages.into(),
                ..self.request()
            };
            match finished(self.provider.stream(&request, cancel)).await {
                Ok(response) => {
                    let text = response.message.text();
                    anyhow::ensure!(
                        !text.trim().is_empty(),
                        "the model answered the summary request without text; the conversation was left as it was"
                    );
                    return Ok((text, response.usage));
                }
                Err(ProviderError::ContextTooLong { message }) => {
                    let cut =
                        compaction::kept_from(history, compaction::estimate_tokens(history) / 2);
                    if cut == 0 || cut >= history.len() {
                        anyhow::bail!(
                            "the conversation cannot be summarised: even its latest messages do not fit ({message}); use /clear to start afresh"
                        );
                    }
                    history = &history[cut..];
                    shortened = true;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Starts the conversation afresh (`/clear`); the transcript records it.
    pub fn clear(&mut self) -> anyhow::Result<()> {
        self.transcript.append(&crate::transcript::Entry::Clear)?;
        self.messages.clear();
        self.last_input = None;
        Ok(())
    }
}
