//! tool-search: tokenize, build, query and update, on the seal-tools set (4,076 real tools) when
//! `../shared/bench` is present, else on a generated corpus of the same size. Each bench checks
//! what it computed.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use tool_search::{Parameter, SearchConfig, SearchIndex, Tokenizer, ToolDocument};

fn corpus() -> (Vec<ToolDocument>, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/seal-tools");
    let tools = std::fs::read_to_string(dir.join("tools.jsonl"));
    let queries = std::fs::read_to_string(dir.join("queries.jsonl"));
    if let (Ok(tools), Ok(queries)) = (tools, queries) {
        let docs = tools
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|t| {
                let mut doc = ToolDocument::new(
                    t["name"].as_str().unwrap_or_default(),
                    t["description"].as_str().unwrap_or_default(),
                );
                if let Some(props) = t["input_schema"]["properties"].as_object() {
                    for (name, prop) in props {
                        doc.parameters.push(Parameter {
                            name: name.clone(),
                            description: prop["description"].as_str().map(str::to_owned),
                        });
                    }
                }
                doc
            })
            .collect();
        let queries = queries
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|q| q["query"].as_str().map(str::to_owned))
            .take(200)
            .collect();
        return (docs, queries);
    }
    let words = [
        "file", "read", "weather", "stock", "send", "message", "issue", "create", "list", "user",
        "order", "flight",
    ];
    let docs = (0..4076)
        .map(|i| {
            let a = words[i % words.len()];
            let b = words[(i / words.len()) % words.len()];
            ToolDocument::new(
                format!("tool_{i}_{a}_{b}"),
                format!("{a} the {b} for item {i}"),
            )
        })
        .collect();
    let queries = (0..200)
        .map(|i| format!("{} {}", words[i % 12], words[(i * 7) % 12]))
        .collect();
    (docs, queries)
}

fn benches(c: &mut Criterion) {
    let (docs, queries) = corpus();
    assert!(docs.len() > 4000, "the corpus has {} tools", docs.len());

    let tokenizer = Tokenizer::new();
    let text =
        "Reads a file from the local filesystem. mcp__github__create_issue 查询北京的天气预报";
    c.bench_function("tokenize", |b| {
        b.iter(|| {
            let tokens = tokenizer.tokenize(black_box(text));
            assert_eq!(tokens.len(), 17);
            tokens
        });
    });

    c.bench_function("build_4k", |b| {
        b.iter(|| {
            let index = SearchIndex::from_documents(
                SearchConfig::default(),
                black_box(&docs).iter().cloned(),
            );
            assert_eq!(index.len(), docs.len());
            index
        });
    });

    let index = SearchIndex::from_documents(SearchConfig::default(), docs.iter().cloned());
    let mut i = 0;
    c.bench_function("query_4k", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            let results = index
                .search(black_box(&queries[i]), 10)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(results.hits.len() <= 10);
            results
        });
    });
    let matched = queries
        .iter()
        .filter(|q| index.search(q, 10).is_ok_and(|r| !r.hits.is_empty()))
        .count();
    assert!(
        matched * 10 > queries.len() * 9,
        "only {matched} of {} queries matched",
        queries.len()
    );

    let server: Vec<ToolDocument> = (0..50)
        .map(|i| {
            ToolDocument::new(
                format!("mcp__bench__t{i}"),
                format!("widget gadget tool {i}"),
            )
            .with_server("bench", format!("t{i}"))
        })
        .collect();
    let mut index = index;
    c.bench_function("update_add_remove_50_tool_server_4k", |b| {
        b.iter(|| {
            for doc in &server {
                index.add(doc.clone());
            }
            assert_eq!(index.len(), docs.len() + 50);
            assert_eq!(index.remove_server("bench"), 50);
        });
    });
}

criterion_group!(search, benches);
criterion_main!(search);
