//! Max-score pruning (Turtle and Flood, "Query evaluation: strategies and optimizations",
//! 1995): once the `limit`-th best running score is above what the terms still to come could
//! give a document they alone match, no new document can enter the results; documents that
//! cannot catch up are dropped, and the rest are only updated from then on.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::running::Running;

/// The fewest postings the terms still to come must have for a max-score check to be worth
/// its pass over the running documents (and its unpredictable branches): below this, streaming
/// them costs less than any check could save (measured at 500 and 4k tools).
pub(super) const MIN_POSTINGS_TO_PRUNE: usize = 1024;

/// One query's pruning state, and buffers reused from query to query.
#[derive(Default)]
pub(super) struct Pruner {
    enabled: bool,
    /// Checks are made only while the terms still to come have more postings than this.
    from: usize,
    limit: usize,
    /// Whether only the documents already running are still updated.
    candidates_only: bool,
    /// Whether a check was made, the `limit`-th best running score it found, and what the
    /// terms processed by then could give.
    checked: bool,
    last_kth: f32,
    done_at_check: f32,
    /// For [`kth_best`].
    best: BinaryHeap<Reverse<TotalF32>>,
    /// For [`in_id_order`].
    bits: Vec<u64>,
}

impl Pruner {
    /// Readies the pruner for a query with `limit` results; `enabled` when pruning cannot
    /// change them.
    pub(super) fn start(&mut self, enabled: bool, from: usize, limit: usize) {
        self.enabled = enabled;
        self.from = from;
        self.limit = limit;
        self.candidates_only = false;
        self.checked = false;
        self.last_kth = 0.0;
        self.done_at_check = 0.0;
    }

    /// Whether only the documents already running are still updated.
    pub(super) fn candidates_only(&self) -> bool {
        self.candidates_only
    }

    /// The lowest score a result can have: the last check's threshold, since the `limit`
    /// documents that reached it are still running and scores only grow (checks are made only
    /// without required terms or the CJK gate, which could drop them).
    pub(super) fn floor(&self) -> f32 {
        if self.checked {
            self.last_kth
        } else {
            f32::NEG_INFINITY
        }
    }

    /// Checks, after the term at `pos` in max-score order, whether documents can be dropped,
    /// and drops them; `docs` is the number of document ids.
    pub(super) fn after_term(
        &mut self,
        pos: usize,
        running: &mut Running,
        exact: Option<(u32, f32)>,
        docs: usize,
    ) {
        let (rest, rest_postings) = running.remaining[pos + 1];
        let done = running.remaining[0].0 - rest;
        // A check costs a pass over the running documents, so it is made only when it can
        // pass: the `limit`-th best running score is at most the one the last check found plus
        // what the terms processed since could add to it.
        let could_pass = rest < self.last_kth + (done - self.done_at_check);
        let running_now = running.touched.len();
        if !(self.enabled
            && could_pass
            && running_now >= self.limit
            && rest_postings > (2 * running_now).max(self.from))
        {
            return;
        }
        // Scores only grow and the documents that reached the last check's threshold are
        // still running, so it bounds this one from below.
        let threshold = kth_best(
            running
                .touched
                .iter()
                .map(|id| running.accs[*id as usize].score),
            self.limit,
            self.floor(),
            &mut self.best,
        );
        self.checked = true;
        self.last_kth = threshold;
        self.done_at_check = done;
        if rest < threshold {
            running.keep_reaching(threshold, rest, exact);
            if !self.candidates_only {
                if let Some((e, _)) = exact
                    && !running.touched.contains(&e)
                {
                    running.touched.push(e);
                }
                in_id_order(&mut running.touched, &mut self.bits, docs);
                self.candidates_only = true;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
