//! [`HybridIndex`]: the lexical index and the dense one over the same tools, searched together.

use std::fmt;

use super::fusion::{Fused, Fusion};
use super::{DenseIndex, EmbeddingError};
use crate::document::ToolDocument;
use crate::error::SearchError;
use crate::index::{Explanation, Hit, SearchConfig, SearchIndex, SearchResults};
use crate::query::Query;

/// Which sides ranked a query, and why only one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// Both, fused.
    Both,
    /// The lexical side alone: `select:`, `mcp__server`, a query with `+required` words
    /// (whose filter the dense side cannot honour), or no tool with a vector.
    LexicalSyntax,
    /// The lexical side alone: the model cannot read the query (such as Chinese with an
    /// English-only model).
    LexicalUnreadable,
    /// The lexical side alone: embedding the query failed.
    LexicalAfterError(String),
}

impl Side {
    fn describe(&self) -> String {
        match self {
            Side::Both => "lexical and dense, fused".to_owned(),
            Side::LexicalSyntax => "lexical only (query syntax)".to_owned(),
            Side::LexicalUnreadable => "lexical only (the model cannot read this query)".to_owned(),
            Side::LexicalAfterError(e) => format!("lexical only (embedding failed: {e})"),
        }
    }
}

/// How a tool's hybrid score came about: its place and score on each side.
#[derive(Debug, Clone, PartialEq)]
pub struct HybridExplanation {
    /// The tool.
    pub name: String,
    /// The fused score (the lexical score when only that side ranked the query).
    pub score: f32,
    /// Which sides ranked the query.
    pub side: Side,
    /// The dense side's share for this query (0 when only the lexical side ranked it).
    pub dense_weight: f32,
    /// The rank constant of the fusion.
    pub k: f32,
    /// Its lexical rank (1-based), if the lexical side matched it.
    pub lexical_rank: Option<usize>,
    /// The lexical side's explanation.
    pub lexical: Option<Explanation>,
    /// Its dense rank (1-based).
    pub dense_rank: Option<usize>,
    /// The cosine of its vector and the query's.
    pub similarity: Option<f32>,
}

impl fmt::Display for HybridExplanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} = {:.5} ({})",
            self.name,
            self.score,
            self.side.describe()
        )?;
        let rank = |r: Option<usize>| r.map_or("unranked".to_owned(), |r| format!("rank {r}"));
        if self.side == Side::Both {
            let w = self.dense_weight;
            writeln!(
                f,
                "  fusion: {:.2}/({} + lexical rank) + {:.2}/({} + dense rank)",
                1.0 - w,
                self.k,
                w,
                self.k
            )?;
            match self.similarity {
                Some(s) => writeln!(f, "  dense: {}, cosine {s:.4}", rank(self.dense_rank))?,
                None => writeln!(f, "  dense: no vector")?,
            }
        }
        writeln!(f, "  lexical: {}", rank(self.lexical_rank))?;
        if let Some(lexical) = &self.lexical {
            for line in lexical.to_string().lines() {
                writeln!(f, "    {line}")?;
            }
        }
        Ok(())
    }
}

/// A [`SearchIndex`] and a [`DenseIndex`] over the same tools, updated together in place, whose
/// keyword searches fuse both rankings ([`Fusion`]).
///
/// `select:` and `mcp__server` queries, and queries with `+required` words, are the lexical
/// index's alone, as are queries the model cannot read ([`Embedder::reads`](super::Embedder::reads)).
#[derive(Debug)]
pub struct HybridIndex {
    lexical: SearchIndex,
    dense: DenseIndex,
    fusion: Fusion,
}

impl HybridIndex {
    /// An index of `docs` on both sides (the embeddings the cache lacks are computed now).
    pub fn from_documents(
        config: SearchConfig,
        docs: Vec<ToolDocument>,
        mut dense: DenseIndex,
    ) -> Result<Self, EmbeddingError> {
        dense.add_all(&docs)?;
        Ok(Self {
            lexical: SearchIndex::from_documents(config, docs),
            dense,
            fusion: Fusion::default(),
        })
    }

    /// The hybrid of an existing lexical index and `dense`, which gets a vector for each of
    /// its tools that lacks one.
    pub fn new(lexical: SearchIndex, mut dense: DenseIndex) -> Result<Self, EmbeddingError> {
        let docs: Vec<ToolDocument> = lexical
            .names()
            .iter()
            .filter_map(|n| lexical.get(n).cloned())
            .collect();
        dense.add_all(&docs)?;
        Ok(Self {
            lexical,
            dense,
            fusion: Fusion::default(),
        })
    }

    /// The same index with another fusion.
    #[must_use]
    pub fn with_fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = fusion;
        self
    }

    /// The fusion.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// The lexical side (for `get`, `suggest`, `names` and the rest of its API).
    pub fn lexical(&self) -> &SearchIndex {
        &self.lexical
    }

    /// The dense side.
    pub fn dense(&self) -> &DenseIndex {
        &self.dense
    }

    /// Both sides, given back.
    pub fn into_parts(self) -> (SearchIndex, DenseIndex) {
        (self.lexical, self.dense)
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.lexical.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.lexical.is_empty()
    }

    /// Adds (or replaces) a tool. The lexical side always takes it; on an error the dense side
    /// has no vector for it (and none for the tool it replaced) and ranks it nowhere.
    pub fn add(&mut self, doc: ToolDocument) -> Result<(), EmbeddingError> {
        self.add_all(vec![doc])
    }

    /// Adds (or replaces) tools, embedding the new texts in one batch (a server connecting).
    /// The lexical side always takes them; on an error the dense side has none of them.
    pub fn add_all(&mut self, docs: Vec<ToolDocument>) -> Result<(), EmbeddingError> {
        let embedded = self.dense.add_all(&docs);
        if embedded.is_err() {
            for doc in &docs {
                self.dense.remove(&doc.name);
            }
        }
        for doc in docs {
            self.lexical.add(doc);
        }
        embedded
    }

    /// Removes a tool from both sides; whether it was indexed.
    pub fn remove(&mut self, name: &str) -> bool {
        self.dense.remove(name);
        self.lexical.remove(name)
    }

    /// Runs a query (see [`Query`] for the syntax) and returns up to `limit` tools.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, SearchError> {
        let parsed = Query::parse(query)?;
        Ok(self.run(&parsed, limit))
    }

    /// Runs a parsed query.
    pub fn run(&self, query: &Query, limit: usize) -> SearchResults {
        let (_, vector, text) = self.plan(query);
        let Some(vector) = vector else {
            return self.lexical.run(query, limit);
        };
        let (lexical, _, fused) = self.fused(query, text, &vector);
        let hits = fused
            .into_iter()
            .take(limit)
            .map(|f| Hit {
                name: f.name.to_owned(),
                score: f.score,
            })
            .collect();
        SearchResults {
            kind: lexical.kind,
            hits,
            missing: lexical.missing,
        }
    }

    /// Which sides rank `query`, with the query's vector when the dense side does.
    fn plan<'q>(&self, query: &'q Query) -> (Side, Option<Vec<f32>>, &'q str) {
        let text = match query {
            Query::Keywords { text, required } | Query::Discover { text, required }
                if required.is_empty() && !self.dense.is_empty() =>
            {
                text
            }
            _ => return (Side::LexicalSyntax, None, ""),
        };
        match self.dense.query_vector(text) {
            Ok(Some(vector)) => (Side::Both, Some(vector), text),
            Ok(None) => (Side::LexicalUnreadable, None, text),
            Err(e) => (Side::LexicalAfterError(e.to_string()), None, text),
        }
    }

    /// The whole lexical ranking, the dense share, and the fusion of the lexical ranking with
    /// the whole dense one.
    fn fused(
        &self,
        query: &Query,
        text: &str,
        vector: &[f32],
    ) -> (SearchResults, f32, Vec<Fused<'_>>) {
        let lexical = self.lexical.run(query, self.lexical.len());
        let w = self
            .fusion
            .weight(text, lexical.hits.first().map(|h| h.score));
        let dense = self.dense.rank(vector);
        let lexical_names: Vec<&str> = lexical
            .hits
            .iter()
            .filter_map(|h| self.lexical.get(&h.name).map(|d| d.name.as_str()))
            .collect();
        let dense_names: Vec<&str> = dense.iter().map(|(n, _)| *n).collect();
        let fused = self.fusion.fuse(w, &lexical_names, &dense_names);
        (lexical, w, fused)
    }

    /// How `name`'s place for a query came about, on each side; `None` when the tool is not
    /// indexed.
    pub fn explain(
        &self,
        query: &str,
        name: &str,
    ) -> Result<Option<HybridExplanation>, SearchError> {
        let Some(lexical) = self.lexical.explain(query, name)? else {
            return Ok(None);
        };
        let parsed = Query::parse(query)?;
        let (side, vector, text) = self.plan(&parsed);
        let lexical_rank = |hits: &[Hit]| hits.iter().position(|h| h.name == name).map(|i| i + 1);
        let Some(vector) = vector else {
            let ranked = self.lexical.run(&parsed, self.lexical.len());
            return Ok(Some(HybridExplanation {
                name: name.to_owned(),
                score: lexical.score,
                side,
                dense_weight: 0.0,
                k: self.fusion.k,
                lexical_rank: lexical_rank(&ranked.hits),
                lexical: (lexical.score > 0.0).then_some(lexical),
                dense_rank: None,
                similarity: None,
            }));
        };
        let (ranked, w, fused) = self.fused(&parsed, text, &vector);
        let mine = fused.iter().find(|f| f.name == name);
        Ok(Some(HybridExplanation {
            name: name.to_owned(),
            score: mine.map_or(0.0, |f| f.score),
            side,
            dense_weight: w,
            k: self.fusion.k,
            lexical_rank: lexical_rank(&ranked.hits),
            lexical: (lexical.score > 0.0).then_some(lexical),
            dense_rank: mine.and_then(|f| f.dense_rank),
            similarity: self.dense.similarity(name, &vector),
        }))
    }
}
