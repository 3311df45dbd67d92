//! nDCG@10 of `tool_search` through the gateway on the dev sets, beside the engine's own:
//! as `bench-search` scores it (the set's own documents), and as the agent's `tool_search` runs
//! it in process over the very tools the gateway indexes (the same documents, built-ins included).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tool_core::{AnyTool, CancellationToken, Loading, Origin, ToolCall, ToolSpec};
use tool_search::SearchConfig;

use super::client::{self, Client, Gateway, HttpClient, Setup};
use super::upstream::{SERVER, Source, served, served_names};
use crate::bench_search::data::{Set, load_sets};
use crate::bench_search::engines::{Engine as _, Ours};
use crate::bench_search::score;
use crate::pool_size::Listed;

/// One set's scores (means over its queries).
pub(crate) struct SetQuality {
    pub(crate) name: String,
    pub(crate) queries: usize,
    /// `bench-search`'s default configuration on the set's own documents.
    pub(crate) engine: f64,
    /// The agent's `tool_search`, in process, over the tools as the gateway has them.
    pub(crate) in_process: f64,
    /// `tool_search` through the gateway over HTTP.
    pub(crate) gateway: f64,
    /// Queries whose ranking through the gateway is the in-process one exactly.
    pub(crate) same: usize,
}

/// Scores every set, on at most `limit` queries of each.
pub(crate) async fn run(setup: &Setup, limit: Option<usize>) -> anyhow::Result<Vec<SetQuality>> {
    let mut out = Vec::new();
    for set in load_sets(&setup.data)? {
        eprintln!("bench-gateway: quality on {}", set.name);
        out.push(one_set(setup, &set, limit.unwrap_or(usize::MAX)).await?);
    }
    Ok(out)
}

async fn one_set(setup: &Setup, set: &Set, limit: usize) -> anyhow::Result<SetQuality> {
    let source = Source::Set(set.name.clone());
    let raw = source.raw_tools(&setup.data)?;
    let mut gateway_name: HashMap<&str, String> = HashMap::new();
    for (tool, name) in raw.iter().zip(served_names(&raw)) {
        gateway_name
            .entry(tool.name.as_str())
            .or_insert_with(|| format!("mcp__{SERVER}__{name}"));
    }
    let mut engine = Ours::build(SearchConfig::default(), set.tools.clone());
    let runtime = in_process(&setup.scratch, &raw)?;
    let (_gateway, url) = Gateway::http(setup, &source, &[]).await?;
    let mut through = Client::Http(HttpClient::new(&url)?, 0);
    let mut scores = SetQuality {
        name: set.name.clone(),
        queries: 0,
        engine: 0.0,
        in_process: 0.0,
        gateway: 0.0,
        same: 0,
    };
    for (i, case) in set.cases.iter().take(limit).enumerate() {
        let gold: Vec<String> = case
            .gold
            .iter()
            .map(|g| gateway_name.get(g.as_str()).cloned().unwrap_or_default())
            .collect();
        let local = local_search(&runtime, i, &case.query).await;
        let remote = client::search(&mut through, &case.query, 10).await?;
        scores.engine += score(&engine.search(&case.query, 10), &case.gold).ndcg10;
        scores.in_process += score(&local, &gold).ndcg10;
        scores.gateway += score(&remote, &gold).ndcg10;
        scores.same += usize::from(local == remote);
        scores.queries += 1;
    }
    let n = scores.queries.max(1) as f64;
    scores.engine /= n;
    scores.in_process /= n;
    scores.gateway /= n;
    let _ = std::fs::remove_dir_all(setup.scratch.join("in-process"));
    Ok(scores)
}

/// The agent's tool runtime (as `mcp serve` builds it: every tool but the core ones deferred)
/// with the upstream's tools registered as the gateway registers them.
fn in_process(
    scratch: &Path,
    raw: &[crate::bench_search::data::RawTool],
) -> anyhow::Result<agent_cli::runtime::ToolRuntime> {
    let dir = scratch.join("in-process");
    std::fs::create_dir_all(&dir)?;
    let options = agent_cli::runtime::ToolOptions {
        defer_tools: Some("true".to_owned()),
        ..agent_cli::runtime::ToolOptions::default()
    };
    let runtime = agent_cli::runtime::ToolRuntime::build(
        &dir,
        "bench-gateway",
        dir.join("session"),
        &agent_cli::settings::Settings::default(),
        &options,
        Arc::new(agent_cli::frontend::Headless),
    )?;
    for tool in served(raw)?.tools() {
        let spec = tool.spec();
        let upstream = spec.name.clone();
        let spec = ToolSpec::new(
            format!("mcp__{SERVER}__{upstream}"),
            spec.description.as_str(),
            spec.input_schema.clone(),
        )
        .with_origin(Origin::Mcp {
            server: SERVER.to_owned(),
            tool: upstream,
        })
        .with_loading(Loading::Defer);
        runtime.registry.register(AnyTool::new(Listed(spec)))?;
    }
    runtime.sync_pool();
    Ok(runtime)
}

/// `tool_search` through the runtime's executor, as a model's call runs.
async fn local_search(
    runtime: &agent_cli::runtime::ToolRuntime,
    id: usize,
    query: &str,
) -> Vec<String> {
    let input = json!({"query": query, "max_results": 10});
    let call = ToolCall::new(format!("q{id}"), "tool_search", input);
    let result = runtime
        .executor
        .execute(call, CancellationToken::new(), None)
        .await;
    client::ranked(&result.text())
}
