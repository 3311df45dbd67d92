//! What the index keeps per term and per document.

use crate::document::{FieldWeights, ToolDocument};
use crate::lexicon::FIELDS;

/// Everything scoring reads for one document containing a term, in 12 bytes: a query streams
/// through the postings without looking anything else up per document.
#[derive(Debug, Clone, Copy)]
pub(super) struct Posting {
    pub(super) doc: u32,
    /// Σ field weight × frequency in that field.
    pub(super) weighted_tf: f32,
    /// The document's weighted length; negative once the document is removed.
    pub(super) length: f32,
}

impl Posting {
    /// Whether its document is still indexed.
    #[inline(always)]
    pub(super) fn is_live(&self) -> bool {
        self.length >= 0.0
    }
}

#[derive(Debug)]
pub(super) struct TermEntry {
    /// Postings in ascending document order (ids only grow); may hold dead documents until the
    /// next sweep. Per-field frequencies are not kept: `explain` recounts them from the stored
    /// document, which keeps postings at 12 bytes.
    pub(super) postings: Vec<Posting>,
    /// Live documents containing the term.
    pub(super) df: u32,
    /// The largest weighted frequency and the shortest weighted document length among its
    /// postings (kept through removals: still bounds, only looser), for max-score pruning.
    pub(super) max_tf: f32,
    pub(super) min_length: f32,
    pub(super) cjk: bool,
}

impl TermEntry {
    /// A term no document has yet.
    pub(super) fn new(cjk: bool) -> Self {
        Self {
            postings: Vec::new(),
            df: 0,
            max_tf: 0.0,
            min_length: f32::INFINITY,
            cjk,
        }
    }

    /// Appends a posting (its document is the newest) and widens the bounds to cover it.
    pub(super) fn push(&mut self, posting: Posting) {
        self.df += 1;
        self.max_tf = self.max_tf.max(posting.weighted_tf);
        self.min_length = self.min_length.min(posting.length);
        self.postings.push(posting);
    }

    /// The posting of document `id`, if the term has one.
    pub(super) fn posting(&self, id: u32) -> Option<&Posting> {
        let at = self.postings.binary_search_by_key(&id, |p| p.doc).ok()?;
        self.postings.get(at)
    }
}

#[derive(Debug)]
pub(super) struct DocEntry {
    pub(super) doc: ToolDocument,
    /// Weighted length: Σ field weight × field length.
    pub(super) length: f32,
    pub(super) terms: Vec<u32>,
}

/// Σ field weight × frequency in that field.
pub(super) fn weighted_tf(tf: &[u16; FIELDS], weights: &FieldWeights) -> f32 {
    tf.iter()
        .zip(weights.0.iter())
        .map(|(t, w)| f32::from(*t) * w)
        .sum()
}

/// The position of the first posting at or after document `id` (galloping search: cheap when
/// it is near the start, as it is when candidates are visited in order).
pub(super) fn gallop(postings: &[Posting], id: u32) -> usize {
    let mut step = 1;
    let mut low = 0;
    while low + step < postings.len() && postings[low + step].doc < id {
        low += step;
        step *= 2;
    }
    let high = (low + step + 1).min(postings.len());
    low + postings[low..high].partition_point(|p| p.doc < id)
}

#[cfg(test)]
mod tests {
    use super::*;

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
