//! The running documents of one query: a score and the matched terms per document, and the
//! term loop's per-posting updates to them (every document, or only those still running once
//! max-score pruning has dropped the rest).

use super::postings::{Posting, gallop};
use super::scorer::TermWeight;

/// A document's running score and how many of the query's terms it matched, counted in three
/// fields of [`Acc::matched`]: required terms, CJK bigrams and other terms (ranking's
/// `Matched` packs and reads them). Every term adds to the CJK or the other field, so a
/// document is running exactly when `matched` is not zero.
#[derive(Default, Clone, Copy)]
pub(super) struct Acc {
    pub(super) score: f32,
    pub(super) matched: u32,
}

/// The running documents and what the term loop reads about the query's terms.
#[derive(Default)]
pub(super) struct Running {
    /// Running score per document id.
    pub(super) accs: Vec<Acc>,
    /// The documents with a running score.
    pub(super) touched: Vec<u32>,
    /// What each query term adds to [`Acc::matched`], in query order.
    pub(super) adds: Vec<u32>,
    /// The query's terms that can score, in max-score order.
    pub(super) order: Vec<PlannedTerm>,
    /// What the terms from each position of `order` on can add at most, together, and how many
    /// postings they have.
    pub(super) remaining: Vec<(f32, usize)>,
}

/// A query term as the term loop takes it.
#[derive(Clone, Copy)]
pub(super) struct PlannedTerm {
    /// Its position in the query.
    pub(super) position: usize,
    pub(super) term: u32,
    pub(super) idf: f32,
    /// The most it can add to a document's score.
    pub(super) bound: f32,
}

impl Running {
    /// Adds `weight`'s score for each live posting to its document's running score, and `add`
    /// to its matched terms: for every document, or once `candidates_only`, for those already
    /// running (and the exact name's).
    #[inline]
    pub(super) fn score<W: TermWeight>(
        &mut self,
        postings: &[Posting],
        add: u32,
        weight: W,
        candidates_only: bool,
        exact: Option<(u32, f32)>,
    ) {
        if !candidates_only {
            self.accumulate(postings, add, weight);
        } else if self.touched.len() * 8 < postings.len() {
            self.look_up(postings, add, weight);
        } else {
            self.stream_to_candidates(postings, add, weight, exact);
        }
    }

    /// Scores every live posting, noting the documents it reaches first.
    #[inline]
    fn accumulate<W: TermWeight>(&mut self, postings: &[Posting], add: u32, weight: W) {
        let Self { accs, touched, .. } = self;
        // Every posting's document is written at the end of the list, which grows past it only
        // when the document is new: no branch to mispredict on whether it is.
        let mut len = touched.len();
        touched.resize(len + postings.len(), 0);
        for posting in postings {
            if !posting.is_live() {
                continue;
            }
            let score = weight.score(posting);
            let (Some(acc), Some(slot)) =
                (accs.get_mut(posting.doc as usize), touched.get_mut(len))
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

    /// Only documents already in the running can still reach the top, and they are few: looks
    /// each up in the postings (both in document order) by galloping.
    #[inline]
    fn look_up<W: TermWeight>(&mut self, postings: &[Posting], add: u32, weight: W) {
        let mut from = 0;
        for &id in self.touched.iter() {
            from += gallop(&postings[from..], id);
            let Some(posting) = postings.get(from) else {
                break;
            };
            if posting.doc == id {
                let acc = &mut self.accs[id as usize];
                acc.score += weight.score(posting);
                acc.matched += add;
            }
        }
    }

    /// Too many candidates to look up one by one: streams the postings, and updates only the
    /// candidates (flagged by a non-zero mask, or being the exact name's).
    #[inline]
    fn stream_to_candidates<W: TermWeight>(
        &mut self,
        postings: &[Posting],
        add: u32,
        weight: W,
        exact: Option<(u32, f32)>,
    ) {
        for posting in postings {
            let acc = &mut self.accs[posting.doc as usize];
            let candidate = acc.matched != 0 || exact.is_some_and(|(e, _)| e == posting.doc);
            if candidate && posting.is_live() {
                acc.score += weight.score(posting);
                acc.matched += add;
            }
        }
    }

    /// Drops the running documents whose score plus `rest` falls short of `threshold` (but
    /// the exact name's).
    pub(super) fn keep_reaching(&mut self, threshold: f32, rest: f32, exact: Option<(u32, f32)>) {
        let Self { accs, touched, .. } = self;
        touched.retain(|id| {
            let acc = &mut accs[*id as usize];
            let keep = acc.score + rest >= threshold || exact.is_some_and(|(e, _)| e == *id);
            if !keep {
                *acc = Acc::default();
            }
            keep
        });
    }
}
