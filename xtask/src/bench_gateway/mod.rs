//! `cargo xtask bench-gateway`: the MCP gateway (`agent-cli mcp serve`, the real binary in its
//! own process) fronting an upstream MCP server of the benchmark sets' tools
//! (`cargo xtask bench-upstream`): the size of its `tools/list` as upstream tools grow,
//! `tool_search`'s round trip over stdio and loopback HTTP, its nDCG@10 on the dev sets beside
//! the engine's own, many HTTP clients at once, and its memory per upstream tool.

mod client;
mod quality;
mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;

use client::{Client, Gateway, HttpClient, Setup};
use quality::SetQuality;
use upstream::{SERVER, Source, served_names};
pub use upstream::{UpstreamOptions, serve as serve_upstream};

/// Options of `cargo xtask bench-gateway`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// Smaller sizes, fewer calls and 100 queries a set (a couple of minutes); the gateway's
    /// dev build.
    #[arg(long)]
    quick: bool,
    /// Measure the gateway's dev build instead of building it in release mode.
    #[arg(long)]
    no_release: bool,
    /// The folder holding one folder per set (default: ../shared/bench).
    #[arg(long)]
    data: Option<PathBuf>,
}

/// How much each part measures.
struct Plan {
    /// Upstream tool counts; the last is where latency, load and stdio are measured.
    sizes: Vec<usize>,
    /// Searches before anything is timed (and before memory is read).
    warmup: usize,
    /// Timed searches per transport.
    calls: usize,
    /// Concurrent HTTP clients, and calls each.
    clients: usize,
    per_client: usize,
    /// Queries per set for quality (all of them when `None`).
    queries_per_set: Option<usize>,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                sizes: vec![100, 1_000],
                warmup: 20,
                calls: 200,
                clients: 20,
                per_client: 50,
                queries_per_set: Some(100),
            }
        } else {
            Self {
                sizes: vec![100, 1_000, 4_000],
                warmup: 50,
                calls: 1_000,
                clients: 50,
                per_client: 200,
                queries_per_set: None,
            }
        }
    }
}

/// One upstream size's gateway.
struct SizeRow {
    tools: usize,
    listed: usize,
    bytes: usize,
    /// Of which `tool_search`'s and `execute_tool`'s entries (the rest: the core built-ins).
    own_bytes: usize,
    /// The answer of a gateway started with `--no-builtins`.
    bytes_no_builtins: usize,
    bytes_after: usize,
    searches: usize,
    rss_kib: u64,
}

/// Round trips, sorted.
struct Latency {
    transport: &'static str,
    tools: usize,
    times: Vec<Duration>,
}

/// The concurrent run.
struct Load {
    /// What each client's searches are.
    pattern: Pattern,
    clients: usize,
    per_client: usize,
    errors: Vec<String>,
    times: Vec<Duration>,
    wall: Duration,
}

/// What the searches of a load run's clients look for; every other call is `execute_tool` of
/// one upstream tool.
#[derive(Clone, Copy)]
enum Pattern {
    /// Dev queries: the tool called was found once, before the run.
    Queries,
    /// `select:` the tool called: each call right after its own search, as a client that
    /// searches and then calls what it found.
    SelectThenCall,
}

impl Pattern {
    fn label(self) -> &'static str {
        match self {
            Self::Queries => "searches for dev queries, the called tool found once before",
            Self::SelectThenCall => "each call right after a search that finds its tool",
        }
    }
}

/// Runs the benchmark and prints its tables.
pub fn run(options: Options) -> anyhow::Result<()> {
    let plan = Plan::new(options.quick);
    let root = crate::tidy::workspace_root()?;
    let data = match options.data {
        Some(dir) => dir,
        None => root.join("../shared/bench"),
    };
    anyhow::ensure!(
        data.is_dir(),
        "no benchmark sets in {}; pass --data DIR",
        data.display()
    );
    let release = !options.quick && !options.no_release;
    let scratch = std::env::temp_dir().join(format!("bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let setup = Setup {
        gateway: build_gateway(&root, release)?,
        upstream: std::env::current_exe().context("finding this binary")?,
        data,
        scratch,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(measure(&setup, &plan));
    runtime.shutdown_timeout(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&setup.scratch);
    let report = outcome?;
    print_report(&report, &plan, if release { "release" } else { "dev" });
    Ok(())
}

/// Builds `agent-cli` (release or dev) and returns its path.
fn build_gateway(root: &std::path::Path, release: bool) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command.current_dir(root).args([
        "build",
        "--quiet",
        "--package",
        "agent-cli",
        "--bin",
        "agent-cli",
    ]);
    if release {
        eprintln!("bench-gateway: building agent-cli in release mode");
        command.arg("--release");
    }
    let status = command.status().context("running cargo build")?;
    anyhow::ensure!(status.success(), "building agent-cli failed ({status})");
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .context("running cargo metadata")?;
    let profile = if release { "release" } else { "debug" };
    Ok(metadata
        .target_directory
        .join(profile)
        .join("agent-cli")
        .into_std_path_buf())
}

/// Everything measured.
struct Report {
    sizes: Vec<SizeRow>,
    latency: Vec<Latency>,
    load: Vec<Load>,
    quality: Vec<SetQuality>,
}

async fn measure(setup: &Setup, plan: &Plan) -> anyhow::Result<Report> {
    let queries = Arc::new(latency_queries(setup)?);
    let mut report = Report {
        sizes: Vec::new(),
        latency: Vec::new(),
        load: Vec::new(),
        quality: Vec::new(),
    };
    for (i, &tools) in plan.sizes.iter().enumerate() {
        let largest = i + 1 == plan.sizes.len();
        let row = one_size(setup, plan, tools, largest, &queries, &mut report).await?;
        report.sizes.push(row);
    }
    let largest = plan.sizes.last().copied().unwrap_or_default();
    eprintln!("bench-gateway: stdio at {largest} upstream tools");
    let (_gateway, stdio) = Gateway::stdio(setup, &Source::Count(largest)).await?;
    let mut client = Client::Stdio(stdio);
    searches(&mut client, &queries, plan.warmup).await?;
    report.latency.insert(
        0,
        Latency {
            transport: "stdio",
            tools: largest,
            times: searches(&mut client, &queries, plan.calls).await?,
        },
    );
    report.quality = quality::run(setup, plan.queries_per_set).await?;
    Ok(report)
}

/// One gateway over HTTP fronting `tools` upstream tools: its `tools/list` before and after
/// searching, its memory after the warm-up; at the largest size, latency and load too.
async fn one_size(
    setup: &Setup,
    plan: &Plan,
    tools: usize,
    largest: bool,
    queries: &Arc<Vec<String>>,
    report: &mut Report,
) -> anyhow::Result<SizeRow> {
    eprintln!("bench-gateway: HTTP at {tools} upstream tools");
    let source = Source::Count(tools);
    let bytes_no_builtins = {
        let (_gateway, url) = Gateway::http(setup, &source, &["--no-builtins"]).await?;
        HttpClient::new(&url)?
            .request(0, "tools/list", json!({}))
            .await?
            .1
    };
    let (gateway, url) = Gateway::http(setup, &source, &[]).await?;
    let http = HttpClient::new(&url)?;
    let (list, bytes) = http.request(0, "tools/list", json!({})).await?;
    let entries = list["tools"].as_array().cloned().unwrap_or_default();
    let own_bytes = entries
        .iter()
        .filter(|t| t["name"] == "tool_search" || t["name"] == "execute_tool")
        .map(|t| t.to_string().len())
        .sum();
    let mut client = Client::Http(http.clone(), 0);
    searches(&mut client, queries, plan.warmup).await?;
    let rss_kib = gateway.rss_kib()?;
    let mut searched = plan.warmup;
    if largest {
        report.latency.push(Latency {
            transport: "HTTP (loopback)",
            tools,
            times: searches(&mut client, queries, plan.calls).await?,
        });
        let target = callable_tool(setup, &source)?;
        for pattern in [Pattern::Queries, Pattern::SelectThenCall] {
            report
                .load
                .push(load(&url, plan, queries, &target, pattern).await?);
        }
        searched += plan.calls + plan.clients * plan.per_client;
    }
    let (_, bytes_after) = http.request(1, "tools/list", json!({})).await?;
    Ok(SizeRow {
        tools,
        listed: entries.len(),
        bytes,
        own_bytes,
        bytes_no_builtins,
        bytes_after,
        searches: searched,
        rss_kib,
    })
}

/// The English dev sets' queries, interleaved, for the timed searches.
fn latency_queries(setup: &Setup) -> anyhow::Result<Vec<String>> {
    let sets = crate::bench_search::data::load_sets(&setup.data)?;
    let english: Vec<_> = sets.iter().filter(|s| s.name != "ultratool-zh").collect();
    let longest = english.iter().map(|s| s.cases.len()).max().unwrap_or(0);
    let queries: Vec<String> = (0..longest)
        .flat_map(|i| english.iter().filter_map(move |s| s.cases.get(i)))
        .map(|case| case.query.clone())
        .collect();
    anyhow::ensure!(!queries.is_empty(), "no queries in the dev sets");
    Ok(queries)
}

/// `count` searches (5 results, as a model asks by default), each timed, sorted.
async fn searches(
    client: &mut Client,
    queries: &[String],
    count: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(count);
    for i in 0..count {
        let query = &queries[i % queries.len()];
        let start = Instant::now();
        client::search(client, query, 5).await?;
        times.push(start.elapsed());
    }
    times.sort_unstable();
    Ok(times)
}

/// An upstream tool that takes an empty input (no required parameters), by its gateway name.
fn callable_tool(setup: &Setup, source: &Source) -> anyhow::Result<String> {
    let raw = source.raw_tools(&setup.data)?;
    raw.iter()
        .zip(served_names(&raw))
        .find(|(tool, _)| {
            tool.input_schema
                .get("required")
                .and_then(serde_json::Value::as_array)
                .is_none_or(Vec::is_empty)
        })
        .map(|(_, name)| format!("mcp__{SERVER}__{name}"))
        .context("no upstream tool without required parameters")
}

/// `clients` HTTP clients at once, each with its own connection, each making `per_client`
/// calls: `tool_search` and `execute_tool` of an upstream tool in turns.
async fn load(
    url: &str,
    plan: &Plan,
    queries: &Arc<Vec<String>>,
    target: &str,
    pattern: Pattern,
) -> anyhow::Result<Load> {
    eprintln!(
        "bench-gateway: {} HTTP clients x {} calls ({})",
        plan.clients,
        plan.per_client,
        pattern.label()
    );
    // execute_tool calls what a search found: find the target once, by name.
    let select = json!({"name": "tool_search", "arguments": {"query": format!("select:{target}")}});
    HttpClient::new(url)?
        .request(0, "tools/call", select)
        .await?;
    let started = Instant::now();
    let tasks: Vec<_> = (0..plan.clients)
        .map(|c| {
            let client = HttpClient::new(url);
            let queries = Arc::clone(queries);
            let target = target.to_owned();
            let calls = plan.per_client;
            tokio::spawn(async move {
                let work = Work {
                    index: c,
                    calls,
                    queries: &queries,
                    target: &target,
                    pattern,
                };
                one_client(client?, work).await
            })
        })
        .collect();
    let mut times = Vec::new();
    let mut errors = Vec::new();
    for task in tasks {
        let (t, e) = task.await??;
        times.extend(t);
        errors.extend(e);
    }
    let wall = started.elapsed();
    times.sort_unstable();
    Ok(Load {
        pattern,
        clients: plan.clients,
        per_client: plan.per_client,
        errors,
        times,
        wall,
    })
}

/// One load client's share of the run.
struct Work<'a> {
    index: usize,
    calls: usize,
    queries: &'a [String],
    target: &'a str,
    pattern: Pattern,
}

/// One client's calls: their round trips, and what went wrong.
async fn one_client(
    client: HttpClient,
    work: Work<'_>,
) -> anyhow::Result<(Vec<Duration>, Vec<String>)> {
    let Work {
        index,
        calls,
        queries,
        target,
        pattern,
    } = work;
    let mut times = Vec::with_capacity(calls);
    let mut errors = Vec::new();
    for k in 0..calls {
        let params = match (k % 2, pattern) {
            (0, Pattern::Queries) => {
                let query = &queries[(index * calls + k) % queries.len()];
                json!({"name": "tool_search", "arguments": {"query": query}})
            }
            (0, Pattern::SelectThenCall) => {
                json!({"name": "tool_search", "arguments": {"query": format!("select:{target}")}})
            }
            _ => json!({"name": "execute_tool", "arguments": {"tool_name": target, "input": {}}}),
        };
        let start = Instant::now();
        let outcome = client.request(k as u64, "tools/call", params).await;
        times.push(start.elapsed());
        match outcome {
            Ok((result, _)) => {
                let (text, is_error) = client::call_text(&result);
                if is_error {
                    errors.push(format!("an error result: {text}"));
                }
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    Ok((times, errors))
}

/// What `execute_tool` answers when the tool's discovery is gone: the gateway keeps one
/// discovered set for all its clients, capped, so other clients' searches can push it out.
const NOT_DISCOVERED: &str = "has not been discovered";

/// The load run's errors: how many, and how many of them were discoveries pushed out.
fn error_counts(load: &Load) -> (usize, usize) {
    let evicted = load
        .errors
        .iter()
        .filter(|e| e.contains(NOT_DISCOVERED))
        .count();
    (load.errors.len(), evicted)
}

/// The `q` quantile of sorted round trips (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1_000.0)
}

fn print_report(report: &Report, plan: &Plan, build: &str) {
    print_summary(report, build);
    println!("\n### tools/list as upstream tools grow (HTTP)\n");
    println!(
        "| upstream tools | tools listed | tools/list bytes | of which tool_search + execute_tool | with --no-builtins | bytes after searching | gateway RSS |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for row in &report.sizes {
        println!(
            "| {} | {} | {} | {} | {} | {} (after {} searches) | {:.1} MiB |",
            row.tools,
            row.listed,
            row.bytes,
            row.own_bytes,
            row.bytes_no_builtins,
            row.bytes_after,
            row.searches,
            row.rss_kib as f64 / 1024.0
        );
    }
    println!("\n### tool_search round trip (5 results; one client, one call at a time)\n");
    println!("| transport | upstream tools | calls | p50 | p99 | mean |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for latency in &report.latency {
        let total: Duration = latency.times.iter().sum();
        let mean = total / u32::try_from(latency.times.len().max(1)).unwrap_or(u32::MAX);
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            latency.transport,
            latency.tools,
            latency.times.len(),
            ms(quantile(&latency.times, 0.5)),
            ms(quantile(&latency.times, 0.99)),
            ms(mean)
        );
    }
    print_quality(&report.quality, plan);
    print_load(&report.load);
}

/// Goals and measurements side by side.
fn print_summary(report: &Report, build: &str) {
    println!("## MCP gateway (agent-cli mcp serve, {build} build)\n");
    println!("| measure | goal | measured |");
    println!("| --- | --- | --- |");
    let bytes: Vec<String> = report
        .sizes
        .iter()
        .map(|r| format!("{} B at {}", r.bytes, r.tools))
        .collect();
    let bare: Vec<String> = report
        .sizes
        .iter()
        .map(|r| format!("{} B at {}", r.bytes_no_builtins, r.tools))
        .collect();
    println!(
        "| tools/list answer as upstream tools grow | constant, under 4 KB | {}; with --no-builtins {} |",
        bytes.join(", "),
        bare.join(", ")
    );
    for latency in &report.latency {
        println!(
            "| tool_search round trip, {}, {} upstream tools | p50 under 2 ms over HTTP | p50 {}, p99 {} |",
            latency.transport,
            latency.tools,
            ms(quantile(&latency.times, 0.5)),
            ms(quantile(&latency.times, 0.99))
        );
    }
    let equal = report
        .quality
        .iter()
        .filter(|s| (s.gateway - s.in_process).abs() < 1e-9)
        .count();
    let sets: Vec<String> = report
        .quality
        .iter()
        .map(|s| format!("{} {:.3} ({:.3})", s.name, s.gateway, s.engine))
        .collect();
    println!(
        "| nDCG@10 through the gateway (engine's own, bench-search) | equal to the engine's | the agent's in-process tool_search on {equal} of {} sets; {} |",
        report.quality.len(),
        sets.join(", ")
    );
    for load in &report.load {
        let (errors, evicted) = error_counts(load);
        println!(
            "| load: {} HTTP clients x {} calls, {} | zero errors, p99 reported | {errors} errors ({evicted} of them `{NOT_DISCOVERED}`), p99 {} |",
            load.clients,
            load.per_client,
            load.pattern.label(),
            ms(quantile(&load.times, 0.99))
        );
    }
    if let (Some(first), Some(last)) = (report.sizes.first(), report.sizes.last())
        && last.tools > first.tools
    {
        let grown = last.rss_kib.saturating_sub(first.rss_kib) as f64 * 1024.0;
        println!(
            "| gateway memory per upstream tool (RSS, {} to {} tools) | reported | {:.1} KiB |",
            first.tools,
            last.tools,
            grown / (last.tools - first.tools) as f64 / 1024.0
        );
    }
}

fn print_quality(quality: &[SetQuality], plan: &Plan) {
    let which = match plan.queries_per_set {
        Some(n) => format!("the first {n} dev queries of each set"),
        None => "every dev query".to_owned(),
    };
    println!("\n### nDCG@10 of tool_search ({which})\n");
    println!(
        "| set | queries | engine (bench-search) | agent's tool_search, in process | through the gateway | same ranking |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for set in quality {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {} of {} |",
            set.name, set.queries, set.engine, set.in_process, set.gateway, set.same, set.queries
        );
    }
}

fn print_load(loads: &[Load]) {
    if loads.is_empty() {
        return;
    }
    println!("\n### Load (HTTP; every other call is execute_tool of an upstream tool)\n");
    println!(
        "| clients x calls | searches | errors | of which `{NOT_DISCOVERED}` | p50 | p99 | max | calls/s |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for load in loads {
        let (errors, evicted) = error_counts(load);
        println!(
            "| {} x {} | {} | {errors} | {evicted} | {} | {} | {} | {:.0} |",
            load.clients,
            load.per_client,
            load.pattern.label(),
            ms(quantile(&load.times, 0.5)),
            ms(quantile(&load.times, 0.99)),
            ms(load.times.last().copied().unwrap_or_default()),
            load.times.len() as f64 / load.wall.as_secs_f64().max(1e-9)
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for error in loads.iter().flat_map(|l| &l.errors) {
        // One line per kind of error (the tool's name aside).
        let kind: String = error
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(60)
            .collect();
        if seen.insert(kind) && seen.len() <= 5 {
            println!("\nerror: {error}");
        }
    }
}
