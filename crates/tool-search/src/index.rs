//! The inverted index, the scorers and `explain`.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::fmt;

use crate::batch;
use crate::document::{Field, FieldWeights, ToolDocument};
use crate::error::SearchError;
use crate::lexicon::{
    Analysed, FIELDS, FieldCounts, Lexicon, Memos, NO_TERM, PartTerms, WordTerms, group, lowercase,
};
use crate::query::{Query, QueryKind};
use crate::tokenizer::{Segment, Tokenizer, for_each_cjk_bigram, lowercase_into};
use rustc_hash::FxHashMap;
use smol_str::SmolStr;

/// BM25+ parameters (Lv and Zhai, "Lower-bounding term frequency normalization", CIKM 2011).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Plus {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
    /// The lower bound every matching term contributes.
    pub delta: f32,
}

impl Default for Bm25Plus {
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.75,
            delta: 1.0,
        }
    }
}

/// How documents are scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scorer {
    /// BM25+ over the weighted fields (BM25F-style: field frequencies are weighted and summed
    /// before saturation).
    Bm25Plus(Bm25Plus),
    /// TF-IDF cosine, SMART `lnc.ltc`: documents log-tf and cosine-normalised, queries log-tf ×
    /// idf. The document side needs no idf, so adding a tool never rescales the others.
    TfIdf,
}

impl Default for Scorer {
    fn default() -> Self {
        Self::Bm25Plus(Bm25Plus::default())
    }
}

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

/// How one query term contributed to a score.
#[derive(Debug, Clone, PartialEq)]
pub struct TermExplanation {
    /// The term (normalised).
    pub term: String,
    /// Its inverse document frequency.
    pub idf: f32,
    /// What it added to the score.
    pub score: f32,
    /// The share of each field it occurs in: field, term frequency there, weight, share of `score`.
    pub fields: Vec<(Field, u32, f32, f32)>,
}

/// How a result's score came about.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The tool.
    pub name: String,
    /// The total score.
    pub score: f32,
    /// Bonus for the query being the tool's exact name.
    pub exact_name_bonus: f32,
    /// Each matching query term.
    pub terms: Vec<TermExplanation>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} = {:.3}", self.name, self.score)?;
        if self.exact_name_bonus > 0.0 {
            writeln!(f, "  exact name: +{:.3}", self.exact_name_bonus)?;
        }
        for term in &self.terms {
            write!(
                f,
                "  {:<16} +{:.3} (idf {:.3}):",
                term.term, term.score, term.idf
            )?;
            for (field, tf, weight, share) in &term.fields {
                write!(f, " {}×{tf}·w{weight} → {share:.3};", field.as_str())?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// Everything scoring reads for one document containing a term, in 12 bytes: a query streams
/// through the postings without looking anything else up per document.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// Σ field weight × frequency in that field.
    weighted_tf: f32,
    /// The document's weighted length; negative once the document is removed.
    length: f32,
}

#[derive(Debug)]
struct TermEntry {
    /// Postings in ascending document order (ids only grow); may hold dead documents until the
    /// next sweep. Per-field frequencies are not kept: `explain` recounts them from the stored
    /// document, which keeps postings at 8 bytes.
    postings: Vec<Posting>,
    /// Live documents containing the term.
    df: u32,
    /// The largest weighted frequency and the shortest weighted document length among its
    /// postings (kept through removals: still bounds, only looser), for max-score pruning.
    max_tf: f32,
    min_length: f32,
    cjk: bool,
}

#[derive(Debug)]
struct DocEntry {
    doc: ToolDocument,
    /// Weighted length: Σ field weight × field length.
    length: f32,
    /// `lnc` norm for TF-IDF (1 under BM25+, which does not read it).
    norm: f32,
    terms: Vec<u32>,
}

/// A document's running score and how many of the query's terms it matched, counted in three
/// fields of [`Acc::matched`]: required terms, CJK bigrams and other terms (see
/// [`Matched`]). Every term adds to the CJK or the other field, so a document is running
/// exactly when `matched` is not zero.
#[derive(Default, Clone, Copy)]
struct Acc {
    score: f32,
    matched: u32,
}

/// The fields of [`Acc::matched`]: a term adds one to each it belongs to. Each term of a query
/// reaches a document once, so a field never counts past the terms the query gives it, and a
/// query's terms beyond a field's room are left out (a thousand or more distinct terms).
struct Matched;

impl Matched {
    /// Required terms: bits 0 to 10.
    const REQUIRED: u32 = 1;
    const REQUIRED_ROOM: u32 = (1 << 11) - 1;
    /// CJK bigrams: bits 11 to 21.
    const CJK: u32 = 1 << 11;
    const CJK_ROOM: u32 = (1 << 11) - 1;
    /// Other terms: bits 22 to 31.
    const OTHER: u32 = 1 << 22;
    const OTHER_ROOM: u32 = (1 << 10) - 1;

    fn required(matched: u32) -> u32 {
        matched & Self::REQUIRED_ROOM
    }

    fn cjk(matched: u32) -> u32 {
        (matched / Self::CJK) & Self::CJK_ROOM
    }

    fn other(matched: u32) -> u32 {
        matched / Self::OTHER
    }
}

/// What [`SearchIndex::query_terms`] fills, and its buffers.
#[derive(Default)]
struct QueryWords {
    /// The query's distinct known terms in query order, with whether each is required.
    terms: Vec<(u32, bool)>,
    /// The terms of the required words.
    required: Vec<u32>,
    /// Each distinct CJK bigram by its characters (a lone character has no second).
    cjk_seen: Vec<(Option<char>, Option<char>)>,
    lower: String,
    joined: String,
}

/// Buffers a query reuses, per thread.
#[derive(Default)]
struct Scratch {
    words: QueryWords,
    /// Running score per document id.
    accs: Vec<Acc>,
    /// The documents with a running score.
    touched: Vec<u32>,
    /// What each query term adds to [`Acc::matched`], in query order.
    adds: Vec<u32>,
    /// For [`kth_best`].
    best: BinaryHeap<Reverse<TotalF32>>,
    /// The query's terms in max-score order: (query position, term, idf, bound).
    order: Vec<(usize, u32, f32, f32)>,
    /// What the terms from each position of `order` on can add at most, together, and how many
    /// postings they have.
    remaining: Vec<(f32, usize)>,
    /// Results so far: (score, document id).
    hits: Vec<(f32, u32)>,
    /// One bit per document id, to put many running documents in order without sorting.
    bits: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
    /// Query word parts that no indexed document contains and the stem table lacks (names,
    /// jargon: `hulu`, `arxiv`), with the stem each became (stop words are all in the table):
    /// stemming
    /// them again would be most of a query's time on small indexes. Every index uses the same
    /// tokenizer, so the cache is shared; it is cleared when full.
    static QUERY_PARTS: RefCell<FxHashMap<SmolStr, SmolStr>> =
        RefCell::new(FxHashMap::default());
}

/// Entries [`QUERY_PARTS`] holds before it is cleared.
const QUERY_PARTS_CAPACITY: usize = 4096;

/// The fewest postings the terms still to come must have for a max-score check to be worth
/// its pass over the running documents (and its unpredictable branches): below this, streaming
/// them costs less than any check could save (measured at 500 and 4k tools).
const MIN_POSTINGS_TO_PRUNE: usize = 1024;

/// [`SearchIndex::from_documents`] takes another thread for each this many tools...
const MIN_DOCS_PER_THREAD: usize = 256;
/// ... up to this many threads (and no more than the machine has).
const MAX_BUILD_THREADS: usize = 8;

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
    /// `lnc` norm per document id, for TF-IDF.
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

    /// An index of `docs`, as if each were [added](SearchIndex::add) in order (a later tool
    /// replaces an earlier one of the same name).
    ///
    /// Large batches are cut into terms on several threads, each with its own vocabulary; the
    /// vocabularies are then merged in document order, so the index is the one adding the tools
    /// one by one would build, term ids included.
    pub fn from_documents(
        config: SearchConfig,
        docs: impl IntoIterator<Item = ToolDocument>,
    ) -> Self {
        let docs: Vec<ToolDocument> = docs.into_iter().collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(MAX_BUILD_THREADS)
            .min(docs.len() / MIN_DOCS_PER_THREAD)
            .max(1);
        Self::build(config, docs, threads)
    }

    /// [`SearchIndex::from_documents`] on `threads` threads.
    fn build(config: SearchConfig, docs: Vec<ToolDocument>, threads: usize) -> Self {
        let mut index = Self::new(config);
        let weights = index.config.weights;
        // Room for the tools, and an eighth more for those that come later.
        let room = docs.len() + docs.len() / 8;
        index.docs.reserve_exact(room);
        index.norms.reserve_exact(room);
        index.by_name.reserve(room);
        index.by_key.reserve(room);
        if threads <= 1 {
            let analysed = index.lexicon.analyze_all(&docs, &weights);
            index.sync_terms();
            index.reserve_postings([&analysed]);
            index.commit(docs, &analysed);
            index.reserve_spare();
            return index;
        }
        let tokenizer = index.lexicon.tokenizer.clone();
        let pieces = batch::cut(&docs, threads, &tokenizer, &weights);
        index.assemble(docs, pieces);
        index.reserve_spare();
        index
    }

    /// Makes room for an eighth more terms after a batch build (the tools and postings have
    /// theirs already).
    fn reserve_spare(&mut self) {
        self.terms.reserve(self.terms.len() / 8);
        self.lexicon.reserve_spare();
    }

    /// Files `docs`, cut into terms in `pieces` (in tool order, covering each tool once).
    fn assemble(&mut self, docs: Vec<ToolDocument>, pieces: Vec<batch::Piece>) {
        let index = self;
        let mut pieces = pieces.into_iter();
        let mut analysed = Vec::with_capacity(pieces.len());
        // The first piece starts with the first tool: its vocabulary takes in the others'.
        if let Some(first) = pieces.next() {
            index.lexicon = first.lexicon;
            analysed.push(first.analysed);
        }
        let mut memos = Vec::with_capacity(pieces.len());
        for mut piece in pieces {
            memos.push(index.lexicon.absorb(piece.lexicon, &mut piece.analysed));
            analysed.push(piece.analysed);
        }
        index.sync_terms();
        index.reserve_postings(&analysed);
        // The later pieces' words and parts join the memos on another thread while the tools
        // are filed here (neither touches what the other does).
        let mut own = index.lexicon.take_memos();
        let mut memos = Some(memos);
        let merge = |memos: &mut Option<Vec<Memos>>, own: &mut (WordTerms, PartTerms)| {
            for piece in memos.take().into_iter().flatten() {
                piece.merge_into(own);
            }
        };
        std::thread::scope(|scope| {
            let merging = std::thread::Builder::new()
                .name("tool-search-merge".into())
                .spawn_scoped(scope, || merge(&mut memos, &mut own));
            let mut docs = docs.into_iter();
            for piece in &analysed {
                index.commit(docs.by_ref().take(piece.len()), piece);
            }
            if let Ok(merging) = merging
                && let Err(panic) = merging.join()
            {
                std::panic::resume_unwind(panic);
            }
        });
        // Without a thread, the merge happens here.
        merge(&mut memos, &mut own);
        index.lexicon.restore_memos(own);
    }

    /// Makes room in each posting list for the documents of all of `analysed`, once, with an
    /// eighth more to spare: the tools of a server that connects later then fit without copying
    /// the long lists of common terms.
    fn reserve_postings<'a>(&mut self, analysed: impl IntoIterator<Item = &'a Analysed>) {
        let mut df = vec![0usize; self.terms.len()];
        for (term, _) in analysed.into_iter().flat_map(|a| &a.counts) {
            df[*term as usize] += 1;
        }
        for (entry, df) in self.terms.iter_mut().zip(df) {
            if df > 0 {
                let spare = (entry.postings.len() + df) / 8;
                entry.postings.reserve_exact(df + spare);
            }
        }
    }

    /// Adds `docs`, cut into terms by the lexicon (`analysed`), in order.
    fn commit(&mut self, docs: impl IntoIterator<Item = ToolDocument>, analysed: &Analysed) {
        for (doc, (length, counts)) in docs.into_iter().zip(analysed.iter()) {
            self.insert(doc, length, counts);
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

    /// Adds a tool, replacing any tool of the same name.
    pub fn add(&mut self, doc: ToolDocument) {
        let mut counts = Vec::new();
        let length = self
            .lexicon
            .analyze(&doc, &self.config.weights, &mut counts);
        self.sync_terms();
        self.insert(doc, length, &counts);
    }

    /// Gives each term the lexicon created since the last call its (empty) entry.
    fn sync_terms(&mut self) {
        let known = self.terms.len();
        self.terms
            .extend(self.lexicon.cjk[known..].iter().map(|&cjk| TermEntry {
                postings: Vec::new(),
                df: 0,
                max_tf: 0.0,
                min_length: f32::INFINITY,
                cjk,
            }));
    }

    /// Adds `doc`, already cut into terms (`counts`, sorted by term) of weighted length `length`,
    /// replacing any tool of the same name.
    fn insert(&mut self, doc: ToolDocument, length: f32, counts: &[FieldCounts]) {
        self.remove(&doc.name);
        let id = self.docs.len() as u32;
        let weights = self.config.weights;
        // Only TF-IDF reads the norm (a logarithm per term, a tenth of filing a tool).
        let tf_idf = matches!(self.config.scorer, Scorer::TfIdf);
        let mut term_list = Vec::with_capacity(counts.len());
        let mut norm = 0.0f32;
        for (term, tf) in counts {
            let weighted = weighted_tf(tf, &weights);
            if weighted <= 0.0 {
                continue;
            }
            if tf_idf {
                norm += (1.0 + weighted).ln().powi(2);
            }
            let entry = &mut self.terms[*term as usize];
            entry.postings.push(Posting {
                doc: id,
                weighted_tf: weighted,
                length,
            });
            entry.df += 1;
            entry.max_tf = entry.max_tf.max(weighted);
            entry.min_length = entry.min_length.min(length);
            term_list.push(*term);
        }
        self.live_postings += term_list.len();
        for key in std::iter::once(&doc.name).chain(&doc.aliases) {
            let key = key.to_lowercase();
            self.longest_key = self.longest_key.max(key.chars().count());
            self.spaced_keys |= key.contains(' ');
            self.by_key.insert(key, id);
        }
        if let Some(server) = &doc.server {
            self.by_server
                .entry(server.to_lowercase())
                .or_default()
                .insert(id);
        }
        self.by_name.insert(doc.name.clone(), id);
        self.live += 1;
        self.total_length += f64::from(length);
        let norm = if tf_idf {
            norm.sqrt().max(f32::MIN_POSITIVE)
        } else {
            1.0
        };
        self.norms.push(norm);
        self.docs.push(Some(DocEntry {
            doc,
            length,
            norm,
            terms: term_list,
        }));
    }

    /// Removes a tool; returns whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.by_name.remove(name) else {
            return false;
        };
        let Some(entry) = self.docs.get_mut(id as usize).and_then(Option::take) else {
            return false;
        };
        for term in &entry.terms {
            if let Some(t) = self.terms.get_mut(*term as usize) {
                t.df = t.df.saturating_sub(1);
                if let Ok(at) = t.postings.binary_search_by_key(&id, |p| p.doc) {
                    t.postings[at].length = -1.0;
                }
            }
        }
        self.dead_postings += entry.terms.len();
        self.live_postings = self.live_postings.saturating_sub(entry.terms.len());
        for key in std::iter::once(&entry.doc.name).chain(&entry.doc.aliases) {
            if self.by_key.get(&key.to_lowercase()) == Some(&id) {
                self.by_key.remove(&key.to_lowercase());
            }
        }
        if let Some(server) = &entry.doc.server {
            let key = server.to_lowercase();
            if let Some(set) = self.by_server.get_mut(&key) {
                set.remove(&id);
                if set.is_empty() {
                    self.by_server.remove(&key);
                }
            }
        }
        self.live -= 1;
        self.total_length -= f64::from(entry.length);
        // Dead postings are skipped by queries and swept out once they are as many as the live
        // ones, so removal stays cheap and memory stays bounded (amortised).
        if self.dead_postings > self.live_postings.max(1024) {
            self.sweep();
        }
        true
    }

    /// Removes every tool of an MCP server; returns how many.
    pub fn remove_server(&mut self, server: &str) -> usize {
        let ids: Vec<u32> = self
            .by_server
            .get(&server.to_lowercase())
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let names: Vec<String> = ids
            .iter()
            .filter_map(|id| self.entry(*id).map(|e| e.doc.name.clone()))
            .collect();
        for name in &names {
            self.remove(name);
        }
        names.len()
    }

    fn sweep(&mut self) {
        for term in &mut self.terms {
            term.postings.retain(|p| p.length >= 0.0);
        }
        self.dead_postings = 0;
    }

    /// Runs a query (see [`Query`] for the syntax) and returns up to `limit` tools.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchResults, SearchError> {
        let parsed = Query::parse(query)?;
        Ok(self.run(&parsed, limit))
    }

    /// Runs a parsed query.
    pub fn run(&self, query: &Query, limit: usize) -> SearchResults {
        let kind = query.kind();
        match query {
            Query::Select(names) => {
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
                SearchResults {
                    kind,
                    hits,
                    missing,
                }
            }
            Query::Server(server) => {
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
                SearchResults {
                    kind,
                    hits,
                    missing: Vec::new(),
                }
            }
            Query::Keywords { text, required } | Query::Discover { text, required } => {
                SearchResults {
                    kind,
                    hits: self.rank(text, required, limit),
                    missing: Vec::new(),
                }
            }
        }
    }

    /// Puts the query's distinct known terms in `words.terms`, with whether each is required,
    /// and returns how many distinct CJK bigrams the query has (known or not, for the CJK gate).
    /// No terms when a required word is in no tool.
    fn query_terms(&self, text: &str, required: &[String], words: &mut QueryWords) -> usize {
        let QueryWords {
            terms: out,
            required: required_terms,
            cjk_seen,
            lower,
            joined,
        } = words;
        out.clear();
        required_terms.clear();
        cjk_seen.clear();
        for token in required
            .iter()
            .flat_map(|w| self.lexicon.tokenizer.tokenize(w))
        {
            match self.lexicon.term_ids.get(token.text.as_str()) {
                Some(&t) => required_terms.push(t),
                // A required word no tool contains: nothing can match.
                None => return 0,
            }
        }
        // One bit per term id modulo 64: a term whose bit is clear is new to the query, and
        // most are, so the list is searched only on the rare collision.
        let mut seen_bits = 0u64;
        let mut push = |t: u32| {
            let bit = 1u64 << (t % 64);
            if seen_bits & bit == 0 || !out.iter().any(|(seen, _)| *seen == t) {
                seen_bits |= bit;
                out.push((t, required_terms.contains(&t)));
            }
        };
        self.lexicon
            .tokenizer
            .for_each_segment_shaped(text, |segment, plain| match segment {
                Segment::Word(word) if plain => {
                    if let Some(t) = self.query_part_term(lowercase(word, lower), true) {
                        push(t);
                    }
                }
                Segment::Word(word) => {
                    if let Some(ids) = self.lexicon.word_terms.get(word) {
                        ids.iter().for_each(|&t| push(t));
                        return;
                    }
                    self.lexicon
                        .tokenizer
                        .for_each_part_joining_in(word, joined, |part, joins| {
                            lowercase_into(part, lower);
                            let t = if Tokenizer::stems_joined(joins) {
                                self.query_part_term(lower, false)
                            } else {
                                self.lexicon.term_ids.get(lower.as_str()).copied()
                            };
                            if let Some(t) = t {
                                push(t);
                            }
                        });
                }
                Segment::Cjk(run) => for_each_cjk_bigram(run, |bigram| {
                    if let Some(&t) = self.lexicon.term_ids.get(bigram) {
                        push(t);
                    }
                    let mut chars = bigram.chars();
                    let key = (chars.next(), chars.next());
                    if !cjk_seen.contains(&key) {
                        cjk_seen.push(key);
                    }
                }),
            });
        cjk_seen.len()
    }

    /// The term a lowercase part of a query word is, if any document has it; `letters` when the
    /// part is known to be ASCII letters only.
    fn query_part_term(&self, part: &str, letters: bool) -> Option<u32> {
        if let Some(&t) = self.lexicon.part_terms.get(part) {
            return (t != NO_TERM).then_some(t);
        }
        // A part no document has: its stem may still be a term (`looking`). Common words'
        // stems come from the tokenizer's table; others are stemmed once per thread.
        let term_id = |term: Option<&str>| term.and_then(|t| self.lexicon.term_ids.get(t)).copied();
        let tokenizer = &self.lexicon.tokenizer;
        let cheap = if letters {
            tokenizer.letters_without_stemmer(part)
        } else {
            tokenizer.term_without_stemmer(part)
        };
        if let Some(term) = cheap {
            return term_id(term.as_deref());
        }
        QUERY_PARTS.with_borrow_mut(|cache| {
            if let Some(stem) = cache.get(part) {
                return term_id(Some(stem));
            }
            if cache.len() >= QUERY_PARTS_CAPACITY {
                cache.clear();
            }
            let stem = tokenizer.stem_uncommon(part);
            let known = term_id(Some(&stem));
            cache.insert(part.into(), SmolStr::new(stem));
            known
        })
    }

    fn idf(&self, df: u32) -> f32 {
        let n = self.live as f32;
        let df = df as f32;
        match self.config.scorer {
            Scorer::Bm25Plus(_) => (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
            Scorer::TfIdf => (1.0 + n / df.max(1.0)).ln(),
        }
    }

    /// The score a term with weighted frequency `tf` adds to a document of weighted length `len`.
    fn term_score(&self, idf: f32, tf: f32, length: f32, norm: f32, avg_length: f32) -> f32 {
        match self.config.scorer {
            Scorer::Bm25Plus(Bm25Plus { k1, b, delta }) => {
                let (base, per_length) = length_normaliser(k1, b, avg_length);
                let normaliser = base + per_length * length;
                idf * (tf * (k1 + 1.0) / (tf + normaliser) + delta)
            }
            Scorer::TfIdf => idf * (1.0 + tf).ln() / norm,
        }
    }

    /// The most a term can add to a document's score.
    fn max_term_score(&self, entry: &TermEntry, idf: f32, avg_length: f32) -> f32 {
        match self.config.scorer {
            // The saturating part grows with the frequency and shrinks with the length.
            Scorer::Bm25Plus(Bm25Plus { k1, b, delta }) => {
                let tf = entry.max_tf;
                let normaliser = k1 * (1.0 - b + b * entry.min_length.max(0.0) / avg_length);
                // A hair above the exact bound, so that rounding never makes it too small.
                idf * (tf * (k1 + 1.0) / (tf + normaliser) + delta) * (1.0 + 1e-4)
            }
            // The document vector is unit length: one component is at most 1 (and a hair).
            Scorer::TfIdf => idf * (1.0 + 1e-4),
        }
    }

    fn avg_length(&self) -> f32 {
        if self.live == 0 {
            1.0
        } else {
            (self.total_length / f64::from(self.live)) as f32
        }
    }

    /// The tool `text` names exactly (or by an alias), with the bonus that puts it first;
    /// `lower` is a buffer to reuse.
    fn exact_bonus(&self, text: &str, lower: &mut String) -> Option<(u32, f32)> {
        let text = text.trim();
        // Lowercasing never makes fewer characters: a longer text matches no name or alias,
        // and long queries skip lowercasing and hashing. A character is at least one byte.
        if text.len() > self.longest_key
            && (text.is_ascii() || text.chars().nth(self.longest_key).is_some())
        {
            return None;
        }
        // Nor does it add or drop spaces: most queries are sentences, and most keys are
        // identifiers.
        if !self.spaced_keys && text.as_bytes().contains(&b' ') {
            return None;
        }
        lowercase_into(text, lower);
        let id = *self.by_key.get(lower.as_str())?;
        // Larger than any sum of term scores can be: an exact name wins.
        Some((id, 1000.0))
    }

    fn rank(&self, text: &str, required: &[String], limit: usize) -> Vec<Hit> {
        self.rank_with(text, required, limit, MIN_POSTINGS_TO_PRUNE)
    }

    /// Ranks with max-score pruning checked only while the terms still to come have more than
    /// `prune_from` postings (`usize::MAX`: never). Pruning never changes the results: the unit
    /// tests compare checking at every term with never checking.
    fn rank_with(
        &self,
        text: &str,
        required: &[String],
        limit: usize,
        prune_from: usize,
    ) -> Vec<Hit> {
        if limit == 0 {
            return Vec::new();
        }
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch {
                words,
                adds,
                accs,
                touched,
                best,
                order,
                remaining,
                hits,
                bits,
            } = &mut *scratch;
            let cjk_terms = self.query_terms(text, required, words);
            let terms = &words.terms;
            // What each term adds to `matched`, in query order (nothing: left out).
            let (mut required_count, mut cjk_count, mut other_count) = (0u32, 0u32, 0u32);
            adds.clear();
            adds.extend(terms.iter().map(|(term, is_required)| {
                let mut add = if self.terms[*term as usize].cjk {
                    if cjk_count == Matched::CJK_ROOM {
                        return 0;
                    }
                    cjk_count += 1;
                    Matched::CJK
                } else {
                    if other_count == Matched::OTHER_ROOM {
                        return 0;
                    }
                    other_count += 1;
                    Matched::OTHER
                };
                if *is_required && required_count < Matched::REQUIRED_ROOM {
                    required_count += 1;
                    add += Matched::REQUIRED;
                }
                add
            }));
            let cjk_needed = cjk_terms.min(2) as u32;
            let avg_length = self.avg_length();
            let scorer = self.config.scorer;
            let exact = self.exact_bonus(text, &mut words.lower);
            if accs.len() < self.docs.len() {
                accs.resize(self.docs.len(), Acc::default());
            }
            touched.clear();
            // The terms with their position in the query, idf and the most each can add.
            order.clear();
            order.extend(
                terms
                    .iter()
                    .enumerate()
                    .filter(|(i, (term, _))| {
                        self.terms[*term as usize].df > 0 && adds.get(*i).is_some_and(|a| *a != 0)
                    })
                    .map(|(i, (term, _))| {
                        let entry = &self.terms[*term as usize];
                        let idf = self.idf(entry.df);
                        (i, *term, idf, self.max_term_score(entry, idf, avg_length))
                    }),
            );
            // Terms in decreasing order of the most they can add (max-score order).
            order.sort_unstable_by(|a, b| b.3.total_cmp(&a.3).then(a.0.cmp(&b.0)));
            // What the terms from each position on can add at most, together, and their
            // postings.
            remaining.clear();
            remaining.resize(order.len() + 1, (0.0, 0));
            for j in (0..order.len()).rev() {
                let postings = self.terms[order[j].1 as usize].postings.len();
                remaining[j] = (
                    remaining[j + 1].0 + order[j].3,
                    remaining[j + 1].1 + postings,
                );
            }
            // Pruning is exact only when every document that scores is a result: required terms
            // and the CJK gate drop documents after scoring, so they turn it off. So do too few
            // postings for a check to be worth making.
            let may_prune = prune_from < remaining[0].1 && required_count == 0 && cjk_needed == 0;
            // BM25's length normaliser is `base + per_length × length`: one multiply-add per
            // posting instead of a division.
            let (base, per_length, k1, delta) = match scorer {
                Scorer::Bm25Plus(Bm25Plus { k1, b, delta }) => {
                    let (base, per_length) = length_normaliser(k1, b, avg_length);
                    (base, per_length, k1, delta)
                }
                Scorer::TfIdf => (0.0, 0.0, 0.0, 0.0),
            };
            let mut candidates_only = false;
            // The last check's `limit`-th best running score, and what the terms processed by
            // then could give.
            let (mut last_kth, mut done_at_check) = (0.0f32, 0.0f32);
            let mut checked = false;
            for (pos, &(i, term, idf, _)) in order.iter().enumerate() {
                let entry = &self.terms[term as usize];
                let add = adds.get(i).copied().unwrap_or_default();
                let bm25_of = |posting: &Posting, length: f32| {
                    let tf = posting.weighted_tf;
                    let normaliser = base + per_length * length;
                    idf * (tf * (k1 + 1.0) / (tf + normaliser) + delta)
                };
                let tfidf_of = |posting: &Posting, _: f32| {
                    idf * (1.0 + posting.weighted_tf).ln() / self.norms[posting.doc as usize]
                };
                let score_of = |posting: &Posting, length: f32| match scorer {
                    Scorer::Bm25Plus(_) => bm25_of(posting, length),
                    Scorer::TfIdf => tfidf_of(posting, length),
                };
                if candidates_only && touched.len() * 8 < entry.postings.len() {
                    // Only documents already in the running can still reach the top: look each
                    // up in the postings (both in document order) by galloping.
                    let postings = entry.postings.as_slice();
                    let mut from = 0;
                    for &id in touched.iter() {
                        from += gallop(&postings[from..], id);
                        let Some(posting) = postings.get(from) else {
                            break;
                        };
                        if posting.doc == id {
                            let acc = &mut accs[id as usize];
                            acc.score += score_of(posting, posting.length);
                            acc.matched += add;
                        }
                    }
                    continue;
                }
                if candidates_only {
                    // Too many candidates to look up one by one: stream the postings, and
                    // update only the candidates (flagged by a non-zero mask or score).
                    for posting in &entry.postings {
                        let doc = posting.doc as usize;
                        let acc = &mut accs[doc];
                        let candidate =
                            acc.matched != 0 || exact.is_some_and(|(e, _)| e == posting.doc);
                        let length = posting.length;
                        if candidate && length >= 0.0 {
                            acc.score += score_of(posting, length);
                            acc.matched += add;
                        }
                    }
                } else {
                    // The scorer is chosen once per term, not per posting.
                    match scorer {
                        Scorer::Bm25Plus(_) => {
                            accumulate(&entry.postings, add, accs, touched, bm25_of)
                        }
                        Scorer::TfIdf => accumulate(&entry.postings, add, accs, touched, tfidf_of),
                    }
                }
                // Max-score pruning (Turtle and Flood 1995): once the `limit`-th best running
                // score is above what the remaining terms could give a document they alone
                // match, no new document can enter the results; documents that cannot catch up
                // are dropped, and the rest are only updated from then on.
                let (rest, rest_postings) = remaining[pos + 1];
                let done = remaining[0].0 - rest;
                // A check costs a pass over the running documents, so it is made only when it
                // can pass: the `limit`-th best running score is at most the one the last check
                // found plus what the terms processed since could add to it.
                let could_pass = rest < last_kth + (done - done_at_check);
                if may_prune
                    && could_pass
                    && touched.len() >= limit
                    && rest_postings > (2 * touched.len()).max(prune_from)
                {
                    // Scores only grow and the documents that reached the last check's
                    // threshold are still running, so it bounds this one from below.
                    let threshold = kth_best(
                        touched.iter().map(|id| accs[*id as usize].score),
                        limit,
                        if checked { last_kth } else { f32::NEG_INFINITY },
                        best,
                    );
                    checked = true;
                    last_kth = threshold;
                    done_at_check = done;
                    if rest < threshold {
                        touched.retain(|id| {
                            let acc = &mut accs[*id as usize];
                            let keep = acc.score + rest >= threshold
                                || exact.is_some_and(|(e, _)| e == *id);
                            if !keep {
                                *acc = Acc::default();
                            }
                            keep
                        });
                        if !candidates_only {
                            if let Some((e, _)) = exact
                                && !touched.contains(&e)
                            {
                                touched.push(e);
                            }
                            in_id_order(touched, bits, self.docs.len());
                            candidates_only = true;
                        }
                    }
                }
            }
            hits.clear();
            // The last check's threshold is a floor: the `limit` documents that reached it are
            // still running and scores only grow (checks are made only without required terms
            // or the CJK gate, which could drop them).
            let mut floor = if checked { last_kth } else { f32::NEG_INFINITY };
            // An exact name's bonus goes to its running score, if it has one, before the
            // filters below; else it is a result of its own.
            let mut exact_alone = exact;
            if let Some((id, bonus)) = exact
                && let Some(acc) = accs.get_mut(id as usize)
                && acc.matched != 0
            {
                acc.score += bonus;
                exact_alone = None;
            }
            for &id in touched.iter() {
                let acc = std::mem::take(&mut accs[id as usize]);
                if Matched::required(acc.matched) != required_count {
                    continue;
                }
                if cjk_needed > 0
                    && Matched::other(acc.matched) == 0
                    && Matched::cjk(acc.matched) < cjk_needed
                {
                    continue;
                }
                let score = acc.score;
                if score < floor {
                    continue;
                }
                hits.push((score, id));
                // Keep the candidate list short: every so often cut it to the best `limit`.
                // Ties with the last kept score stay, so that ties are still broken by name.
                if hits.len() >= 2 * limit + 8 {
                    hits.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
                    floor = hits[limit - 1].0;
                    hits.retain(|h| h.0 >= floor);
                }
            }
            if let Some((id, bonus)) = exact_alone
                && required_count == 0
            {
                hits.push((bonus, id));
            }
            let by_rank = |a: &(f32, u32), b: &(f32, u32)| {
                b.0.total_cmp(&a.0)
                    .then_with(|| self.name_of(a.1).cmp(self.name_of(b.1)))
            };
            if hits.len() > limit {
                hits.select_nth_unstable_by(limit, by_rank);
                hits.truncate(limit);
            }
            hits.sort_by(by_rank);
            hits.iter()
                .map(|&(score, id)| Hit {
                    name: self.name_of(id).to_owned(),
                    score,
                })
                .collect()
        })
    }

    fn name_of(&self, id: u32) -> &str {
        self.entry(id).map_or("", |e| e.doc.name.as_str())
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

    /// Each term of an indexed document with its frequency in each field, sorted by term.
    fn field_counts(&self, doc: &ToolDocument) -> Vec<FieldCounts> {
        let mut occurrences: Vec<(u32, u8)> = Vec::new();
        let mut tokens = Vec::new();
        for field in Field::ALL {
            doc.for_each_field_text(field, |text| {
                tokens.clear();
                self.lexicon.tokenizer.tokenize_into(text, &mut tokens);
                occurrences.extend(
                    tokens
                        .iter()
                        .filter_map(|t| self.lexicon.term_ids.get(t.text.as_str()))
                        .map(|&t| (t, field.index() as u8)),
                );
            });
        }
        occurrences.sort_unstable();
        let mut counts = Vec::new();
        group(&occurrences, &mut counts);
        counts
    }

    /// Which terms, in which fields, gave what to `name`'s score for a keyword query; `None`
    /// when the tool is not indexed.
    pub fn explain(&self, query: &str, name: &str) -> Result<Option<Explanation>, SearchError> {
        let (text, required) = match Query::parse(query)? {
            Query::Keywords { text, required } | Query::Discover { text, required } => {
                (text, required)
            }
            Query::Select(_) | Query::Server(_) => (query.to_owned(), Vec::new()),
        };
        let Some(&id) = self.by_name.get(name) else {
            return Ok(None);
        };
        let Some(doc) = self.entry(id) else {
            return Ok(None);
        };
        let mut words = QueryWords::default();
        self.query_terms(&text, &required, &mut words);
        let terms = words.terms;
        let counts = self.field_counts(&doc.doc);
        let weights = self.config.weights;
        let avg_length = self.avg_length();
        let reverse: HashMap<u32, &str> = self
            .lexicon
            .term_ids
            .iter()
            .map(|(k, v)| (*v, k.as_str()))
            .collect();
        let mut out = Vec::new();
        let mut total = 0.0;
        for (term, _) in terms {
            let entry = &self.terms[term as usize];
            let Ok(pos) = entry.postings.binary_search_by_key(&id, |p| p.doc) else {
                continue;
            };
            let Ok(at) = counts.binary_search_by_key(&term, |(t, _)| *t) else {
                continue;
            };
            let tf = counts[at].1;
            let weighted = entry.postings[pos].weighted_tf;
            let idf = self.idf(entry.df);
            let score = self.term_score(idf, weighted, doc.length, doc.norm, avg_length);
            total += score;
            let fields = Field::ALL
                .iter()
                .filter(|f| tf[f.index()] > 0)
                .map(|f| {
                    let part = weights.get(*f) * f32::from(tf[f.index()]);
                    (
                        *f,
                        u32::from(tf[f.index()]),
                        weights.get(*f),
                        score * part / weighted,
                    )
                })
                .collect();
            out.push(TermExplanation {
                term: reverse.get(&term).copied().unwrap_or("").to_owned(),
                idf,
                score,
                fields,
            });
        }
        let bonus = self
            .exact_bonus(&text, &mut words.lower)
            .filter(|(e, _)| *e == id)
            .map_or(0.0, |(_, b)| b);
        Ok(Some(Explanation {
            name: name.to_owned(),
            score: total + bonus,
            exact_name_bonus: bonus,
            terms: out,
        }))
    }
}

/// An `f32` ordered by [`f32::total_cmp`].
#[derive(Debug, Clone, Copy)]
struct TotalF32(f32);

impl PartialEq for TotalF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TotalF32 {}

impl PartialOrd for TotalF32 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TotalF32 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The `k`-th largest of `scores` (`k` ≥ 1), in one pass: a min-heap of the best `k` so far,
/// which most scores fail to enter at a glance. `at_least` is a known lower bound (at least `k`
/// scores reach it), returned when fewer than `k` scores exceed it.
fn kth_best(
    scores: impl Iterator<Item = f32>,
    k: usize,
    at_least: f32,
    heap: &mut BinaryHeap<Reverse<TotalF32>>,
) -> f32 {
    heap.clear();
    // Scores at or below `at_least` cannot change the answer, and once the heap holds `k`,
    // neither can those at or below its least: most scores cost one comparison.
    let mut least = at_least;
    for score in scores {
        if score <= least {
            continue;
        }
        if heap.len() < k {
            heap.push(Reverse(TotalF32(score)));
            if heap.len() == k {
                least = heap.peek().map_or(at_least, |l| l.0.0);
            }
        } else {
            if let Some(mut smallest) = heap.peek_mut() {
                *smallest = Reverse(TotalF32(score));
            }
            least = heap.peek().map_or(at_least, |l| l.0.0);
        }
    }
    match heap.peek() {
        Some(least) if heap.len() == k => least.0.0,
        _ => at_least,
    }
}

/// Puts `ids` (below `n`, distinct) in ascending order: through a bitset when they are many,
/// else by a stable sort (they come as runs of ascending ids, one per query term, which it
/// merges).
fn in_id_order(ids: &mut Vec<u32>, bits: &mut Vec<u64>, n: usize) {
    if ids.len() < n / 256 {
        ids.sort();
        return;
    }
    bits.clear();
    bits.resize(n.div_ceil(64), 0);
    for &id in ids.iter() {
        bits[id as usize / 64] |= 1 << (id % 64);
    }
    ids.clear();
    for (i, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            ids.push((i * 64) as u32 + word.trailing_zeros());
            word &= word - 1;
        }
    }
}

/// Adds each live posting's score to its document's running score and `add` (not zero: see
/// [`Matched`]) to its matched terms, noting the documents it touches first.
fn accumulate(
    postings: &[Posting],
    add: u32,
    accs: &mut [Acc],
    touched: &mut Vec<u32>,
    score_of: impl Fn(&Posting, f32) -> f32,
) {
    // Every posting's document is written at the end of the list, which grows past it only
    // when the document is new: no branch to mispredict on whether it is.
    let mut len = touched.len();
    touched.resize(len + postings.len(), 0);
    for posting in postings {
        let length = posting.length;
        if length < 0.0 {
            continue;
        }
        let score = score_of(posting, length);
        let (Some(acc), Some(slot)) = (accs.get_mut(posting.doc as usize), touched.get_mut(len))
        else {
            continue;
        };
        *slot = posting.doc;
        len += usize::from(acc.matched == 0);
        acc.score += score;
        acc.matched += add;
    }
    touched.truncate(len);
}

/// BM25's `k1 × (1 − b + b × length / avg_length)` as `base + per_length × length`.
fn length_normaliser(k1: f32, b: f32, avg_length: f32) -> (f32, f32) {
    (k1 * (1.0 - b), k1 * b / avg_length.max(f32::MIN_POSITIVE))
}

/// The position of the first posting at or after document `id` (galloping search: cheap when
/// it is near the start, as it is when candidates are visited in order).
fn gallop(postings: &[Posting], id: u32) -> usize {
    let mut step = 1;
    let mut low = 0;
    while low + step < postings.len() && postings[low + step].doc < id {
        low += step;
        step *= 2;
    }
    let high = (low + step + 1).min(postings.len());
    low + postings[low..high].partition_point(|p| p.doc < id)
}

fn weighted_tf(tf: &[u16; FIELDS], weights: &FieldWeights) -> f32 {
    tf.iter()
        .zip(weights.0.iter())
        .map(|(t, w)| f32::from(*t) * w)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Parameter;

    /// A corpus where common words have long postings and rare ones short, so that pruning
    /// kicks in.
    fn corpus(scorer: Scorer) -> SearchIndex {
        let words = [
            "file", "read", "write", "data", "user", "list", "create", "delete", "search", "send",
            "message", "weather", "stock", "price", "image", "video", "email", "calendar",
        ];
        let mut index = SearchIndex::new(SearchConfig {
            scorer,
            ..SearchConfig::default()
        });
        for i in 0..600usize {
            let mut description = String::new();
            for j in 0..(3 + i % 7) {
                // Skewed: low word indexes are far more frequent.
                let w = (i * 7 + j * 13) % (1 + (i + j) % words.len());
                description.push_str(words[w]);
                description.push(' ');
            }
            index.add(ToolDocument::new(format!("tool_{i:03}"), description));
        }
        index.add(ToolDocument::new("read", "read a file"));
        index
    }

    #[test]
    fn pruning_never_changes_the_results() {
        for scorer in [Scorer::default(), Scorer::TfIdf] {
            let index = corpus(scorer);
            let queries = [
                "file",
                "read file data",
                "send email message to user",
                "weather stock price",
                "list create delete search send message",
                "read",
                "image video calendar file",
                "user data file read write list create delete search",
            ];
            for query in queries {
                for limit in [1, 3, 10, 50] {
                    let pruned = index.rank_with(query, &[], limit, 0);
                    let full = index.rank_with(query, &[], limit, usize::MAX);
                    let names = |h: &[Hit]| h.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
                    assert_eq!(names(&pruned), names(&full), "{query} (limit {limit})");
                    for (a, b) in pruned.iter().zip(&full) {
                        assert!((a.score - b.score).abs() < 1e-4);
                    }
                }
            }
        }
    }

    /// A larger corpus in the shape of the benchmark's: near-copies of each tool (same words,
    /// other order, renamed), a Zipf-like vocabulary, and removed tools whose postings are still
    /// there, so that every pruning path runs (repeated checks, galloping, streaming).
    #[test]
    fn pruning_never_changes_the_results_on_near_copies_with_removals() {
        let vocabulary: Vec<String> = (0..80).map(|i| format!("w{i}x")).collect();
        let mut state = 0x2545_f491_u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for scorer in [Scorer::default(), Scorer::TfIdf] {
            let mut index = SearchIndex::new(SearchConfig {
                scorer,
                ..SearchConfig::default()
            });
            let originals: Vec<Vec<usize>> = (0..300)
                .map(|_| {
                    // Skewed: squaring a uniform pick favours low word numbers.
                    (0..3 + next(12))
                        .map(|_| {
                            let r = next(80);
                            r * r / 80
                        })
                        .collect()
                })
                .collect();
            for copy in 0..10 {
                for (i, words) in originals.iter().enumerate() {
                    let mut words = words.clone();
                    let len = words.len();
                    words.rotate_left(copy % len);
                    let text: Vec<&str> = words.iter().map(|w| vocabulary[*w].as_str()).collect();
                    index.add(ToolDocument::new(format!("t{i}_c{copy}"), text.join(" ")));
                }
            }
            for i in (0..300).step_by(7) {
                index.remove(&format!("t{i}_c3"));
            }
            for _ in 0..60 {
                let query: Vec<&str> = (0..1 + next(14))
                    .map(|_| vocabulary[next(80)].as_str())
                    .collect();
                let query = query.join(" ");
                for limit in [1, 5, 10, 37] {
                    let pruned = index.rank_with(&query, &[], limit, 0);
                    let full = index.rank_with(&query, &[], limit, usize::MAX);
                    let names = |h: &[Hit]| h.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
                    assert_eq!(names(&pruned), names(&full), "{query} (limit {limit})");
                    for (a, b) in pruned.iter().zip(&full) {
                        assert_eq!(a.score, b.score, "{query} (limit {limit})");
                    }
                }
            }
        }
    }

    /// Everything an index holds, with floats as bits: two indexes that agree here rank alike.
    fn state(index: &SearchIndex) -> impl PartialEq + fmt::Debug {
        let mut word_terms: Vec<_> = index.lexicon.word_terms.iter().collect();
        word_terms.sort();
        let mut part_terms: Vec<_> = index.lexicon.part_terms.iter().collect();
        part_terms.sort();
        let mut term_ids: Vec<_> = index.lexicon.term_ids.iter().collect();
        term_ids.sort();
        let terms: Vec<_> = index
            .terms
            .iter()
            .map(|t| {
                let postings: Vec<_> = t
                    .postings
                    .iter()
                    .map(|p| (p.doc, p.weighted_tf.to_bits(), p.length.to_bits()))
                    .collect();
                (
                    postings,
                    t.df,
                    t.max_tf.to_bits(),
                    t.min_length.to_bits(),
                    t.cjk,
                )
            })
            .collect();
        let docs: Vec<_> = index
            .docs
            .iter()
            .map(|d| {
                d.as_ref().map(|d| {
                    (
                        d.doc.clone(),
                        d.length.to_bits(),
                        d.norm.to_bits(),
                        d.terms.clone(),
                    )
                })
            })
            .collect();
        let norms: Vec<u32> = index.norms.iter().map(|n| n.to_bits()).collect();
        let mut by_name: Vec<_> = index.by_name.iter().collect();
        by_name.sort();
        let mut by_key: Vec<_> = index.by_key.iter().collect();
        by_key.sort();
        format!(
            "{term_ids:?} {word_terms:?} {part_terms:?} {:?} {terms:?} {docs:?} {norms:?} \
             {by_name:?} {by_key:?} {:?} {} {} {} {} {} {}",
            index.lexicon.cjk,
            index.by_server,
            index.live,
            index.total_length.to_bits(),
            index.dead_postings,
            index.live_postings,
            index.longest_key,
            index.spaced_keys,
        )
    }

    #[test]
    fn a_batch_cut_on_threads_is_the_index_adds_build() {
        let words = [
            "read",
            "files",
            "the",
            "HTTPServer",
            "get_user",
            "mcp__github__create_issue",
            "Reading",
            "天气预报",
            "查询",
            "ファイル",
            "검색",
            "of",
            "utf8",
            "café",
            "readFile",
        ];
        // Names repeat within a thread's share and across shares: later tools replace earlier.
        let docs: Vec<ToolDocument> = (0..700)
            .map(|i: usize| {
                let rare = format!("Word{}x", (i * 13) % 41);
                let text: Vec<&str> = (0..2 + i % 9)
                    .map(|k| words[(i * 7 + k * k) % words.len()])
                    .chain([rare.as_str()])
                    .collect();
                let mut doc =
                    ToolDocument::new(format!("tool_{}", i % 610), text.join(" ")).with_parameter(
                        Parameter::described(words[i % words.len()], words[(i + 3) % words.len()]),
                    );
                if i.is_multiple_of(5) {
                    doc = doc.with_server(format!("srv{}", i % 3), format!("t{i}"));
                }
                if i.is_multiple_of(11) {
                    doc.aliases.push(format!("Alias{}", i % 17));
                }
                doc
            })
            .collect();
        let mut one_by_one = SearchIndex::default();
        for doc in docs.clone() {
            one_by_one.add(doc);
        }
        for threads in [1, 2, 3, 8] {
            let batch = SearchIndex::build(SearchConfig::default(), docs.clone(), threads);
            assert_eq!(state(&batch), state(&one_by_one), "{threads} threads");
        }
        // However the threads end up sharing the tools out; posting lists get their room (an
        // eighth to spare) once, as from a single piece.
        let mut rooms: Option<Vec<usize>> = None;
        for ends in [
            vec![700],
            vec![1, 700],
            vec![350, 351, 699, 700],
            vec![64, 128, 200, 333, 500, 640, 700],
        ] {
            let mut batch = SearchIndex::default();
            let pieces = batch::cut_at(
                &docs,
                &ends,
                &batch.lexicon.tokenizer.clone(),
                &batch.config.weights,
            );
            batch.assemble(docs.clone(), pieces);
            assert_eq!(
                state(&batch),
                state(&one_by_one),
                "pieces ending at {ends:?}"
            );
            let room: Vec<usize> = batch.terms.iter().map(|t| t.postings.capacity()).collect();
            assert_eq!(&room, rooms.get_or_insert_with(|| room.clone()), "{ends:?}");
        }
    }

    #[test]
    fn ids_come_out_in_order_either_way() {
        let mut bits = Vec::new();
        for n in [10usize, 300, 5_000] {
            let mut ids: Vec<u32> = (0..n as u32).filter(|i| i % 3 != 1).rev().collect();
            ids.rotate_left(n / 7);
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            in_id_order(&mut ids, &mut bits, n);
            assert_eq!(ids, sorted, "{n} documents");
            let mut few = vec![n as u32 - 1, 3, 0];
            in_id_order(&mut few, &mut bits, n);
            assert_eq!(few, [0, 3, n as u32 - 1]);
        }
    }

    #[test]
    fn kth_best_is_the_kth_largest() {
        let mut heap = BinaryHeap::new();
        let scores = [3.0f32, 9.0, 1.0, 9.0, 4.0, 7.0, 0.5];
        for k in 1..=scores.len() {
            let mut sorted = scores.to_vec();
            sorted.sort_by(|a, b| b.total_cmp(a));
            assert_eq!(
                kth_best(scores.iter().copied(), k, f32::NEG_INFINITY, &mut heap),
                sorted[k - 1]
            );
            // With a lower bound that k scores reach, the answer is the same.
            assert_eq!(
                kth_best(scores.iter().copied(), k, sorted[k - 1], &mut heap),
                sorted[k - 1]
            );
            assert_eq!(
                kth_best(scores.iter().copied(), k, 0.0, &mut heap),
                sorted[k - 1]
            );
        }
        assert_eq!(
            kth_best([1.0].into_iter(), 2, f32::NEG_INFINITY, &mut heap),
            f32::NEG_INFINITY
        );
    }

    #[test]
    fn gallop_finds_the_first_posting_at_or_after() {
        let postings: Vec<Posting> = [2u32, 3, 5, 8, 13, 21, 34]
            .iter()
            .map(|&doc| Posting {
                doc,
                weighted_tf: 1.0,
                length: 1.0,
            })
            .collect();
        for (id, at) in [(0, 0), (2, 0), (4, 2), (13, 4), (22, 6), (34, 6), (35, 7)] {
            assert_eq!(gallop(&postings, id), at, "{id}");
        }
        assert_eq!(gallop(&[], 3), 0);
    }
}
