//! The scorers, each written once as the weight of one query term: the score it gives a
//! posting, the most it can give any posting of the term (for max-score pruning), and how a
//! score came about (for `explain`).

use super::explanation::TermExplanation;
use super::postings::{Posting, TermEntry};
use crate::document::{Field, FieldWeights};
use crate::lexicon::FIELDS;

/// Term-frequency saturation: the usual value since Robertson et al. (TREC-3, 1994).
const K1: f32 = 1.2;
/// How much document length normalises term frequency (0: not at all, 1: fully).
const B: f32 = 0.75;
/// BM25+'s lower bound on what a matching term adds (Lv and Zhai's recommended value).
const DELTA: f32 = 1.0;
/// How far an upper bound is raised above the exact one, so that rounding never makes it too
/// small for pruning to stay exact.
const BOUND_MARGIN: f32 = 1e-4;

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
            k1: K1,
            b: B,
            delta: DELTA,
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

/// What the scorers read of the whole index.
#[derive(Debug, Clone, Copy)]
pub(super) struct CorpusStats<'a> {
    /// Live documents (`N`).
    pub(super) docs: u32,
    /// Their mean weighted length (`avgdl`).
    pub(super) avg_length: f32,
    /// The `lnc` norm of each document, by id (TF-IDF only).
    pub(super) norms: &'a [f32],
}

/// One query term's weight under a scorer.
pub(super) trait TermWeight: Copy {
    /// The term's inverse document frequency.
    fn idf(&self) -> f32;

    /// What the term adds to the score of the document of a live `posting`.
    fn score(&self, posting: &Posting) -> f32;

    /// The most the term adds to any document: at least [`TermWeight::score`] of each of
    /// `entry`'s postings.
    fn max_score(&self, entry: &TermEntry) -> f32;

    /// How the term's score for the document of `posting` came about: `term` is its text and
    /// `tf` its frequency in each field of the document.
    fn explain(
        &self,
        term: String,
        posting: &Posting,
        tf: &[u16; FIELDS],
        weights: &FieldWeights,
    ) -> TermExplanation {
        let score = self.score(posting);
        // Every scorer reads the fields only through their weighted sum, so each field's share
        // of the score is its share of that sum.
        let fields = Field::ALL
            .iter()
            .filter(|f| tf[f.index()] > 0)
            .map(|f| {
                let part = weights.get(*f) * f32::from(tf[f.index()]);
                (
                    *f,
                    u32::from(tf[f.index()]),
                    weights.get(*f),
                    score * part / posting.weighted_tf,
                )
            })
            .collect();
        TermExplanation {
            term,
            idf: self.idf(),
            score,
            fields,
        }
    }
}

/// A query term's BM25+ weight:
///
/// ```text
/// score(tf, dl) = idf × (tf × (k1 + 1) / (tf + k1 × (1 − b + b × dl / avgdl)) + δ)
/// idf           = ln(1 + (N − df + 0.5) / (df + 0.5))
/// ```
///
/// `tf` is the term's weighted frequency in the document (BM25F: Σ field weight × frequency),
/// `dl` the document's weighted length, `N` the documents and `df` those with the term.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bm25Weight {
    idf: f32,
    k1: f32,
    delta: f32,
    /// The length normaliser `k1 × (1 − b + b × dl / avgdl)` is `base + per_length × dl`: one
    /// multiply-add per posting instead of a division.
    base: f32,
    per_length: f32,
}

impl Bm25Weight {
    /// BM25's idf, as Lucene has it (never negative, unlike Robertson–Spärck Jones's own).
    pub(super) fn idf(df: u32, stats: &CorpusStats<'_>) -> f32 {
        let (n, df) = (stats.docs as f32, df as f32);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The weight of a term of inverse document frequency `idf`.
    pub(super) fn new(params: Bm25Plus, idf: f32, stats: &CorpusStats<'_>) -> Self {
        let Bm25Plus { k1, b, delta } = params;
        Self {
            idf,
            k1,
            delta,
            base: k1 * (1.0 - b),
            per_length: k1 * b / stats.avg_length.max(f32::MIN_POSITIVE),
        }
    }

    /// The score for weighted frequency `tf` in a document of weighted length `length`.
    #[inline(always)]
    fn score_of(&self, tf: f32, length: f32) -> f32 {
        let normaliser = self.base + self.per_length * length;
        self.idf * (tf * (self.k1 + 1.0) / (tf + normaliser) + self.delta)
    }
}

impl TermWeight for Bm25Weight {
    fn idf(&self) -> f32 {
        self.idf
    }

    #[inline(always)]
    fn score(&self, posting: &Posting) -> f32 {
        self.score_of(posting.weighted_tf, posting.length)
    }

    /// The saturating part grows with the frequency and shrinks with the length.
    fn max_score(&self, entry: &TermEntry) -> f32 {
        self.score_of(entry.max_tf, entry.min_length.max(0.0)) * (1.0 + BOUND_MARGIN)
    }
}

/// A query term's TF-IDF weight, SMART `lnc.ltc` (Salton and Buckley, "Term-weighting
/// approaches in automatic text retrieval", 1988):
///
/// ```text
/// score(tf, d) = idf × ln(1 + tf) / ‖d‖      ‖d‖ = √(Σ over d's terms of ln(1 + tf)²)
/// idf          = ln(1 + N / df)
/// ```
///
/// The query side is `ltc` with each term once, and its norm, the same for every document, is
/// left out.
#[derive(Debug, Clone, Copy)]
pub(super) struct TfIdfWeight<'a> {
    idf: f32,
    norms: &'a [f32],
}

impl<'a> TfIdfWeight<'a> {
    /// TF-IDF's idf.
    pub(super) fn idf(df: u32, stats: &CorpusStats<'_>) -> f32 {
        let (n, df) = (stats.docs as f32, df as f32);
        (1.0 + n / df.max(1.0)).ln()
    }

    /// The weight of a term of inverse document frequency `idf`.
    pub(super) fn new(idf: f32, stats: &CorpusStats<'a>) -> Self {
        Self {
            idf,
            norms: stats.norms,
        }
    }
}

impl TermWeight for TfIdfWeight<'_> {
    fn idf(&self) -> f32 {
        self.idf
    }

    #[inline(always)]
    fn score(&self, posting: &Posting) -> f32 {
        self.idf * (1.0 + posting.weighted_tf).ln() / self.norms[posting.doc as usize]
    }

    /// The document vector is unit length: one component is at most 1.
    fn max_score(&self, _: &TermEntry) -> f32 {
        self.idf * (1.0 + BOUND_MARGIN)
    }
}

/// A query term's weight under the configured [`Scorer`]. Scoring loops match on it once per
/// term and run on the scorer's own weight, so no posting pays for the choice.
#[derive(Debug, Clone, Copy)]
pub(super) enum Weight<'a> {
    /// BM25+.
    Bm25Plus(Bm25Weight),
    /// TF-IDF cosine.
    TfIdf(TfIdfWeight<'a>),
}

impl<'a> Weight<'a> {
    /// The weight under `scorer` of a term in `df` documents.
    pub(super) fn of_term(scorer: Scorer, df: u32, stats: &CorpusStats<'a>) -> Self {
        let idf = match scorer {
            Scorer::Bm25Plus(_) => Bm25Weight::idf(df, stats),
            Scorer::TfIdf => TfIdfWeight::idf(df, stats),
        };
        Self::new(scorer, idf, stats)
    }

    /// The weight under `scorer` of a term of inverse document frequency `idf` (known from
    /// [`Weight::of_term`]).
    pub(super) fn new(scorer: Scorer, idf: f32, stats: &CorpusStats<'a>) -> Self {
        match scorer {
            Scorer::Bm25Plus(params) => Self::Bm25Plus(Bm25Weight::new(params, idf, stats)),
            Scorer::TfIdf => Self::TfIdf(TfIdfWeight::new(idf, stats)),
        }
    }
}

impl TermWeight for Weight<'_> {
    fn idf(&self) -> f32 {
        match self {
            Self::Bm25Plus(w) => w.idf(),
            Self::TfIdf(w) => w.idf(),
        }
    }

    fn score(&self, posting: &Posting) -> f32 {
        match self {
            Self::Bm25Plus(w) => w.score(posting),
            Self::TfIdf(w) => w.score(posting),
        }
    }

    fn max_score(&self, entry: &TermEntry) -> f32 {
        match self {
            Self::Bm25Plus(w) => w.max_score(entry),
            Self::TfIdf(w) => w.max_score(entry),
        }
    }
}
