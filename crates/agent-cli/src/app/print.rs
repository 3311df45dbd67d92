//! Print mode (`-p`): one task, its answer as text or JSON, progress on stderr.

use super::*;

pub(crate) async fn print_mode(
    agent: &mut Agent,
    task: &str,
    format: OutputFormat,
    turn: &std::sync::Mutex<CancellationToken>,
    structured: bool,
) -> anyhow::Result<ExitCode> {
    let token = fresh_token(turn);
    let task = if structured {
        format!(
            "{task}\n\n(Give your final answer by calling the `{}` tool.)",
            structured::NAME
        )
    } else {
        task.to_owned()
    };
    attach_files(agent, &task);
    let report = agent.run_turn(&task, &token).await;
    let (mut is_error, text, report) = match report {
        Ok(report) => (
            report.outcome != Outcome::Done,
            report.text.clone(),
            Some(report),
        ),
        Err(err) => (true, format!("{err:#}"), None),
    };
    let answer = report.as_ref().and_then(|r| r.structured.clone());
    let mut subtype = match report.as_ref().map(|r| &r.outcome) {
        Some(Outcome::Done) => "success",
        Some(Outcome::MaxTurns) => "error_max_turns",
        Some(Outcome::Cancelled) => "cancelled",
        None => "error",
    };
    if structured && !is_error && answer.is_none() {
        is_error = true;
        subtype = "error_no_structured_output";
    }
    match format {
        OutputFormat::Text => match (&answer, is_error) {
            (Some(value), false) => println!("{value}"),
            (None, false) => println!("{text}"),
            (_, true) if report.is_none() => eprintln!("error: {text}"),
            (_, true) => {
                eprintln!("error: {subtype}");
                if !text.is_empty() && !structured {
                    println!("{text}");
                }
            }
        },
        OutputFormat::Json | OutputFormat::StreamJson => {
            // Everything this run spent: the turn, its compactions and its sub-agents.
            let spent = agent.session_usage();
            let mut summary = json!({
                "type": "result",
                "subtype": subtype,
                "is_error": is_error,
                "result": text,
                "session_id": agent.session_id(),
                "num_turns": report.as_ref().map_or(0, |r| r.requests),
                "usage": spent.usage,
                "total_cost_usd": spent.cost_usd,
            });
            if structured {
                summary["structured_output"] = answer.unwrap_or(Value::Null);
            }
            println!("{summary}");
        }
    }
    Ok(if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Print mode's front end, which cannot ask (a call that needs approval is denied): each event
/// as a JSON line for `stream-json`, else only retries and compactions, on standard error.
pub(crate) fn print_front_end(format: OutputFormat) -> Arc<dyn FrontEnd> {
    match format {
        OutputFormat::StreamJson => Arc::new(|event: AgentEvent| {
            if matches!(
                event,
                AgentEvent::Message { .. }
                    | AgentEvent::ToolResult { .. }
                    | AgentEvent::Retrying { .. }
                    | AgentEvent::Compacted { .. }
                    | AgentEvent::CompactionFailed { .. }
            ) && let Ok(line) = serde_json::to_string(&event)
            {
                println!("{line}");
            }
        }),
        _ => Arc::new(|event: AgentEvent| match event {
            AgentEvent::Retrying { attempt, reason } => {
                eprintln!("retrying (attempt {attempt}): {reason}");
            }
            AgentEvent::Compacted { .. } => eprintln!("{}", ui::compaction_text(&event)),
            AgentEvent::CompactionFailed { reason } => {
                eprintln!("the conversation could not be compacted: {reason}");
            }
            _ => {}
        }),
    }
}
