//! [`SentenceEncoder`]: a sentence-transformers model folder, loaded and run as
//! sentence-transformers runs it.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::network::{Network, NetworkConfig, Pooling, pool};
use super::{Embedder, EmbeddingError, ModelKey, script};

/// How many texts go through the network together: enough to keep the matrix products busy,
/// few enough that one long text pads few short ones (texts are sorted by length first).
const BATCH: usize = 16;

/// Choices that [`SentenceEncoder::open`] otherwise reads from the model folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncoderOptions {
    /// Put before each query: e5 models want `query: `. Default: the `query` prompt of
    /// `config_sentence_transformers.json`, else nothing.
    pub query_prefix: Option<String>,
    /// Put before each tool's text: e5 models want `passage: `. Default: the `document` or
    /// `passage` prompt of `config_sentence_transformers.json`, else nothing.
    pub document_prefix: Option<String>,
    /// The most tokens of a text the model reads. Default: `max_seq_length` of
    /// `sentence_bert_config.json`, else what the model's positions allow.
    pub max_tokens: Option<usize>,
    /// Mean or `[CLS]` pooling. Default: `1_Pooling/config.json` (bge models say `[CLS]`
    /// there), else the mean.
    pub pooling: Option<Pooling>,
    /// Whether the model reads Chinese, Japanese and Korean; queries mostly in those scripts
    /// are otherwise left to the lexical side. Default: whether the model card
    /// (`README.md`) lists `multilingual`, `zh`, `ja` or `ko` among its languages.
    pub reads_cjk: Option<bool>,
}

/// A sentence-transformers BERT-family encoder (all-MiniLM-L6-v2, bge, e5, ...) loaded from a
/// folder with `model.safetensors`, `config.json` and `tokenizer.json`, run on the CPU.
///
/// Vectors are pooled as the folder's `1_Pooling/config.json` says (the mean over the real
/// tokens by default) and scaled to unit length, as sentence-transformers does, so a dot
/// product is their cosine.
pub struct SentenceEncoder {
    folder: PathBuf,
    network: Network,
    tokenizer: Tokenizer,
    pooling: Pooling,
    query_prefix: String,
    document_prefix: String,
    max_tokens: usize,
    reads_cjk: bool,
    unknown: Option<u32>,
    dimension: usize,
    layers: usize,
    key: ModelKey,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

fn read(folder: &Path, file: &'static str) -> Result<Vec<u8>, EmbeddingError> {
    let path = folder.join(file);
    if !path.is_file() {
        return Err(EmbeddingError::MissingFile {
            folder: folder.to_owned(),
            file,
        });
    }
    std::fs::read(&path).map_err(|e| EmbeddingError::BadFile {
        path,
        reason: e.to_string(),
    })
}

/// An optional JSON file of the folder, `None` when it is missing or not what is expected.
fn optional_json<T: for<'de> Deserialize<'de>>(folder: &Path, file: &str) -> Option<T> {
    let bytes = std::fs::read(folder.join(file)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
}

#[derive(Deserialize)]
struct SentenceTransformersConfig {
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
}

impl SentenceEncoder {
    /// Loads the model in `folder`, with what the folder says for everything else.
    pub fn open(folder: &Path) -> Result<Self, EmbeddingError> {
        Self::open_with(folder, EncoderOptions::default())
    }

    /// Loads the model in `folder`, with `options` overriding what the folder says.
    pub fn open_with(folder: &Path, options: EncoderOptions) -> Result<Self, EmbeddingError> {
        if !folder.is_dir() {
            return Err(EmbeddingError::MissingFile {
                folder: folder.to_owned(),
                file: "folder (it does not exist)",
            });
        }
        let config_bytes = read(folder, "config.json")?;
        let config: NetworkConfig =
            serde_json::from_slice(&config_bytes).map_err(|e| EmbeddingError::BadFile {
                path: folder.join("config.json"),
                reason: e.to_string(),
            })?;
        if let Some(reason) = config.unsupported() {
            return Err(EmbeddingError::Unsupported {
                folder: folder.to_owned(),
                reason,
            });
        }
        let tokenizer_bytes = read(folder, "tokenizer.json")?;
        let weights = read(folder, "model.safetensors")?;
        let settings = Settings::read(folder, options, &config);
        let Settings {
            query_prefix,
            document_prefix,
            max_tokens,
            pooling,
            reads_cjk,
        } = settings;
        let tokenizer = load_tokenizer(folder, &tokenizer_bytes, max_tokens)?;
        let unknown = ["[UNK]", "<unk>"]
            .into_iter()
            .find_map(|t| tokenizer.token_to_id(t));
        let mut hasher = Sha256::new();
        hasher.update(b"tool-search sentence encoder 1\0");
        for part in [&config_bytes, &tokenizer_bytes, &weights] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        hasher.update(format!(
            "{pooling:?}\0{max_tokens}\0{query_prefix}\0{document_prefix}\0"
        ));
        let key = ModelKey(hasher.finalize().into());
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| bad_weights(folder, e))?;
        let network = Network::load(&config, vb).map_err(|e| bad_weights(folder, e))?;
        Ok(Self {
            folder: folder.to_owned(),
            network,
            tokenizer,
            pooling,
            query_prefix,
            document_prefix,
            max_tokens,
            reads_cjk,
            unknown,
            dimension: config.hidden_size,
            layers: config.num_hidden_layers,
            key,
        })
    }

    /// The model folder.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// One line about the model, for a status report.
    pub fn describe(&self) -> String {
        format!(
            "{} ({} layers, {} dimensions, {} pooling, up to {} tokens{})",
            self.folder.display(),
            self.layers,
            self.dimension,
            match self.pooling {
                Pooling::Mean => "mean",
                Pooling::Cls => "[CLS]",
            },
            self.max_tokens,
            if self.reads_cjk {
                ", reads CJK"
            } else {
                ", CJK queries searched lexically"
            }
        )
    }

    /// Unit vectors of `texts` (each with `prefix`), row after row.
    fn encode(&self, texts: &[&str], prefix: &str) -> Result<Vec<f32>, EmbeddingError> {
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| EmbeddingError::Encode(e.to_string()))?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![0.0f32; texts.len() * self.dimension];
        for batch in order.chunks(BATCH) {
            let longest = batch
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0)
                .max(1);
            let mut ids = vec![0u32; batch.len() * longest];
            let mut mask = vec![0u32; batch.len() * longest];
            for (row, &i) in batch.iter().enumerate() {
                let text_ids = encodings[i].get_ids();
                ids[row * longest..row * longest + text_ids.len()].copy_from_slice(text_ids);
                mask[row * longest..row * longest + text_ids.len()].fill(1);
            }
            let ids = Tensor::from_vec(ids, (batch.len(), longest), &Device::Cpu)?;
            let mask = Tensor::from_vec(mask, (batch.len(), longest), &Device::Cpu)?;
            let states = self.network.forward(&ids, &mask)?;
            let vectors = pool(&states, &mask, self.pooling)?.to_vec2::<f32>()?;
            for (&i, vector) in batch.iter().zip(vectors) {
                out[i * self.dimension..(i + 1) * self.dimension].copy_from_slice(&vector);
            }
        }
        Ok(out)
    }
}

/// What the folder says (or the options override) besides the network and its weights.
struct Settings {
    query_prefix: String,
    document_prefix: String,
    max_tokens: usize,
    pooling: Pooling,
    reads_cjk: bool,
}

impl Settings {
    fn read(folder: &Path, options: EncoderOptions, config: &NetworkConfig) -> Self {
        let st: Option<SentenceTransformersConfig> =
            optional_json(folder, "config_sentence_transformers.json");
        let prompt = |names: &[&str]| {
            st.as_ref()
                .and_then(|c| names.iter().find_map(|n| c.prompts.get(*n).cloned()))
        };
        let query_prefix = options
            .query_prefix
            .or_else(|| prompt(&["query"]))
            .unwrap_or_default();
        let document_prefix = options
            .document_prefix
            .or_else(|| prompt(&["document", "passage"]))
            .unwrap_or_default();
        let max_tokens = options
            .max_tokens
            .or_else(|| {
                optional_json::<SentenceBertConfig>(folder, "sentence_bert_config.json")
                    .and_then(|c| c.max_seq_length)
            })
            .unwrap_or(usize::MAX)
            .clamp(2, config.max_tokens().max(2));
        let pooling = options.pooling.unwrap_or_else(|| {
            match optional_json::<PoolingConfig>(folder, "1_Pooling/config.json") {
                Some(p) if p.pooling_mode_cls_token => Pooling::Cls,
                _ => Pooling::Mean,
            }
        });
        let reads_cjk = options
            .reads_cjk
            .unwrap_or_else(|| script::card_reads_cjk(folder));
        Self {
            query_prefix,
            document_prefix,
            max_tokens,
            pooling,
            reads_cjk,
        }
    }
}

fn bad_weights(folder: &Path, error: candle_core::Error) -> EmbeddingError {
    EmbeddingError::BadFile {
        path: folder.join("model.safetensors"),
        reason: error.to_string(),
    }
}

/// The folder's tokenizer, truncating at `max_tokens` and padding nothing (the encoder pads
/// each batch to its longest text).
fn load_tokenizer(
    folder: &Path,
    bytes: &[u8],
    max_tokens: usize,
) -> Result<Tokenizer, EmbeddingError> {
    let bad = |reason: String| EmbeddingError::BadFile {
        path: folder.join("tokenizer.json"),
        reason,
    };
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| bad(e.to_string()))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| bad(e.to_string()))?;
    Ok(tokenizer)
}

impl Embedder for SentenceEncoder {
    fn model_key(&self) -> ModelKey {
        self.key
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<f32>, EmbeddingError> {
        self.encode(texts, &self.document_prefix)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbeddingError> {
        self.encode(&[query], &self.query_prefix)
    }

    fn reads(&self, query: &str) -> bool {
        if !self.reads_cjk && script::mostly_cjk(query) {
            return false;
        }
        let Some(unknown) = self.unknown else {
            return true;
        };
        let Ok(encoding) = self.tokenizer.encode(query, false) else {
            return false;
        };
        let ids = encoding.get_ids();
        let unknowns = ids.iter().filter(|&&id| id == unknown).count();
        // Mostly unknown tokens: the model would embed its own placeholder, not the query.
        !ids.is_empty() && unknowns * 2 <= ids.len()
    }
}
