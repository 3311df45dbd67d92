//! [`Fusion`]: one ranking from the lexical and the dense one, over the whole of both lists.

/// How the lexical and the dense rankings are fused.
///
/// Weighted reciprocal-rank fusion (Cormack, Clarke and Büttcher, 2009): a tool scores
/// `(1 - w) / (k + lexical rank) + w / (k + dense rank)`, a side that does not rank it adding
/// nothing. Ranks, not scores, because BM25+ scores have no fixed scale (they grow with the
/// query's length and the corpus) while cosines bunch together: ranks need no calibration per
/// corpus. Both lists are whole (every tool the lexical side matches, every tool the dense side
/// has), so a tool near the top of one side is never lost for missing a cut on the other.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The dense side's share, from 0 (lexical alone) to 1 (dense alone).
    pub dense_weight: f32,
    /// The rank constant: larger flattens the difference between neighbouring ranks.
    pub k: f32,
}

impl Default for Fusion {
    /// Chosen on the benchmark sets' development queries (`cargo xtask bench-search
    /// --embeddings DIR --fusion-sweep`, all-MiniLM-L6-v2): see the README's hybrid search
    /// section for the table and the reasons.
    fn default() -> Self {
        Self {
            dense_weight: 0.5,
            k: 60.0,
        }
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

    /// The fused ranking of two rankings (names, best first): every name of either, best
    /// first.
    pub fn rank<'a>(&self, lexical: &[&'a str], dense: &[&'a str]) -> Vec<&'a str> {
        self.fuse(lexical, dense).into_iter().map(|f| f.name).collect()
    }

    /// Fuses `lexical` and `dense` (names, best first), best first; ties go to the better
    /// lexical rank, then the name.
    pub(crate) fn fuse<'a>(&self, lexical: &[&'a str], dense: &[&'a str]) -> Vec<Fused<'a>> {
        let w = self.dense_weight.clamp(0.0, 1.0);
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

    fn names(
        fusion: Fusion,
        lexical: &[&'static str],
        dense: &[&'static str],
    ) -> Vec<&'static str> {
        fusion
            .fuse(lexical, dense)
            .into_iter()
            .map(|f| f.name)
            .collect()
    }

    #[test]
    fn the_weight_moves_the_ranking_from_one_side_to_the_other() {
        let lexical = ["a", "b", "c"];
        let dense = ["c", "d", "a", "b"];
        let at = |w| Fusion {
            dense_weight: w,
            k: 60.0,
        };
        assert_eq!(names(at(0.0), &lexical, &dense), ["a", "b", "c", "d"]);
        assert_eq!(names(at(1.0), &lexical, &dense), ["c", "d", "a", "b"]);
        // Even: `a` (1st and 3rd) and `c` (3rd and 1st) tie, and the lexical rank breaks it.
        assert_eq!(names(at(0.5), &lexical, &dense), ["a", "c", "b", "d"]);
    }

    #[test]
    fn a_tool_only_one_side_ranks_still_comes_through() {
        let fused = Fusion::default().fuse(&["only_lexical"], &["only_dense"]);
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
        let fused = Fusion::default().fuse(&lexical, &dense);
        assert_eq!(fused[0].name, "x");
        assert_eq!(
            (fused[0].lexical_rank, fused[0].dense_rank),
            (Some(11), Some(11))
        );
    }
}
