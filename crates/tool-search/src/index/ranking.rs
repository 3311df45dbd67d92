//! Ranking: the query's terms scored one at a time over their postings, into a running score
//! per document ([`super::running`]), with max-score pruning ([`super::pruning`]) and the filters that need a
//! document's every term (required words, the CJK gate).

use std::cell::RefCell;

use super::postings::TermEntry;
use super::pruning::{MIN_POSTINGS_TO_PRUNE, Pruner};
use super::query_terms::QueryWords;
use super::running::{Acc, PlannedTerm, Running};
use super::scorer::{CorpusStats, TermWeight, Weight};
use super::{Hit, SearchIndex};

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

    /// Puts in `adds` what each of the query's `terms` adds to [`Acc::matched`] (nothing: left
    /// out); returns how many required terms count.
    fn adds(terms: &[(u32, bool)], entries: &[TermEntry], adds: &mut Vec<u32>) -> u32 {
        let (mut required_count, mut cjk_count, mut other_count) = (0u32, 0u32, 0u32);
        adds.clear();
        adds.extend(terms.iter().map(|(term, is_required)| {
            let mut add = if entries[*term as usize].cjk {
                if cjk_count == Self::CJK_ROOM {
                    return 0;
                }
                cjk_count += 1;
                Self::CJK
            } else {
                if other_count == Self::OTHER_ROOM {
                    return 0;
                }
                other_count += 1;
                Self::OTHER
            };
            if *is_required && required_count < Self::REQUIRED_ROOM {
                required_count += 1;
                add += Self::REQUIRED;
            }
            add
        }));
        required_count
    }
}

/// What a running document needs, once every term is scored, to be a result.
#[derive(Clone, Copy)]
struct Gate {
    /// Every required term.
    required: u32,
    /// This many of the query's CJK bigrams (0 to 2), unless another term matches too.
    cjk_needed: u32,
}

impl Gate {
    /// Whether the gate drops nothing (then every scored document may be a result).
    fn is_open(self) -> bool {
        self.required == 0 && self.cjk_needed == 0
    }

    fn passes(self, matched: u32) -> bool {
        Matched::required(matched) == self.required
            && (self.cjk_needed == 0
                || Matched::other(matched) > 0
                || Matched::cjk(matched) >= self.cjk_needed)
    }
}

/// Buffers a query reuses, per thread.
#[derive(Default)]
struct Scratch {
    words: QueryWords,
    running: Running,
    pruner: Pruner,
    /// Results so far: (score, document id).
    hits: Vec<(f32, u32)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

impl SearchIndex {
    /// The best `limit` tools for the keywords `text`, each of the `required` words in all.
    pub(super) fn rank(&self, text: &str, required: &[String], limit: usize) -> Vec<Hit> {
        self.rank_with(text, required, limit, MIN_POSTINGS_TO_PRUNE)
    }

    /// Ranks with max-score pruning checked only while the terms still to come have more than
    /// `prune_from` postings (`usize::MAX`: never). Pruning never changes the results: the unit
    /// tests compare checking at every term with never checking.
    pub(super) fn rank_with(
        &self,
        text: &str,
        required: &[String],
        limit: usize,
        prune_from: usize,
    ) -> Vec<Hit> {
        if limit == 0 {
            return Vec::new();
        }
        SCRATCH.with_borrow_mut(|scratch| {
            let Scratch {
                words,
                running,
                pruner,
                hits,
            } = scratch;
            let cjk_terms = self.query_terms(text, required, words);
            let gate = Gate {
                required: Matched::adds(&words.terms, &self.terms, &mut running.adds),
                cjk_needed: cjk_terms.min(2) as u32,
            };
            let exact = self.exact_bonus(text, &mut words.lower);
            let stats = self.stats();
            self.plan(&words.terms, &stats, running);
            // Pruning is exact only when every document that scores is a result: required terms
            // and the CJK gate drop documents after scoring, so they turn it off. So do too few
            // postings for a check to be worth making.
            let may_prune = prune_from < running.remaining[0].1 && gate.is_open();
            pruner.start(may_prune, prune_from, limit);
            for pos in 0..running.order.len() {
                self.score_term(pos, &stats, exact, pruner.candidates_only(), running);
                pruner.after_term(pos, running, exact, self.docs.len());
            }
            self.gather(running, hits, gate, exact, pruner.floor(), limit);
            self.top(hits, limit)
        })
    }

    /// Readies `running` for a query: no document running, the terms that can score in
    /// max-score order, and what the terms from each position on can add.
    fn plan(&self, terms: &[(u32, bool)], stats: &CorpusStats<'_>, running: &mut Running) {
        let Running {
            accs,
            touched,
            adds,
            order,
            remaining,
        } = running;
        if accs.len() < self.docs.len() {
            accs.resize(self.docs.len(), Acc::default());
        }
        touched.clear();
        let scorer = self.config.scorer;
        // The terms with their position in the query, idf and the most each can add.
        order.clear();
        order.extend(
            terms
                .iter()
                .enumerate()
                .filter(|(i, (term, _))| {
                    self.terms[*term as usize].df > 0 && adds.get(*i).is_some_and(|a| *a != 0)
                })
                .map(|(position, &(term, _))| {
                    let entry = &self.terms[term as usize];
                    let weight = Weight::of_term(scorer, entry.df, stats);
                    PlannedTerm {
                        position,
                        term,
                        idf: weight.idf(),
                        bound: weight.max_score(entry),
                    }
                }),
        );
        // Terms in decreasing order of the most they can add (max-score order).
        order.sort_unstable_by(|a, b| {
            b.bound
                .total_cmp(&a.bound)
                .then(a.position.cmp(&b.position))
        });
        remaining.clear();
        remaining.resize(order.len() + 1, (0.0, 0));
        for j in (0..order.len()).rev() {
            let postings = self.terms[order[j].term as usize].postings.len();
            remaining[j] = (
                remaining[j + 1].0 + order[j].bound,
                remaining[j + 1].1 + postings,
            );
        }
    }

    /// Scores the term at `pos` in max-score order: adds its score to each of its documents,
    /// or, once `candidates_only`, to each of those already running.
    fn score_term(
        &self,
        pos: usize,
        stats: &CorpusStats<'_>,
        exact: Option<(u32, f32)>,
        candidates_only: bool,
        running: &mut Running,
    ) {
        let planned = running.order[pos];
        let postings = &self.terms[planned.term as usize].postings;
        let add = running
            .adds
            .get(planned.position)
            .copied()
            .unwrap_or_default();
        // The scorer is chosen once per term, not per posting.
        match Weight::new(self.config.scorer, planned.idf, stats) {
            Weight::Bm25Plus(w) => running.score(postings, add, w, candidates_only, exact),
            Weight::TfIdf(w) => running.score(postings, add, w, candidates_only, exact),
        }
    }

    /// Puts the running documents that pass `gate` and reach `floor` in `hits`, an exact
    /// name's bonus added; every running score is cleared for the next query.
    fn gather(
        &self,
        running: &mut Running,
        hits: &mut Vec<(f32, u32)>,
        gate: Gate,
        exact: Option<(u32, f32)>,
        mut floor: f32,
        limit: usize,
    ) {
        hits.clear();
        // An exact name's bonus goes to its running score, if it has one, before the filters
        // below; else it is a result of its own.
        let mut exact_alone = exact;
        if let Some((id, bonus)) = exact
            && let Some(acc) = running.accs.get_mut(id as usize)
            && acc.matched != 0
        {
            acc.score += bonus;
            exact_alone = None;
        }
        for &id in running.touched.iter() {
            let acc = std::mem::take(&mut running.accs[id as usize]);
            if !gate.passes(acc.matched) || acc.score < floor {
                continue;
            }
            hits.push((acc.score, id));
            // Keep the candidate list short: every so often cut it to the best `limit`.
            // Ties with the last kept score stay, so that ties are still broken by name.
            if hits.len() >= 2 * limit + 8 {
                hits.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
                floor = hits[limit - 1].0;
                hits.retain(|h| h.0 >= floor);
            }
        }
        if let Some((id, bonus)) = exact_alone
            && gate.required == 0
        {
            hits.push((bonus, id));
        }
    }

    /// The best `limit` of `hits`, best first, ties broken by name.
    fn top(&self, hits: &mut Vec<(f32, u32)>, limit: usize) -> Vec<Hit> {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::ToolDocument;
    use crate::index::{Scorer, SearchConfig};

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
}
