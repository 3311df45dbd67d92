//! The inverted index: postings per term ([`postings`]), built and updated in place
//! ([`update`]), queries turned into terms ([`query_terms`]) and ranked term at a time
//! ([`ranking`], into [`running`] scores, with max-score [`pruning`]) under a [`scorer`], and
//! [`explain`], which assembles an [`explanation`].
//!
//! The modules form no cycle: a child may use this module (the index and its results), this
//! module uses only children that use nothing of it (`postings`, `scorer`), and what two
//! children share lives in a third (`running` for `ranking` and `pruning`, `explanation` for
//! `scorer` and `explain`).

mod explain;
mod explanation;
mod postings;
mod pruning;
mod query_terms;
mod ranking;
mod running;
mod scorer;
mod update;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rustc_hash::FxHashMap;

use crate::document::{FieldWeights, ToolDocument};
use crate::error::SearchError;
use crate::lexicon::Lexicon;
use crate::query::{Query, QueryKind};
use crate::tokenizer::Tokenizer;
use postings::{DocEntry, TermEntry};
use scorer::CorpusStats;

pub use explanation::{Explanation, TermExplanation};
pub use scorer::{Bm25Plus, Scorer};

/// The engine's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SearchConfig {
    /// The scorer.
    pub scorer: Scorer,
    /// Field weights.
    pub weights: FieldWeights,
}

/// One ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool's name.
    pub name: String,
    /// Its score (higher is better; comparable within one query only).
    pub score: f32,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// The query's form.
    pub kind: QueryKind,
    /// The tools, best first (ties broken by name).
    pub hits: Vec<Hit>,
    /// For `select:`, the names that matched no tool.
    pub missing: Vec<String>,
}

/// An inverted index of tool documents, updated in place.
///
/// Adding or removing a tool touches only that tool's postings; a query touches only the
/// postings of its terms.
pub struct SearchIndex {
    config: SearchConfig,
    lexicon: Lexicon,
    /// By term id.
    terms: Vec<TermEntry>,
    docs: Vec<Option<DocEntry>>,
    /// `lnc` norm per document id, for TF-IDF (1 under BM25+, which does not read it).
    norms: Vec<f32>,
    by_name: FxHashMap<String, u32>,
    by_key: FxHashMap<String, u32>,
    /// The most characters a key of `by_key` has (never lowered on removal: a bound).
    longest_key: usize,
    /// Whether a key of `by_key` has a space (never reset on removal: a bound).
    spaced_keys: bool,
    by_server: BTreeMap<String, BTreeSet<u32>>,
    live: u32,
    total_length: f64,
    dead_postings: usize,
    live_postings: usize,
}

impl fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchIndex")
            .field("config", &self.config)
            .field("tools", &self.live)
            .field("terms", &self.terms.len())
            .finish()
    }
}

impl Default for SearchIndex {
    fn default() -> Self {
        Self::new(SearchConfig::default())
    }
}

impl SearchIndex {
    /// An empty index.
    pub fn new(config: SearchConfig) -> Self {
        Self {
            config,
            lexicon: Lexicon::new(Tokenizer::new()),
            terms: Vec::new(),
            docs: Vec::new(),
            norms: Vec::new(),
            by_name: FxHashMap::default(),
            by_key: FxHashMap::default(),
            longest_key: 0,
            spaced_keys: false,
            by_server: BTreeMap::new(),
            live: 0,
            total_length: 0.0,
            dead_postings: 0,
            live_postings: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether a tool of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The indexed document of a tool.
    pub fn get(&self, name: &str) -> Option<&ToolDocument> {
        let id = *self.by_name.get(name)?;
        self.entry(id).map(|e| &e.doc)
    }

    /// The names of every indexed tool, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.by_name.keys().cloned().collect();
        names.sort();
        names
    }

    fn entry(&self, id: u32) -> Option<&DocEntry> {
        self.docs.get(id as usize).and_then(Option::as_ref)
    }

    fn name_of(&self, id: u32) -> &str {
        self.entry(id).map_or("", |e| e.doc.name.as_str())
    }

    /// What the scorers read of the whole index.
    fn stats(&self) -> CorpusStats<'_> {
        let avg_length = if self.live == 0 {
            1.0
        } else {
            (self.total_length / f64::from(self.live)) as f32
        };
        CorpusStats {
            docs: self.live,
            avg_length,
            norms: &self.norms,
        }
    }

    /// Runs a query (see [`Query`] for the syntax) and returns up to `limit` tools.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, SearchError> {
        let parsed = Query::parse(query)?;
        Ok(self.run(&parsed, limit))
    }

    /// Runs a parsed query.
    pub fn run(&self, query: &Query, limit: usize) -> SearchResults {
        let kind = query.kind();
        let (hits, missing) = match query {
            Query::Select(names) => self.select(names),
            Query::Server(server) => (self.server_tools(server, limit), Vec::new()),
            Query::Keywords { text, required } | Query::Discover { text, required } => {
                (self.rank(text, required, limit), Vec::new())
            }
        };
        SearchResults {
            kind,
            hits,
            missing,
        }
    }

    /// The tools named (by name or alias, case-insensitive) in `names`, in their order, and the
    /// names that matched none.
    fn select(&self, names: &[String]) -> (Vec<Hit>, Vec<String>) {
        let mut hits = Vec::new();
        let mut missing = Vec::new();
        for wanted in names {
            match self
                .by_key
                .get(&wanted.to_lowercase())
                .and_then(|id| self.entry(*id))
            {
                Some(entry) => {
                    if !hits.iter().any(|h: &Hit| h.name == entry.doc.name) {
                        hits.push(Hit {
                            name: entry.doc.name.clone(),
                            score: 1.0,
                        });
                    }
                }
                None => missing.push(wanted.clone()),
            }
        }
        (hits, missing)
    }

    /// Up to `limit` tools of an MCP server, by name.
    fn server_tools(&self, server: &str, limit: usize) -> Vec<Hit> {
        let mut hits: Vec<Hit> = self
            .by_server
            .get(&server.to_lowercase())
            .into_iter()
            .flatten()
            .filter_map(|id| self.entry(*id))
            .map(|e| Hit {
                name: e.doc.name.clone(),
                score: 1.0,
            })
            .collect();
        hits.sort_by(|a, b| a.name.cmp(&b.name));
        hits.truncate(limit);
        hits
    }

    /// The indexed names closest to `name` (an unknown tool a model asked for), best first:
    /// similar spelling (Damerau-Levenshtein, case-insensitive) or shared words (`read_file` for
    /// `file_read`). Names too far from it are left out, so the answer may be empty.
    pub fn suggest(&self, name: &str, limit: usize) -> Vec<String> {
        let wanted = name.to_lowercase();
        let words = |text: &str| -> BTreeSet<String> {
            self.lexicon
                .tokenizer
                .tokenize(text)
                .into_iter()
                .map(|t| t.text)
                .collect()
        };
        let wanted_words = words(name);
        let mut scored: Vec<(f64, &str)> = self
            .by_name
            .keys()
            .filter_map(|candidate| {
                let lower = candidate.to_lowercase();
                let spelling = strsim::normalized_damerau_levenshtein(&wanted, &lower);
                let theirs = words(candidate);
                let shared = wanted_words.intersection(&theirs).count();
                let overlap = shared as f64 / wanted_words.len().max(1) as f64;
                let contains = !wanted.is_empty()
                    && (lower.contains(wanted.as_str()) || wanted.contains(lower.as_str()));
                let score = spelling.max(overlap) + if contains { 0.25 } else { 0.0 };
                (score >= 0.5).then_some((score, candidate.as_str()))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, n)| n.to_owned())
            .collect()
    }
}
