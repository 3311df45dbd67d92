//! Query forms, the CJK gate, ties, updates in place.

use proptest::prelude::*;
use tool_search::{Parameter, QueryKind, Scorer, SearchConfig, SearchIndex, ToolDocument};

fn corpus() -> Vec<ToolDocument> {
    vec![
        ToolDocument::new("read_file", "Reads a file from the local filesystem.")
            .with_parameter(Parameter::described("path", "Absolute path of the file"))
            .with_alias("Read"),
        ToolDocument::new(
            "write_file",
            "Writes a file to the local filesystem, replacing it.",
        )
        .with_parameter(Parameter::described("path", "Where to write"))
        .with_parameter(Parameter::described("content", "The text to write")),
        ToolDocument::new(
            "mcp__slack__send_message",
            "Send a message to a Slack channel.",
        )
        .with_server("slack", "send_message")
        .with_parameter(Parameter::described("channel", "Channel id")),
        ToolDocument::new(
            "mcp__slack__list_channels",
            "List the channels of the workspace.",
        )
        .with_server("slack", "list_channels"),
        ToolDocument::new(
            "mcp__github__create_issue",
            "Create a new issue in a GitHub repository.",
        )
        .with_server("github", "create_issue")
        .with_parameter(Parameter::described("title", "Issue title")),
        ToolDocument::new("weather_forecast", "查询城市的天气预报，返回未来三天的天气")
            .with_hint("天气 预报 weather"),
        ToolDocument::new("stock_quote", "查询股票的实时行情和价格"),
        ToolDocument::new("translate_text", "翻译文本到指定的语言"),
    ]
}

fn index() -> SearchIndex {
    SearchIndex::from_documents(SearchConfig::default(), corpus())
}

fn names(index: &SearchIndex, query: &str, limit: usize) -> Vec<String> {
    index
        .search(query, limit)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.name)
        .collect()
}

#[test]
fn keywords_rank_the_right_tool_first() {
    let index = index();
    assert_eq!(
        names(&index, "send a slack message", 1),
        ["mcp__slack__send_message"]
    );
    assert_eq!(
        names(&index, "open an issue on github", 1),
        ["mcp__github__create_issue"]
    );
    assert_eq!(names(&index, "readFile", 1), ["read_file"]);
    assert_eq!(
        names(&index, "reading files", 2),
        ["read_file", "write_file"]
    );
}

#[test]
fn a_query_that_is_a_name_or_alias_ranks_that_tool_first() {
    let mut index = index();
    // `write_file` mentions files more, but the query names `read_file` (by its alias).
    assert_eq!(names(&index, "  READ ", 1), ["read_file"]);
    assert_eq!(names(&index, "Write_File", 1), ["write_file"]);
    index.add(
        ToolDocument::new("notify", "Posts a short note to a chat channel.")
            .with_alias("Send Message"),
    );
    // An alias with a space is matched whole, case aside.
    assert_eq!(names(&index, "send message", 1), ["notify"]);
    // A longer sentence is ranked by its words: the Slack tool says "send a message".
    assert_eq!(
        names(&index, "send a message to slack", 1),
        ["mcp__slack__send_message"]
    );
}

#[test]
fn identifiers_match_however_they_are_written() {
    let mut index = index();
    index.add(ToolDocument::new(
        "fetch_url",
        "Downloads a web page into the scratchpad",
    ));
    for query in [
        "readfile",
        "readFile",
        "ReadFile",
        "READ_FILE",
        "read-files",
    ] {
        assert_eq!(names(&index, query, 1), ["read_file"], "{query}");
    }
    // A plain word of one tool and an identifier of another meet on the parts joined.
    for query in ["scratch_pad", "scratchPad", "scratchpads"] {
        assert_eq!(names(&index, query, 1), ["fetch_url"], "{query}");
    }
}

#[test]
fn a_long_identifier_joined_is_one_term_for_tools_and_queries_alike() {
    let index = index();
    // Three parts or more joined are kept unstemmed on both sides (`...issue`, not `...issu`).
    let explanation = index
        .explain("McpGithubCreateIssue", "mcp__github__create_issue")
        .unwrap()
        .unwrap();
    let terms: Vec<&str> = explanation.terms.iter().map(|t| t.term.as_str()).collect();
    assert!(terms.contains(&"mcpgithubcreateissue"), "{terms:?}");
    assert!(terms.contains(&"issu"), "{terms:?}");
}

#[test]
fn required_words_must_match() {
    let index = index();
    let hits = names(&index, "file +write", 5);
    assert_eq!(hits, ["write_file"]);
    assert!(names(&index, "file +teleport", 5).is_empty());
}

#[test]
fn the_gate_and_required_words_hold_however_long_the_query() {
    let mut index = index();
    // Forty words of one tool come first in the query, before what decides the gate.
    let words: Vec<String> = (0..40)
        .map(|i| format!("word{}", char::from(b'a' + i % 26)) + &"x".repeat(usize::from(i / 26)))
        .collect();
    index.add(ToolDocument::new("many_words", words.join(" ")));
    let long = words.join(" ");
    // The weather tool shares two bigrams (天气, 预报) and no word: it passes the gate.
    let hits = names(&index, &format!("{long} 天气预报"), 20);
    assert!(hits.contains(&"weather_forecast".to_owned()), "{hits:?}");
    // A required word late in a long query still has to match.
    assert_eq!(
        names(&index, &format!("{long} file +write"), 20),
        ["write_file"]
    );
}

#[test]
fn select_finds_names_and_aliases_case_insensitively_and_reports_missing() {
    let index = index();
    let results = index
        .search("select:READ_FILE,read,nope,mcp__slack__send_message", 10)
        .unwrap();
    assert_eq!(results.kind, QueryKind::Select);
    let hits: Vec<&str> = results.hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hits, ["read_file", "mcp__slack__send_message"]);
    assert_eq!(results.missing, ["nope"]);
}

#[test]
fn discover_ranks_like_keywords() {
    let index = index();
    let results = index.search("discover:slack channel", 5).unwrap();
    assert_eq!(results.kind, QueryKind::Discover);
    assert_eq!(results.hits[0].name, "mcp__slack__list_channels");
}

#[test]
fn a_server_query_lists_its_tools_by_name() {
    let index = index();
    let results = index.search("mcp__slack", 10).unwrap();
    assert_eq!(results.kind, QueryKind::Server);
    let hits: Vec<&str> = results.hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        hits,
        ["mcp__slack__list_channels", "mcp__slack__send_message"]
    );
    assert!(index.search("mcp__nobody", 10).unwrap().hits.is_empty());
}

#[test]
fn the_cjk_gate_needs_two_shared_bigrams() {
    let index = index();
    // 查询 is shared by the weather and stock tools; 天气 only by weather: weather shares two.
    assert_eq!(names(&index, "查询天气", 5), ["weather_forecast"]);
    // One shared bigram (查询) is not enough to pull in either tool.
    assert!(names(&index, "查询快递", 5).is_empty());
    // A one-bigram query needs just that bigram.
    assert_eq!(names(&index, "翻译", 5), ["translate_text"]);
    // An ASCII match lets a document with one shared bigram through the gate.
    assert_eq!(names(&index, "查询快递 weather", 5), ["weather_forecast"]);
}

#[test]
fn ties_are_broken_by_name() {
    let mut index = SearchIndex::default();
    for name in ["zeta", "alpha", "mid"] {
        index.add(ToolDocument::new(name, "does the same thing"));
    }
    assert_eq!(names(&index, "same thing", 3), ["alpha", "mid", "zeta"]);
    assert_eq!(names(&index, "same thing", 2), ["alpha", "mid"]);
}

#[test]
fn adding_replaces_and_removing_forgets() {
    let mut index = index();
    assert_eq!(index.len(), 8);
    index.add(ToolDocument::new("read_file", "Shows an image."));
    assert_eq!(index.len(), 8);
    assert_eq!(names(&index, "local filesystem", 5), ["write_file"]);
    assert_eq!(index.remove_server("slack"), 2);
    assert!(names(&index, "slack message", 5).is_empty());
    assert!(index.remove("write_file"));
    assert!(!index.remove("write_file"));
    assert_eq!(index.len(), 5);
}

#[test]
fn both_scorers_rank_sensibly() {
    let index = SearchIndex::from_documents(
        SearchConfig {
            scorer: Scorer::TfIdf,
            ..SearchConfig::default()
        },
        corpus(),
    );
    assert_eq!(
        names(&index, "send a slack message", 1),
        ["mcp__slack__send_message"]
    );
    assert_eq!(names(&index, "查询天气", 5), ["weather_forecast"]);
}

#[test]
fn explain_shows_terms_and_fields() {
    let index = index();
    let explanation = index
        .explain("send slack message", "mcp__slack__send_message")
        .unwrap()
        .unwrap();
    let score = index.search("send slack message", 1).unwrap().hits[0].score;
    assert!((explanation.score - score).abs() < 1e-3);
    insta::assert_snapshot!(explanation.to_string());
    assert!(index.explain("send", "nope").unwrap().is_none());
}

fn docs_strategy() -> impl Strategy<Value = Vec<(usize, usize)>> {
    proptest::collection::vec((0usize..8, 0usize..3), 1..30)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// An index built by a history of adds and removes ranks exactly like one built at once from
    /// the documents that remain.
    #[test]
    fn updates_in_place_rank_like_a_fresh_build(ops in docs_strategy(), query in 0usize..6) {
        let base = corpus();
        let queries = ["file", "slack message", "github issue", "查询天气", "local filesystem write", "channel list"];
        let mut live: std::collections::BTreeMap<String, ToolDocument> = Default::default();
        let mut incremental = SearchIndex::default();
        for (doc, op) in ops {
            let mut d = base[doc].clone();
            if op == 2 {
                d.description.push_str(" updated with extra words about files");
            }
            if op == 0 {
                incremental.remove(&d.name);
                live.remove(&d.name);
            } else {
                incremental.add(d.clone());
                live.insert(d.name.clone(), d);
            }
        }
        let fresh = SearchIndex::from_documents(SearchConfig::default(), live.into_values());
        let a = incremental.search(queries[query], 10).unwrap().hits;
        let b = fresh.search(queries[query], 10).unwrap().hits;
        prop_assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!(&x.name, &y.name);
            prop_assert!((x.score - y.score).abs() < 1e-3);
        }
    }
}

/// Regression: removals sweep dead postings out once they outnumber the live ones; scores and
/// `explain` must not change when that happens.
#[test]
fn scores_and_explain_survive_the_sweep_of_removed_tools() {
    let mut index = index();
    let before = index.search("send slack message", 3).unwrap().hits;
    for i in 0..400 {
        index.add(ToolDocument::new(
            format!("filler_{i}"),
            format!("filler tool number {i} with several words to make postings: alpha beta gamma delta epsilon zeta"),
        ));
    }
    for i in 0..400 {
        assert!(index.remove(&format!("filler_{i}")));
    }
    let after = index.search("send slack message", 3).unwrap().hits;
    assert_eq!(before, after);
    let explanation = index
        .explain("send slack message", "mcp__slack__send_message")
        .unwrap()
        .unwrap();
    assert!((explanation.score - after[0].score).abs() < 1e-3);
    assert_eq!(explanation.terms.len(), 3);
}

#[test]
fn suggest_offers_close_names_best_first() {
    let index = index();
    assert_eq!(index.suggest("read_fil", 2), ["read_file", "write_file"]);
    assert_eq!(index.suggest("file_read", 1), ["read_file"]);
    assert_eq!(
        index.suggest("slack_send_message", 1),
        ["mcp__slack__send_message"]
    );
    assert!(index.suggest("zzzzqqq", 3).is_empty());
    assert!(index.suggest("read_file", 0).is_empty());
}
