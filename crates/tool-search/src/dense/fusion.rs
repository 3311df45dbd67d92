//! [`Fusion`]: one ranking from the lexical and the dense one, over the whole of both lists.

/// How the lexical and the dense rankings are fused.
///
/// Weighted reciprocal-rank fusion (Cormack, Clarke and Büttcher, 2009): a tool scores
/// `(1 - w) / (k + lexical rank) + w / (k + dense rank)`, a side that does not rank it adding
/// nothing. Ranks, not scores, because BM25+ scores have no fixed scale (they grow with the
/// query's length and the corpus) while cosines bunch together: ranks need no calibration per
/// corpus. Both lists are whole (every tool the lexical side matches, every tool the dense side
/// has), so a tool near the top of one side is never lost for missing a cut on the other.
///
/// The dense share `w` follows how well the request's words met a tool: when the best lexical
/// score per word of the query reaches [`Fusion::strong_match`], the words found their tool and
/// the lexical ranking leads ([`Fusion::dense_weight`]); below it (a vague request, a catalogue
/// of terse descriptions) the dense side gets [`Fusion::weak_match_dense_weight`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The dense side's share when the words matched well, from 0 (lexical alone) to 1 (dense
    /// alone).
    pub dense_weight: f32,
    /// The dense side's share when they did not.
    pub weak_match_dense_weight: f32,
    /// The best lexical score per query word (BM25+ under the default configuration) from which
    /// a match counts as good.
    pub strong_match: f32,
    /// The rank constant: larger flattens the difference between neighbouring ranks.
    pub k: f32,
}

impl Default for Fusion {
    /// Chosen on the benchmark sets' development queries with all-MiniLM-L6-v2, on one half of
    /// each set's queries and checked on the other (`cargo xtask bench-search --embeddings DIR
    /// --fusion-sweep`): see the README's hybrid search section for the table and the reasons.
    fn default() -> Self {
        Self {
            dense_weight: 0.3,
            weak_match_dense_weight: 0.6,
            strong_match: 0.6,
            k: 10.0,
        }
    }
}

impl Fusion {
    /// Plain weighted reciprocal-rank fusion: the dense share `w` whatever the match.
    pub fn constant(w: f32, k: f32) -> Self {
        Self {
            dense_weight: w,
            weak_match_dense_weight: w,
            strong_match: 0.0,
            k,
        }
    }

    /// The dense share for `query` whose best lexical score is `top_lexical` (`None`: no tool
    /// matched a word).
    pub fn weight(&self, query: &str, top_lexical: Option<f32>) -> f32 {
        let words = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .count()
            .max(1);
        let per_word = top_lexical.unwrap_or(0.0) / words as f32;
        let w = if per_word > self.strong_match {
            self.dense_weight
        } else {
            self.weak_match_dense_weight
        };
        w.clamp(0.0, 1.0)
    }
}

/// A tool's place on each side and its fused score.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused<'a> {
    pub(crate) name: &'a str,
    pub(crate) score: f32,
    /// 1-based.
    pub(crate) lexical_rank: Option<usize>,
    /// 1-based.
    pub(crate) dense_rank: Option<usize>,
}

impl Fusion {
    /// What the side gives a tool at `rank` (1-based).
    fn share(&self, weight: f32, rank: usize) -> f32 {
        weight / (self.k + rank as f32)
    }

    /// The fused ranking of two rankings (names, best first) with the dense share `w`: every
    /// name of either, best first.
    pub fn rank<'a>(&self, w: f32, lexical: &[&'a str], dense: &[&'a str]) -> Vec<&'a str> {
        self.fuse(w, lexical, dense)
            .into_iter()
            .map(|f| f.name)
            .collect()
    }

    /// Fuses `lexical` and `dense` (names, best first) with the dense share `w`, best first;
    /// ties go to the better lexical rank, then the name.
    pub(crate) fn fuse<'a>(
        &self,
        w: f32,
        lexical: &[&'a str],
        dense: &[&'a str],
    ) -> Vec<Fused<'a>> {
        let w = w.clamp(0.0, 1.0);
        let mut fused: Vec<Fused<'a>> = Vec::with_capacity(lexical.len().max(dense.len()));
        let mut at: rustc_hash::FxHashMap<&'a str, usize> = rustc_hash::FxHashMap::default();
        at.reserve(lexical.len().max(dense.len()));
        for (i, name) in lexical.iter().enumerate() {
            at.insert(name, fused.len());
            fused.push(Fused {
                name,
                score: self.share(1.0 - w, i + 1),
                lexical_rank: Some(i + 1),
                dense_rank: None,
            });
        }
        for (i, name) in dense.iter().enumerate() {
            let share = self.share(w, i + 1);
            match at.get(name) {
                Some(&j) => {
                    fused[j].score += share;
                    fused[j].dense_rank = Some(i + 1);
                }
                None => fused.push(Fused {
                    name,
                    score: share,
                    lexical_rank: None,
                    dense_rank: Some(i + 1),
                }),
            }
        }
        fused.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| {
                    a.lexical_rank
                        .unwrap_or(usize::MAX)
                        .cmp(&b.lexical_rank.unwrap_or(usize::MAX))
                })
                .then_with(|| a.name.cmp(b.name))
        });
        fused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(w: f32, lexical: &[&'static str], dense: &[&'static str]) -> Vec<&'static str> {
        Fusion::constant(w, 60.0).rank(w, lexical, dense)
    }

    #[test]
    fn the_weight_moves_the_ranking_from_one_side_to_the_other() {
        let lexical = ["a", "b", "c"];
        let dense = ["c", "d", "a", "b"];
        assert_eq!(names(0.0, &lexical, &dense), ["a", "b", "c", "d"]);
        assert_eq!(names(1.0, &lexical, &dense), ["c", "d", "a", "b"]);
        // Even: `a` (1st and 3rd) and `c` (3rd and 1st) tie, and the lexical rank breaks it.
        assert_eq!(names(0.5, &lexical, &dense), ["a", "c", "b", "d"]);
    }

    #[test]
    fn a_tool_only_one_side_ranks_still_comes_through() {
        let fused = Fusion::default().fuse(0.5, &["only_lexical"], &["only_dense"]);
        assert_eq!(fused.len(), 2);
        assert!(fused.iter().all(|f| f.score > 0.0));
        assert_eq!(fused[0].lexical_rank, Some(1));
        assert_eq!(fused[0].dense_rank, None);
        assert_eq!(fused[1].dense_rank, Some(1));
    }

    #[test]
    fn deep_ranks_count_so_whole_lists_matter() {
        // `x` is 11th on both sides: past a top-10 cut on either, yet fused above a tool that
        // is 1st on one side and absent from the other.
        let mut lexical: Vec<&str> =
            vec!["l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8", "l9", "l10"];
        let mut dense: Vec<&str> =
            vec!["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10"];
        lexical.push("x");
        dense.push("x");
        let fused = Fusion::constant(0.5, 60.0).fuse(0.5, &lexical, &dense);
        assert_eq!(fused[0].name, "x");
        assert_eq!(
            (fused[0].lexical_rank, fused[0].dense_rank),
            (Some(11), Some(11))
        );
    }

    #[test]
    fn the_dense_side_weighs_more_when_the_words_met_no_tool_well() {
        let fusion = Fusion::default();
        // 2.4 over four words: 0.6 a word, not above the bar.
        assert_eq!(fusion.weight("post a slack message", Some(2.4)), 0.6);
        assert_eq!(fusion.weight("post a slack message", Some(2.5)), 0.3);
        assert_eq!(fusion.weight("post a slack message", None), 0.6);
        assert_eq!(Fusion::constant(0.2, 60.0).weight("anything", None), 0.2);
    }
}
