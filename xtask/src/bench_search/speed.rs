//! Speed, memory and updates at 500, 4k, 40k and 100k tools, for us and the peers.

use std::path::Path;
use std::time::{Duration, Instant};

use tool_search::{SearchConfig, ToolDocument};

use super::data::Set;
use super::engines::{Bm25Crate, Engine, Ours, Tantivy};
use crate::alloc;

/// The corpus sizes measured by default.
pub const SIZES: [usize; 4] = [500, 4_000, 40_000, 100_000];
pub(super) const QUERIES: usize = 300;

/// How many times each engine's query list is timed at `size` tools, each pass on a new thread
/// so that every pass starts with our per-thread caches empty; p50 and p99 are over every timing.
fn query_passes(size: usize) -> usize {
    if size <= 4_000 { 15 } else { 5 }
}

/// How many times an index of `size` tools is built: the build time is their median.
fn builds(size: usize) -> usize {
    if size <= 4_000 { 7 } else { 3 }
}
const ENGINES: [&str; 3] = ["ours", "tantivy", "bm25"];

/// The pooled real tools of every set, then variants of them (renamed, words rotated, one
/// parameter renamed) until `n` tools exist. Deterministic.
pub(super) fn corpus(sets: &[Set], n: usize) -> Vec<ToolDocument> {
    let pooled: Vec<ToolDocument> = sets
        .iter()
        .flat_map(|s| {
            s.tools.iter().map(move |t| ToolDocument {
                name: format!("{}__{}", s.name, t.name),
                ..t.clone()
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    let mut copy = 0usize;
    while out.len() < n {
        for tool in &pooled {
            if out.len() == n {
                break;
            }
            if copy == 0 {
                out.push(tool.clone());
                continue;
            }
            let mut words: Vec<&str> = tool.description.split_whitespace().collect();
            if !words.is_empty() {
                let k = copy % words.len();
                words.rotate_left(k);
            }
            let mut variant = tool.clone();
            variant.name = format!("{}_v{copy}", tool.name);
            variant.description = words.join(" ");
            if let Some(p) = variant.parameters.first_mut() {
                p.name = format!("{}_{copy}", p.name);
            }
            out.push(variant);
        }
        copy += 1;
    }
    out
}

pub(super) fn server_tools() -> Vec<ToolDocument> {
    (0..50)
        .map(|i| {
            ToolDocument::new(
                format!("mcp__benchsrv__tool_{i}"),
                format!("Benchmark server tool number {i}: manages widgets, gadgets and gizmos of kind {i}"),
            )
            .with_server("benchsrv", format!("tool_{i}"))
        })
        .collect()
}

struct Row {
    engine: &'static str,
    size: usize,
    build: Duration,
    p50: Duration,
    p99: Duration,
    bytes_per_tool: f64,
    add: Duration,
    remove: Duration,
}

/// Builds an engine: ours takes the documents by value (as its API does), the peers copy their
/// text into their own structures and hand the documents back, to be dropped untimed.
type Built = (Box<dyn Engine>, Option<Vec<ToolDocument>>);

fn build(engine: &str, docs: Vec<ToolDocument>) -> anyhow::Result<Built> {
    Ok(match engine {
        "ours" => (Box::new(Ours::build(SearchConfig::default(), docs)), None),
        "tantivy" => (Box::new(Tantivy::build(&docs)?), Some(docs)),
        _ => (Box::new(Bm25Crate::build(&docs)), Some(docs)),
    })
}

/// Builds `engine` from a copy of `docs`: the engine, the bytes per tool it keeps, the time.
///
/// Our index keeps the documents it is given (for `get`, `select:` and `explain`), so their copy
/// counts towards its memory but not its build time; the peers keep only what they index, and
/// the input is dropped outside the timed part for every engine.
fn timed_build(
    engine: &str,
    docs: &[ToolDocument],
) -> anyhow::Result<(Box<dyn Engine>, f64, Duration)> {
    let before_input = alloc::allocated();
    let input = docs.to_vec();
    let before = alloc::allocated();
    let started = Instant::now();
    let (built, input) = build(engine, input)?;
    let time = started.elapsed();
    let kept_from = if engine == "ours" {
        before_input
    } else {
        before
    };
    let bytes = alloc::allocated().saturating_sub(kept_from) as f64 / docs.len() as f64;
    drop(input);
    Ok((built, bytes, time))
}

/// Times each query once on a new thread, after 20 to warm up.
fn timed_pass(engine: &mut dyn Engine, queries: &[&str]) -> anyhow::Result<Vec<Duration>> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                for q in queries.iter().take(20) {
                    std::hint::black_box(engine.search(q, 10));
                }
                queries
                    .iter()
                    .map(|q| {
                        let t = Instant::now();
                        let hits = engine.search(q, 10);
                        let elapsed = t.elapsed();
                        std::hint::black_box(hits);
                        elapsed
                    })
                    .collect()
            })
            .join()
    })
    .map_err(|_| anyhow::anyhow!("a query pass panicked"))
}

/// Runs the speed tables and writes the chart.
pub fn run(sets: &[Set], sizes: &[usize], chart: &Path) -> anyhow::Result<()> {
    let queries: Vec<&str> = {
        let all: Vec<&str> = sets
            .iter()
            .flat_map(|s| s.cases.iter().map(|c| c.query.as_str()))
            .collect();
        let step = (all.len() / QUERIES).max(1);
        all.into_iter().step_by(step).take(QUERIES).collect()
    };
    let mut rows = Vec::new();
    for &size in sizes {
        let docs = corpus(sets, size);
        // The engines take turns, build by build and pass by pass, so that a slow spell of this
        // shared machine falls on all of them rather than on one.
        let mut build_times: Vec<Vec<Duration>> = vec![Vec::new(); ENGINES.len()];
        let mut built: Vec<Option<(Box<dyn Engine>, f64)>> = ENGINES.iter().map(|_| None).collect();
        for _ in 0..builds(size) {
            for (e, engine_name) in ENGINES.into_iter().enumerate() {
                drop(built[e].take());
                let (engine, bytes, time) = timed_build(engine_name, &docs)?;
                build_times[e].push(time);
                built[e] = Some((engine, bytes));
            }
        }
        let mut engines: Vec<(Box<dyn Engine>, f64)> = built
            .into_iter()
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("no index was built"))?;
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); ENGINES.len()];
        for _ in 0..query_passes(size) {
            for ((engine, _), times) in engines.iter_mut().zip(&mut times) {
                times.extend(timed_pass(engine.as_mut(), &queries)?);
            }
        }
        let server = server_tools();
        let names: Vec<String> = server.iter().map(|d| d.name.clone()).collect();
        for (e, (mut engine, bytes)) in engines.into_iter().enumerate() {
            let engine_name = ENGINES[e];
            let t = Instant::now();
            engine.add(&server)?;
            let add = t.elapsed();
            let found = engine.search("manages widgets gadgets gizmos", 10);
            if engine_name == "ours" && !found.iter().any(|n| n.starts_with("mcp__benchsrv__")) {
                anyhow::bail!("the added server's tools are not found after adding them");
            }
            let t = Instant::now();
            engine.remove(&names)?;
            let remove = t.elapsed();
            drop(engine);
            let times = &mut times[e];
            times.sort();
            let build_times = &mut build_times[e];
            build_times.sort();
            rows.push(Row {
                engine: engine_name,
                size,
                build: build_times[build_times.len() / 2],
                p50: times[times.len() / 2],
                p99: times[(times.len() * 99 / 100).min(times.len() - 1)],
                bytes_per_tool: bytes,
                add,
                remove,
            });
        }
    }
    println!(
        "## Speed and scale ({} queries per size, {} passes ({} from 40k tools), each on a new thread; build: median of {} builds ({} from 40k); engines take turns)\n",
        queries.len(),
        query_passes(SIZES[0]),
        query_passes(SIZES[SIZES.len() - 1]),
        builds(SIZES[0]),
        builds(SIZES[SIZES.len() - 1]),
    );
    println!(
        "| tools | engine | build | query p50 | query p99 | memory/tool | add 50-tool server | remove it |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} ms | {:.1} µs | {:.1} µs | {:.0} B | {:.3} ms | {:.3} ms |",
            r.size,
            r.engine,
            r.build.as_secs_f64() * 1e3,
            r.p50.as_secs_f64() * 1e6,
            r.p99.as_secs_f64() * 1e6,
            r.bytes_per_tool,
            r.add.as_secs_f64() * 1e3,
            r.remove.as_secs_f64() * 1e3,
        );
    }
    println!();
    println!("| tools | p50 speed-up vs tantivy | vs bm25 |");
    println!("| --- | --- | --- |");
    for &size in sizes {
        let p50 = |e: &str| {
            rows.iter()
                .find(|r| r.size == size && r.engine == e)
                .map_or(f64::NAN, |r| r.p50.as_secs_f64())
        };
        println!(
            "| {size} | {:.1}× | {:.1}× |",
            p50("tantivy") / p50("ours"),
            p50("bm25") / p50("ours")
        );
    }
    println!();
    write_chart(&rows, sizes, chart)?;
    println!("latency chart: {}", chart.display());
    Ok(())
}

fn write_chart(rows: &[Row], sizes: &[usize], path: &Path) -> anyhow::Result<()> {
    let (w, h, left, bottom, top, right) = (640.0, 400.0, 70.0, 50.0, 30.0, 120.0);
    let xs: Vec<f64> = sizes.iter().map(|s| (*s as f64).log10()).collect();
    let (x_min, x_max) = (xs[0], xs[xs.len() - 1]);
    let values: Vec<f64> = rows
        .iter()
        .map(|r| (r.p50.as_secs_f64() * 1e6).max(0.1).log10())
        .collect();
    let y_min = values.iter().copied().fold(f64::INFINITY, f64::min).floor();
    let y_max = values
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .ceil()
        .max(y_min + 1.0);
    // One size alone sits at the left edge.
    let span = (x_max - x_min).max(1.0);
    let px = |x: f64| left + (x - x_min) / span * (w - left - right);
    let py = |y: f64| h - bottom - (y - y_min) / (y_max - y_min) * (h - bottom - top);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">Query latency p50 against corpus size (log-log)</text>\n",
        w / 2.0
    );
    for (size, x) in sizes.iter().zip(&xs) {
        svg.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{size}</text>\n",
            px(*x),
            py(y_min),
            py(y_max),
            h - bottom + 18.0
        ));
    }
    let mut y = y_min;
    while y <= y_max + 1e-9 {
        svg.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{2:.1}\" y2=\"{1:.1}\" stroke=\"#ddd\"/><text x=\"{3:.1}\" y=\"{4:.1}\" text-anchor=\"end\">{5} µs</text>\n",
            px(x_min),
            py(y),
            px(x_max),
            left - 6.0,
            py(y) + 4.0,
            10f64.powf(y)
        ));
        y += 1.0;
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">tools in the index</text>\n",
        (left + w - right) / 2.0,
        h - 10.0
    ));
    let colours = [
        ("ours", "#d62728"),
        ("tantivy", "#1f77b4"),
        ("bm25", "#2ca02c"),
    ];
    for (i, (engine, colour)) in colours.iter().enumerate() {
        let points: Vec<String> = rows
            .iter()
            .filter(|r| r.engine == *engine)
            .map(|r| {
                format!(
                    "{:.1},{:.1}",
                    px((r.size as f64).log10()),
                    py((r.p50.as_secs_f64() * 1e6).max(0.1).log10())
                )
            })
            .collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            points.join(" ")
        ));
        let ly = top + 20.0 + i as f64 * 18.0;
        svg.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{ly:.1}\" x2=\"{1:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{2:.1}\" y=\"{3:.1}\">{engine}</text>\n",
            w - right + 10.0,
            w - right + 30.0,
            w - right + 36.0,
            ly + 4.0
        ));
    }
    svg.push_str("</svg>\n");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, svg)?;
    Ok(())
}
