//! The BERT encoder network (BERT, MiniLM, bge, e5 and XLM-RoBERTa checkpoints share it): token,
//! position and type embeddings, then post-norm transformer layers, on candle's CPU tensors.
//!
//! Written here rather than taken from `candle-transformers`, which builds every model it has
//! (minutes on two cores) for the hundred lines this one needs.

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};
use serde::Deserialize;

/// What the network reads of `config.json`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct NetworkConfig {
    pub(crate) model_type: Option<String>,
    pub(crate) vocab_size: usize,
    pub(crate) hidden_size: usize,
    pub(crate) num_hidden_layers: usize,
    pub(crate) num_attention_heads: usize,
    pub(crate) intermediate_size: usize,
    #[serde(default = "default_act")]
    pub(crate) hidden_act: String,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub(crate) type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub(crate) layer_norm_eps: f64,
    #[serde(default)]
    pub(crate) pad_token_id: u32,
    #[serde(default)]
    pub(crate) position_embedding_type: Option<String>,
}

fn default_act() -> String {
    "gelu".to_owned()
}

fn default_type_vocab() -> usize {
    2
}

fn default_eps() -> f64 {
    1e-12
}

impl NetworkConfig {
    /// Why this encoder cannot run the configuration, if it cannot.
    pub(crate) fn unsupported(&self) -> Option<String> {
        let kind = self.model_type.as_deref().unwrap_or("bert");
        if !matches!(kind, "bert" | "roberta" | "xlm-roberta") {
            return Some(format!(
                "model_type `{kind}` (this encoder runs bert, roberta and xlm-roberta)"
            ));
        }
        if !matches!(
            self.hidden_act.as_str(),
            "gelu" | "gelu_new" | "gelu_pytorch_tanh"
        ) {
            return Some(format!("hidden_act `{}`", self.hidden_act));
        }
        if let Some(kind) = &self.position_embedding_type
            && kind != "absolute"
        {
            return Some(format!("position_embedding_type `{kind}`"));
        }
        if self.num_attention_heads == 0
            || !self.hidden_size.is_multiple_of(self.num_attention_heads)
        {
            return Some(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        None
    }

    /// RoBERTa numbers positions from the padding id plus one.
    pub(crate) fn first_position(&self) -> u32 {
        match self.model_type.as_deref() {
            Some("roberta" | "xlm-roberta") => self.pad_token_id + 1,
            _ => 0,
        }
    }

    /// The most tokens a text may have, counting the special ones.
    pub(crate) fn max_tokens(&self) -> usize {
        self.max_position_embeddings
            .saturating_sub(self.first_position() as usize)
    }
}

/// A linear layer whose weight is kept transposed, `[in, out]` and contiguous, so that the
/// matrix product reads it in place.
///
/// candle's `Linear` keeps the checkpoint's `[out, in]` weight and multiplies by its transpose,
/// a strided view that gemm copies into its own layout on every call: for a query of a few
/// tokens that copy of the whole weight cost more than the product itself.
struct Dense {
    /// `[in, out]`.
    weight: Tensor,
    /// `[out]`.
    bias: Tensor,
}

impl Dense {
    /// The layer `inputs → outputs` from the checkpoint's `weight` (`[out, in]`) and `bias`.
    fn load(inputs: usize, outputs: usize, vb: VarBuilder<'_>) -> candle_core::Result<Self> {
        let weight = vb.get((outputs, inputs), "weight")?.t()?.contiguous()?;
        let bias = vb.get(outputs, "bias")?;
        Ok(Self { weight, bias })
    }

    /// `x · W + b` over the last dimension of `x`.
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut dims = x.dims().to_vec();
        let inputs = dims.pop().unwrap_or(1);
        let rows = dims.iter().product::<usize>();
        let y = x
            .reshape((rows, inputs))?
            .matmul(&self.weight)?
            .broadcast_add(&self.bias)?;
        dims.push(self.weight.dim(1)?);
        y.reshape(dims)
    }
}

struct Layer {
    query: Dense,
    key: Dense,
    value: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
}

/// The encoder with its weights.
pub(crate) struct Network {
    words: Embedding,
    positions: Embedding,
    types: Option<Embedding>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    first_position: u32,
    exact_gelu: bool,
    device: Device,
}

/// The prefix the weights' names start with: none, or the model's name as a submodule.
fn root(vb: &VarBuilder<'_>) -> Option<String> {
    ["", "bert.", "roberta.", "model."]
        .into_iter()
        .find(|p| vb.contains_tensor(&format!("{p}embeddings.word_embeddings.weight")))
        .map(|p| p.trim_end_matches('.').to_owned())
}

impl Network {
    /// Builds the network from `config` and the weights in `vb` (safetensors).
    pub(crate) fn load(config: &NetworkConfig, vb: VarBuilder<'_>) -> candle_core::Result<Self> {
        let Some(prefix) = root(&vb) else {
            return Err(candle_core::Error::Msg(
                "no tensor named embeddings.word_embeddings.weight (with or without a bert., roberta. or model. prefix)".to_owned(),
            ));
        };
        let vb = if prefix.is_empty() { vb } else { vb.pp(prefix) };
        let h = config.hidden_size;
        let eps = config.layer_norm_eps;
        let e = vb.pp("embeddings");
        let types =
            if config.type_vocab_size > 0 && e.contains_tensor("token_type_embeddings.weight") {
                Some(candle_nn::embedding(
                    config.type_vocab_size,
                    h,
                    e.pp("token_type_embeddings"),
                )?)
            } else {
                None
            };
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let l = vb.pp(format!("encoder.layer.{i}"));
                let a = l.pp("attention");
                Ok(Layer {
                    query: Dense::load(h, h, a.pp("self.query"))?,
                    key: Dense::load(h, h, a.pp("self.key"))?,
                    value: Dense::load(h, h, a.pp("self.value"))?,
                    attention_out: Dense::load(h, h, a.pp("output.dense"))?,
                    attention_norm: candle_nn::layer_norm(h, eps, a.pp("output.LayerNorm"))?,
                    intermediate: Dense::load(
                        h,
                        config.intermediate_size,
                        l.pp("intermediate.dense"),
                    )?,
                    output: Dense::load(config.intermediate_size, h, l.pp("output.dense"))?,
                    output_norm: candle_nn::layer_norm(h, eps, l.pp("output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Self {
            words: candle_nn::embedding(config.vocab_size, h, e.pp("word_embeddings"))?,
            positions: candle_nn::embedding(
                config.max_position_embeddings,
                h,
                e.pp("position_embeddings"),
            )?,
            types,
            embedding_norm: candle_nn::layer_norm(h, eps, e.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
            first_position: config.first_position(),
            exact_gelu: config.hidden_act == "gelu",
            device: vb.device().clone(),
        })
    }

    /// The last hidden states, `[batch, tokens, hidden]`, of `ids` (`[batch, tokens]`, padded
    /// on the right) where `mask` (`[batch, tokens]`, 1 for a token and 0 for padding) allows.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let positions = Tensor::arange(
            self.first_position,
            self.first_position + tokens as u32,
            &self.device,
        )?
        .unsqueeze(0)?;
        let mut x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?;
        if let Some(types) = &self.types {
            let zeros = Tensor::zeros((1, tokens), DType::U32, &self.device)?;
            x = x.broadcast_add(&types.forward(&zeros)?)?;
        }
        let mut x = self.embedding_norm.forward(&x)?;
        // Padding gets a large negative score before the softmax, so no token attends to it.
        let bias = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e9)?.reshape((batch, 1, 1, tokens))?;
        for layer in &self.layers {
            x = self.layer(layer, &x, &bias)?;
        }
        Ok(x)
    }

    fn layer(&self, layer: &Layer, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens, hidden) = x.dims3()?;
        let head = hidden / self.heads;
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((batch, tokens, self.heads, head))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(layer.query.forward(x)?)?;
        let k = split(layer.key.forward(x)?)?;
        let v = split(layer.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?)? / (head as f64).sqrt())?.broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch, tokens, hidden))?;
        let x = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + x)?)?;
        let inner = layer.intermediate.forward(&x)?;
        let inner = if self.exact_gelu {
            inner.gelu_erf()?
        } else {
            inner.gelu()?
        };
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + x)?)
    }
}

/// How token states become one vector per text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the tokens' states (padding left out), as sentence-transformers' MiniLM,
    /// mpnet and e5 models do.
    Mean,
    /// The first token's (`[CLS]`) state, as the bge models do.
    Cls,
}

/// Pools `states` (`[batch, tokens, hidden]`) under `mask` and scales each row to unit length.
pub(crate) fn pool(
    states: &Tensor,
    mask: &Tensor,
    pooling: Pooling,
) -> candle_core::Result<Tensor> {
    let pooled = match pooling {
        Pooling::Cls => states.narrow(1, 0, 1)?.squeeze(1)?,
        Pooling::Mean => {
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = states.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            summed.broadcast_div(&counts)?
        }
    };
    let norms = pooled
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12, f64::MAX)?;
    pooled.broadcast_div(&norms)
}
