//! Cutting a batch of tools into terms on several threads.
//!
//! The batch is cut into shares of consecutive tools with about equal text, one per thread,
//! and rayon cuts each with its own [`Lexicon`]. The index merges the lexicons in tool order
//! ([`Lexicon::absorb`]), which gives the term ids of a one-by-one build.

use rayon::prelude::*;

use crate::document::{Field, FieldWeights, ToolDocument};
use crate::lexicon::{Analysed, Lexicon};
use crate::tokenizer::Tokenizer;

/// Consecutive tools of a batch cut into terms by one lexicon.
#[derive(Debug)]
pub(crate) struct Piece {
    /// The position of its first tool in the batch.
    pub(crate) start: usize,
    pub(crate) lexicon: Lexicon,
    pub(crate) analysed: Analysed,
}

/// Cuts `docs` into terms in `threads` shares of about equal text, on rayon's threads; returns
/// the pieces in tool order, covering every tool once.
///
/// One share per thread, not more: a share's fresh vocabulary stems its words again, which
/// costs more than evening out the work would save (measured at 4k and 40k tools).
pub(crate) fn cut(
    docs: &[ToolDocument],
    threads: usize,
    tokenizer: &Tokenizer,
    weights: &FieldWeights,
) -> Vec<Piece> {
    let mut start = 0;
    let shares: Vec<(usize, usize)> = share_ends(docs, threads.max(1))
        .into_iter()
        .map(|end| {
            let share = (start, end);
            start = end;
            share
        })
        .collect();
    shares
        .into_par_iter()
        .map(|(start, end)| {
            let mut lexicon = Lexicon::new(tokenizer.clone());
            let analysed = lexicon.analyze_all(&docs[start..end], weights);
            Piece {
                start,
                lexicon,
                analysed,
            }
        })
        .collect()
}

/// Cuts `docs` into pieces ending at `ends`, on this thread.
#[cfg(test)]
pub(crate) fn cut_at(
    docs: &[ToolDocument],
    ends: &[usize],
    tokenizer: &Tokenizer,
    weights: &FieldWeights,
) -> Vec<Piece> {
    let mut start = 0;
    ends.iter()
        .map(|&end| {
            let mut lexicon = Lexicon::new(tokenizer.clone());
            let analysed = lexicon.analyze_all(&docs[start..end], weights);
            let piece = Piece {
                start,
                lexicon,
                analysed,
            };
            start = end;
            piece
        })
        .collect()
}

/// Where each of `threads` shares of about equal text ends.
fn share_ends(docs: &[ToolDocument], threads: usize) -> Vec<usize> {
    if threads <= 1 {
        return vec![docs.len()];
    }
    let sizes: Vec<usize> = docs
        .iter()
        .map(|doc| {
            let mut size = 0;
            for field in Field::ALL {
                doc.for_each_field_text(field, |text| size += text.len());
            }
            size
        })
        .collect();
    let total: usize = sizes.iter().sum();
    let mut ends = Vec::with_capacity(threads);
    let mut done = 0;
    for (i, size) in sizes.iter().enumerate() {
        if ends.len() + 1 < threads && done * threads >= total * (ends.len() + 1) {
            ends.push(i);
        }
        done += size;
    }
    ends.resize(threads, docs.len());
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_cut_every_tool_once_in_order() {
        let docs: Vec<ToolDocument> = (0..2_000)
            .map(|i| ToolDocument::new(format!("tool_{i}"), "x ".repeat(1 + i % 7 * 40)))
            .collect();
        for threads in [1, 2, 3, 8] {
            let pieces = cut(&docs, threads, &Tokenizer::new(), &FieldWeights::default());
            let mut next = 0;
            for piece in &pieces {
                assert_eq!(piece.start, next, "{threads} threads");
                next += piece.analysed.len();
            }
            assert_eq!(next, docs.len(), "{threads} threads");
        }
    }
}
