//! `--embeddings DIR`: the dense side alone (`dense`) and fused with ours (`hybrid`), their
//! fusion swept over the development queries' two halves, and their speed.
//!
//! Without the `embeddings` feature this module only says how to get it: `bench-search`
//! re-runs itself with the feature when `--embeddings` is given.

#[cfg(feature = "embeddings")]
pub use with_model::*;

#[cfg(not(feature = "embeddings"))]
mod without_model {
    use super::super::data::Set;
    use super::super::engines::Engine;

    /// A model (never, without the feature).
    pub enum Model {}

    impl Model {
        pub fn open(_folder: &std::path::Path) -> anyhow::Result<Self> {
            anyhow::bail!("xtask was built without the embeddings feature")
        }
    }

    pub fn engine(
        name: &str,
        _set: &Set,
        model: Option<&Model>,
    ) -> anyhow::Result<Box<dyn Engine>> {
        match model {
            Some(never) => match *never {},
            None => anyhow::bail!("the {name} configuration needs --embeddings DIR"),
        }
    }

    pub fn sweep(_sets: &[Set], model: &Model, _: Option<&std::path::Path>) -> anyhow::Result<()> {
        match *model {}
    }

    pub fn speed(_sets: &[Set], _sizes: &[usize], model: &Model) -> anyhow::Result<()> {
        match *model {}
    }
}

#[cfg(not(feature = "embeddings"))]
pub use without_model::*;

#[cfg(feature = "embeddings")]
mod with_model {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tool_search::{
        DenseIndex, Embedder, Fusion, HybridIndex, Query, SearchConfig, SentenceEncoder,
        ToolDocument,
    };

    use super::super::data::Set;
    use super::super::engines::Engine;
    use super::super::{score, speed};
    use crate::alloc;

    /// The model the dense side runs, and where its embeddings are cached.
    pub struct Model {
        pub embedder: Arc<dyn Embedder>,
        pub cache: PathBuf,
    }

    impl Model {
        pub fn open(folder: &Path) -> anyhow::Result<Self> {
            let started = Instant::now();
            let encoder = SentenceEncoder::open(folder)?;
            eprintln!(
                "bench-search: model {} loaded in {:.2} s",
                encoder.describe(),
                started.elapsed().as_secs_f64()
            );
            Ok(Self {
                embedder: Arc::new(encoder),
                cache: crate::tidy::workspace_root()?.join("target/bench-search/embeddings"),
            })
        }

        fn dense(&self) -> DenseIndex {
            DenseIndex::new(Arc::clone(&self.embedder), Some(&self.cache))
        }
    }

    /// The dense side alone: every query embedded (even one the model cannot read, to show
    /// what the model makes of it), tools by cosine.
    pub struct Dense(DenseIndex);

    impl Engine for Dense {
        fn search(&mut self, query: &str, k: usize) -> Vec<String> {
            let Ok(vector) = self.0.embedder().embed_query(query) else {
                return Vec::new();
            };
            let ranked = self.0.rank(&vector);
            ranked
                .into_iter()
                .take(k)
                .map(|(n, _)| n.to_owned())
                .collect()
        }

        fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()> {
            Ok(self.0.add_all(docs)?)
        }

        fn remove(&mut self, names: &[String]) -> anyhow::Result<()> {
            for name in names {
                self.0.remove(name);
            }
            Ok(())
        }
    }

    /// Ours and the dense side, fused.
    pub struct Hybrid(pub HybridIndex);

    fn keywords(query: &str) -> Query {
        // Benchmark queries are free text: searched as keywords even when they look like syntax.
        Query::Keywords {
            text: query.to_owned(),
            required: Vec::new(),
        }
    }

    impl Engine for Hybrid {
        fn search(&mut self, query: &str, k: usize) -> Vec<String> {
            self.0
                .run(&keywords(query), k)
                .hits
                .into_iter()
                .map(|h| h.name)
                .collect()
        }

        fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()> {
            Ok(self.0.add_all(docs.to_vec())?)
        }

        fn remove(&mut self, names: &[String]) -> anyhow::Result<()> {
            for name in names {
                self.0.remove(name);
            }
            Ok(())
        }
    }

    pub fn engine(name: &str, set: &Set, model: Option<&Model>) -> anyhow::Result<Box<dyn Engine>> {
        let Some(model) = model else {
            anyhow::bail!("the {name} configuration needs --embeddings DIR");
        };
        let started = Instant::now();
        let mut dense = model.dense();
        let built: Box<dyn Engine> = if name == "dense" {
            dense.add_all(&set.tools)?;
            Box::new(Dense(dense))
        } else {
            Box::new(Hybrid(HybridIndex::from_documents(
                SearchConfig::default(),
                set.tools.clone(),
                dense,
            )?))
        };
        eprintln!(
            "bench-search: {name} index of {} ({} tools) built in {:.1} s",
            set.name,
            set.tools.len(),
            started.elapsed().as_secs_f64()
        );
        Ok(built)
    }

    /// Each query's whole lexical and dense rankings with their scores (`None`: the model
    /// cannot read the query).
    type Lists = Vec<(Vec<(String, f32)>, Option<Vec<(String, f32)>>)>;

    fn lists(set: &Set, model: &Model) -> anyhow::Result<Lists> {
        let index =
            HybridIndex::from_documents(SearchConfig::default(), set.tools.clone(), model.dense())?;
        let all = index.len();
        set.cases
            .iter()
            .map(|case| {
                let lexical = index.lexical().run(&keywords(&case.query), all);
                let lexical = lexical
                    .hits
                    .into_iter()
                    .map(|h| (h.name, h.score))
                    .collect();
                let dense = index.dense().query_vector(&case.query)?.map(|vector| {
                    let ranked = index.dense().rank(&vector);
                    ranked.into_iter().map(|(n, s)| (n.to_owned(), s)).collect()
                });
                Ok((lexical, dense))
            })
            .collect()
    }

    /// Writes each query's lists (their first 200 tools) to `dir/<set>.jsonl`, to study
    /// other fusions.
    fn write_lists(dir: &Path, set: &Set, lists: &Lists) -> anyhow::Result<()> {
        use std::io::Write as _;
        std::fs::create_dir_all(dir)?;
        let mut file = std::io::BufWriter::new(std::fs::File::create(
            dir.join(format!("{}.jsonl", set.name)),
        )?);
        for (case, (lexical, dense)) in set.cases.iter().zip(lists) {
            let cut = |l: &[(String, f32)]| l.iter().take(200).cloned().collect::<Vec<_>>();
            let line = serde_json::json!({
                "id": case.id, "gold": case.gold, "lexical": cut(lexical),
                "dense": dense.as_deref().map(cut),
            });
            writeln!(file, "{line}")?;
        }
        Ok(())
    }

    const WEIGHTS: [f32; 9] = [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0];
    const KS: [f32; 3] = [10.0, 30.0, 60.0];

    /// The fusions swept: a constant dense share at each weight and k, then shares that follow
    /// the lexical match (strong-match weight, weak-match weight, bar per word) at k 10.
    fn grid() -> Vec<Fusion> {
        let mut grid: Vec<Fusion> = WEIGHTS
            .iter()
            .flat_map(|&w| KS.iter().map(move |&k| Fusion::constant(w, k)))
            .collect();
        for strong_match in [0.4, 0.6, 0.8, 1.0] {
            for (dense_weight, weak_match_dense_weight) in
                [(0.3, 0.6), (0.3, 0.7), (0.3, 0.8), (0.2, 0.6)]
            {
                grid.push(Fusion {
                    dense_weight,
                    weak_match_dense_weight,
                    strong_match,
                    k: 10.0,
                });
            }
        }
        grid
    }

    /// Mean nDCG@10 of `fusion` over the cases of one half (`half` 0: even positions, 1: odd).
    fn half_ndcg(set: &Set, lists: &Lists, fusion: Fusion, half: usize) -> f64 {
        let mut total = 0.0;
        let mut n = 0usize;
        for (case, (lexical_scores, dense)) in set.cases.iter().zip(lists).skip(half).step_by(2) {
            let lexical: Vec<&str> = lexical_scores.iter().map(|(n, _)| n.as_str()).collect();
            let ranked: Vec<String> = match dense {
                Some(dense) => {
                    let dense: Vec<&str> = dense.iter().map(|(n, _)| n.as_str()).collect();
                    let top = lexical_scores.first().map(|(_, s)| *s);
                    let fused = fusion.rank(fusion.weight(&case.query, top), &lexical, &dense);
                    fused.into_iter().take(10).map(str::to_owned).collect()
                }
                None => lexical.iter().take(10).map(|s| (*s).to_owned()).collect(),
            };
            total += score(&ranked, &case.gold).ndcg10;
            n += 1;
        }
        total / n.max(1) as f64
    }

    /// Prints nDCG@10 per set and half for a grid of fusions, and the best on each half.
    pub fn sweep(sets: &[Set], model: &Model, lists_out: Option<&Path>) -> anyhow::Result<()> {
        let all: Vec<Lists> = sets
            .iter()
            .map(|s| lists(s, model))
            .collect::<anyhow::Result<_>>()?;
        if let Some(dir) = lists_out {
            for (set, lists) in sets.iter().zip(&all) {
                write_lists(dir, set, lists)?;
            }
        }
        println!(
            "## Fusion sweep (nDCG@10 on the dev queries' halves: A = even positions, B = odd)\n"
        );
        print!("| dense weight (strong / weak match) | bar | k |");
        for set in sets {
            print!(" {} A | {} B |", set.name, set.name);
        }
        println!(" mean A | mean B |");
        println!("|{}", " --- |".repeat(5 + 2 * sets.len()));
        let mut best: [(f64, Fusion); 2] = [(0.0, Fusion::default()); 2];
        for fusion in grid() {
            print!(
                "| {:.1} / {:.1} | {:.1} | {} |",
                fusion.dense_weight, fusion.weak_match_dense_weight, fusion.strong_match, fusion.k
            );
            let mut means = [0.0; 2];
            for (set, lists) in sets.iter().zip(&all) {
                for (half, mean) in means.iter_mut().enumerate() {
                    let v = half_ndcg(set, lists, fusion, half);
                    *mean += v / sets.len() as f64;
                    print!(" {v:.3} |");
                }
            }
            println!(" {:.3} | {:.3} |", means[0], means[1]);
            for (mean, best) in means.iter().zip(best.iter_mut()) {
                if *mean > best.0 {
                    *best = (*mean, fusion);
                }
            }
        }
        println!();
        for (half, (mean, fusion)) in best.iter().enumerate() {
            println!(
                "best on half {}: {fusion:?} (mean {mean:.3})",
                ["A", "B"][half]
            );
        }
        println!();
        Ok(())
    }

    fn percentile(times: &mut [Duration], p: usize) -> Duration {
        times.sort();
        times[(times.len() * p / 100).min(times.len().saturating_sub(1))]
    }

    /// Builds, cache and query latency of the hybrid at each size.
    pub fn speed(sets: &[Set], sizes: &[usize], model: &Model) -> anyhow::Result<()> {
        let queries: Vec<&str> = {
            let all: Vec<&str> = sets
                .iter()
                .flat_map(|s| s.cases.iter().map(|c| c.query.as_str()))
                .collect();
            let step = (all.len() / speed::QUERIES).max(1);
            all.into_iter().step_by(step).take(speed::QUERIES).collect()
        };
        println!(
            "## Hybrid speed ({} queries, 3 passes; builds embed on every core rayon has)\n",
            queries.len()
        );
        println!(
            "| tools | first build (embedding) | second build (cache) | query p50 | query p99 | memory/tool (lexical + dense) | add 50-tool server | remove it |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for &size in sizes {
            let docs = speed::corpus(sets, size);
            let cache = tempfile_dir(size)?;
            let fresh = |cache: &Path| {
                let dense = DenseIndex::new(Arc::clone(&model.embedder), Some(cache));
                HybridIndex::from_documents(SearchConfig::default(), docs.clone(), dense)
            };
            let started = Instant::now();
            drop(fresh(&cache)?);
            let first = started.elapsed();
            let before = alloc::allocated();
            let started = Instant::now();
            let index = fresh(&cache)?;
            let second = started.elapsed();
            anyhow::ensure!(
                index.dense().embedded() == 0,
                "the second build embedded again"
            );
            let bytes = alloc::allocated().saturating_sub(before) as f64 / size as f64;
            let mut engine = Hybrid(index);
            let mut times = Vec::new();
            for _ in 0..3 {
                for q in &queries {
                    let t = Instant::now();
                    std::hint::black_box(engine.search(q, 10));
                    times.push(t.elapsed());
                }
            }
            let server = speed::server_tools();
            let names: Vec<String> = server.iter().map(|d| d.name.clone()).collect();
            let t = Instant::now();
            engine.add(&server)?;
            let add = t.elapsed();
            anyhow::ensure!(
                engine
                    .search("manages widgets gadgets gizmos", 10)
                    .iter()
                    .any(|n| n.starts_with("mcp__benchsrv__")),
                "the added server's tools are not found after adding them"
            );
            let t = Instant::now();
            engine.remove(&names)?;
            let remove = t.elapsed();
            let _ = std::fs::remove_dir_all(&cache);
            println!(
                "| {size} | {:.1} s | {:.0} ms | {:.2} ms | {:.2} ms | {:.0} B | {:.0} ms | {:.2} ms |",
                first.as_secs_f64(),
                second.as_secs_f64() * 1e3,
                percentile(&mut times, 50).as_secs_f64() * 1e3,
                percentile(&mut times, 99).as_secs_f64() * 1e3,
                bytes,
                add.as_secs_f64() * 1e3,
                remove.as_secs_f64() * 1e3,
            );
        }
        println!();
        Ok(())
    }

    /// An empty folder for one size's cache.
    fn tempfile_dir(size: usize) -> anyhow::Result<PathBuf> {
        let dir = crate::tidy::workspace_root()?.join(format!(
            "target/bench-search/speed-cache-{size}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
}
