//! One message's calls: safe calls overlap, unsafe calls run alone, results keep their order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tool_core::{CancellationToken, ExecutionEvent, ToolCall};

use super::support::{Fixture, probe};

struct Counters {
    running: Arc<AtomicUsize>,
    max_seen: Arc<AtomicUsize>,
}

fn probes(fx: &Fixture) -> Counters {
    let running = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    for (name, safe) in [("safe", true), ("unsafe", false)] {
        fx.registry
            .register(Arc::new(probe(
                name,
                safe,
                Arc::clone(&running),
                Arc::clone(&max_seen),
            )))
            .unwrap();
    }
    Counters { running, max_seen }
}

fn calls(names: &[&str]) -> Vec<ToolCall> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| ToolCall::new(format!("call_{i}"), *name, json!({})))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn safe_calls_overlap() {
    let fx = Fixture::new();
    let counters = probes(&fx);
    let results = fx
        .executor()
        .execute_all(
            calls(&["safe", "safe", "safe"]),
            CancellationToken::new(),
            None,
        )
        .await;
    assert!(results.iter().all(|r| !r.is_error));
    assert!(
        counters.max_seen.load(Ordering::SeqCst) >= 2,
        "safe calls ran one at a time"
    );
    assert_eq!(counters.running.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unsafe_calls_never_overlap_another() {
    let fx = Fixture::new();
    let counters = probes(&fx);
    let names = ["safe", "unsafe", "safe", "safe", "unsafe", "unsafe", "safe"];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let results = fx
        .executor()
        .execute_all(calls(&names), CancellationToken::new(), Some(tx))
        .await;
    assert!(results.iter().all(|r| !r.is_error));
    // Replay start and finish events: whenever an unsafe call is running, nothing else is.
    let mut running: Vec<String> = Vec::new();
    while let Ok(event) = rx.try_recv() {
        match event {
            ExecutionEvent::Started { tool_use_id, .. } => {
                running.push(tool_use_id);
                let any_unsafe = running.iter().any(|id| {
                    let index: usize = id.trim_start_matches("call_").parse().unwrap();
                    names[index] == "unsafe"
                });
                assert!(!any_unsafe || running.len() == 1, "overlap: {running:?}");
            }
            ExecutionEvent::Finished { tool_use_id, .. } => running.retain(|id| *id != tool_use_id),
            ExecutionEvent::Progress { .. } => {}
        }
    }
    let _ = counters;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn results_come_back_in_the_order_requested() {
    let fx = Fixture::new();
    let _counters = probes(&fx);
    let names = ["safe", "echo", "unsafe", "nope", "safe"];
    let mut calls = calls(&names);
    calls[1].input = json!({"text": "second"});
    let results = fx
        .executor()
        .execute_all(calls, CancellationToken::new(), None)
        .await;
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["call_0", "call_1", "call_2", "call_3", "call_4"]);
    assert_eq!(results[1].text(), "second");
    assert!(results[3].is_error, "an unknown tool fails alone");
    assert!(!results[4].is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_most_the_limit_run_at_once() {
    let fx = Fixture::new();
    let counters = probes(&fx);
    let executor = fx.builder().max_concurrency(3).build();
    let names = vec!["safe"; 9];
    let results = executor
        .execute_all(calls(&names), CancellationToken::new(), None)
        .await;
    assert_eq!(results.len(), 9);
    assert!(counters.max_seen.load(Ordering::SeqCst) <= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_a_batch_answers_every_call() {
    let fx = Fixture::new();
    let _counters = probes(&fx);
    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let executor = fx.executor();
    let mut batch = executor.batch(cancel.clone(), Some(tx));
    for call in calls(&["forever", "unsafe", "safe"]) {
        batch.push(call);
    }
    let finished = tokio::spawn(batch.finish());
    loop {
        if let ExecutionEvent::Progress { .. } = rx.recv().await.unwrap() {
            break;
        }
    }
    cancel.cancel();
    let results = finished.await.unwrap();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error));
    assert!(
        results[0].text().contains("while it was running"),
        "{}",
        results[0].text()
    );
    assert!(
        results[1].text().contains("before it started"),
        "{}",
        results[1].text()
    );
    assert!(
        results[2].text().contains("before it started"),
        "{}",
        results[2].text()
    );
}
