//! Cutting a batch of tools into terms on several threads.
//!
//! Each thread starts on a share of about equal text and cuts it, one tool after another, with
//! its own [`Lexicon`]. Equal text is not equal work (a share with more distinct words has more
//! to stem), so a thread that runs out takes the back half of the largest share still being cut
//! and goes on with a new lexicon. Every lexicon covers consecutive tools; the index merges them
//! in tool order ([`Lexicon::absorb`]), which gives the term ids of a one-by-one build.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::document::{Field, FieldWeights, ToolDocument};
use crate::lexicon::{Analysed, Lexicon};
use crate::tokenizer::Tokenizer;

/// A thread with nothing left takes half of another's tools only when that half is at least
/// this many: each piece costs a fresh vocabulary, and merging it.
const MIN_STEAL: usize = 64;

/// Consecutive tools of a batch cut into terms by one lexicon.
#[derive(Debug)]
pub(crate) struct Piece {
    /// The position of its first tool in the batch.
    pub(crate) start: usize,
    pub(crate) lexicon: Lexicon,
    pub(crate) analysed: Analysed,
}

/// Cuts `docs` into terms on up to `threads` threads, this one included; returns the pieces in
/// tool order, covering every tool once.
pub(crate) fn cut(
    docs: &[ToolDocument],
    threads: usize,
    tokenizer: &Tokenizer,
    weights: &FieldWeights,
) -> Vec<Piece> {
    // Positions are packed two to a word.
    let threads = if u32::try_from(docs.len()).is_ok() {
        threads.max(1)
    } else {
        1
    };
    let mut start = 0;
    let ranges: Vec<Range> = share_ends(docs, threads)
        .into_iter()
        .map(|end| {
            let range = Range::new(start, end);
            start = end;
            range
        })
        .collect();
    let work = |me: usize| {
        Worker {
            docs,
            ranges: &ranges,
            me,
            tokenizer,
            weights,
        }
        .run()
    };
    let mut pieces = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..ranges.len())
            .filter_map(|me| {
                std::thread::Builder::new()
                    .name("tool-search-build".into())
                    .spawn_scoped(scope, move || work(me))
                    .ok()
            })
            .collect();
        let mut pieces = work(0);
        for helper in helpers {
            match helper.join() {
                Ok(more) => pieces.extend(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        pieces
    });
    // What a thread that could not be started left is cut here.
    for (me, range) in ranges.iter().enumerate().skip(1) {
        if range.left() > 0 {
            pieces.extend(work(me));
        }
    }
    pieces.sort_unstable_by_key(|piece| piece.start);
    pieces
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

/// One thread's part in [`cut`].
struct Worker<'a> {
    docs: &'a [ToolDocument],
    ranges: &'a [Range],
    /// This thread's range.
    me: usize,
    tokenizer: &'a Tokenizer,
    weights: &'a FieldWeights,
}

impl Worker<'_> {
    fn run(self) -> Vec<Piece> {
        let mine = &self.ranges[self.me];
        let mut pieces = Vec::new();
        let mut start = mine.front();
        loop {
            let mut lexicon = Lexicon::new(self.tokenizer.clone());
            let mut analysed = Analysed::default();
            while let Some(i) = mine.take_front() {
                lexicon.analyze_into(&self.docs[i], self.weights, &mut analysed);
            }
            if !analysed.is_empty() {
                pieces.push(Piece {
                    start,
                    lexicon,
                    analysed,
                });
            }
            let stolen = self
                .ranges
                .iter()
                .max_by_key(|range| range.left())
                .and_then(Range::take_back_half);
            let Some((front, back)) = stolen else {
                return pieces;
            };
            mine.set(front, back);
            start = front;
        }
    }
}

/// The tools a thread has yet to cut, `front..back`, in one word: the thread takes them one by
/// one from the front, and a thread with none left may take the back half, so that both always
/// agree on who cuts which tool.
#[derive(Debug)]
struct Range(AtomicU64);

impl Range {
    fn new(front: usize, back: usize) -> Self {
        Self(AtomicU64::new(pack(front, back)))
    }

    fn front(&self) -> usize {
        unpack(self.0.load(Ordering::Acquire)).0
    }

    fn left(&self) -> usize {
        let (front, back) = unpack(self.0.load(Ordering::Acquire));
        back.saturating_sub(front)
    }

    /// Gives this range new tools (only its own thread, once it has none left).
    fn set(&self, front: usize, back: usize) {
        self.0.store(pack(front, back), Ordering::Release);
    }

    /// The next tool, taken from the front.
    fn take_front(&self) -> Option<usize> {
        self.update(|front, back| (front < back).then_some(((front + 1, back), front)))
    }

    /// The back half, when it is worth taking.
    fn take_back_half(&self) -> Option<(usize, usize)> {
        self.update(|front, back| {
            let middle = front + back.saturating_sub(front) / 2;
            (back.saturating_sub(middle) >= MIN_STEAL).then_some(((front, middle), (middle, back)))
        })
    }

    /// Replaces `(front, back)` by what `f` returns with its result, unless it returns `None`.
    fn update<T>(&self, f: impl Fn(usize, usize) -> Option<((usize, usize), T)>) -> Option<T> {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let (front, back) = unpack(current);
            let ((new_front, new_back), result) = f(front, back)?;
            match self.0.compare_exchange_weak(
                current,
                pack(new_front, new_back),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(result),
                Err(now) => current = now,
            }
        }
    }
}

fn pack(front: usize, back: usize) -> u64 {
    front as u64 | (back as u64) << 32
}

fn unpack(word: u64) -> (usize, usize) {
    ((word & u64::from(u32::MAX)) as usize, (word >> 32) as usize)
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
    fn a_range_is_shared_out_once() {
        let range = Range::new(3, 300);
        assert_eq!(range.take_front(), Some(3));
        assert_eq!(range.take_back_half(), Some((152, 300)));
        assert_eq!((range.front(), range.left()), (4, 148));
        assert_eq!(range.take_back_half(), Some((78, 152)));
        // 4..78: half of it is too little to take.
        assert_eq!(range.take_back_half(), None);
        let taken: Vec<usize> = std::iter::from_fn(|| range.take_front()).collect();
        assert_eq!(taken, (4..78).collect::<Vec<_>>());
        assert_eq!(range.left(), 0);
    }

    #[test]
    fn threads_taking_from_each_other_cut_every_tool_once_in_order() {
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
