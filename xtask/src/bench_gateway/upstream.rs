//! The upstream MCP server of `bench-gateway`: the benchmark sets' tools served over stdio
//! (`cargo xtask bench-upstream`, which the gateway starts from its configuration file).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Map, Value, json};
use tool_core::{AnyTool, Executor, Session, ToolRegistry, ToolSpec};

use crate::bench_search::data::{RawTool, read_jsonl};
use crate::pool_size::Listed;

/// The upstream server's name in the gateway's configuration: its tools are
/// `mcp__bench__<name>` there.
pub(crate) const SERVER: &str = "bench";

/// The English sets whose tools make the catalogue of the size runs.
const CATALOGUE_SETS: [&str; 4] = ["metatool", "seal-tools", "toollens", "ultratool-en"];

/// The longest name the upstream gives a tool: `mcp__bench__` and a `_N` suffix still fit in
/// the 64 characters of a tool name.
const MAX_NAME: usize = 44;

/// Options of `cargo xtask bench-upstream`.
#[derive(Debug, clap::Args)]
pub struct UpstreamOptions {
    /// Serve this many tools of the English sets (repeated past their number).
    #[arg(long, conflicts_with = "set", required_unless_present = "set")]
    tools: Option<usize>,
    /// Serve the tools of this set.
    #[arg(long)]
    set: Option<String>,
    /// The folder holding one folder per set.
    #[arg(long)]
    data: PathBuf,
}

/// Which tools an upstream server serves.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// The first N of the English sets' tools (repeated past their number).
    Count(usize),
    /// Every tool of one set.
    Set(String),
}

impl Source {
    /// The arguments of `bench-upstream` that serve these tools.
    pub(crate) fn args(&self, data: &Path) -> Vec<String> {
        let mut args = vec!["bench-upstream".to_owned()];
        match self {
            Self::Count(n) => args.extend(["--tools".to_owned(), n.to_string()]),
            Self::Set(name) => args.extend(["--set".to_owned(), name.clone()]),
        }
        args.extend(["--data".to_owned(), data.display().to_string()]);
        args
    }

    /// The tools as the sets' files have them.
    pub(crate) fn raw_tools(&self, data: &Path) -> anyhow::Result<Vec<RawTool>> {
        let read = |set: &str| read_jsonl::<RawTool>(&data.join(set).join("tools.jsonl"));
        match self {
            Self::Set(name) => read(name),
            Self::Count(count) => {
                let mut all = Vec::new();
                for set in CATALOGUE_SETS {
                    all.extend(read(set)?);
                }
                anyhow::ensure!(!all.is_empty(), "no tools under {}", data.display());
                Ok((0..*count).map(|i| all[i % all.len()].clone()).collect())
            }
        }
    }
}

/// The names the upstream serves the tools under, in order: each set's name with every
/// character outside `[a-zA-Z0-9_-]` made `_`, cut to [`MAX_NAME`], and made unique with `_2`,
/// `_3`, ... (the gateway then lists them unchanged after `mcp__bench__`).
pub(crate) fn served_names(raw: &[RawTool]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    raw.iter()
        .map(|tool| {
            let mut base: String = tool
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(MAX_NAME)
                .collect();
            if base.is_empty() {
                base = "tool".to_owned();
            }
            let mut name = base.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                name = format!("{base}_{n}");
                n += 1;
            }
            name
        })
        .collect()
}

/// The schema served when a set's own is not valid JSON Schema (some sets say `"type": "dict"`):
/// the same parameters with their descriptions, so that search sees the same words.
fn loose_schema(schema: &Value) -> Value {
    let properties: Map<String, Value> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let entry = match prop.get("description").and_then(Value::as_str) {
                        Some(text) => json!({ "description": text }),
                        None => json!({}),
                    };
                    (name.clone(), entry)
                })
                .collect()
        })
        .unwrap_or_default();
    json!({ "type": "object", "properties": properties })
}

/// A registry of the tools as the upstream serves them (names from [`served_names`]).
pub(crate) fn served(raw: &[RawTool]) -> anyhow::Result<Arc<ToolRegistry>> {
    let registry = Arc::new(ToolRegistry::new());
    for (tool, name) in raw.iter().zip(served_names(raw)) {
        let schema = if tool.input_schema.is_object() {
            tool.input_schema.clone()
        } else {
            loose_schema(&Value::Null)
        };
        let spec = ToolSpec::new(name.as_str(), tool.description.as_str(), schema);
        if registry
            .register(AnyTool::new(Listed(spec.clone())))
            .is_err()
        {
            let loose = ToolSpec::new(
                name.as_str(),
                tool.description.as_str(),
                loose_schema(&spec.input_schema),
            );
            registry
                .register(AnyTool::new(Listed(loose)))
                .with_context(|| format!("registering {name}"))?;
        }
    }
    Ok(registry)
}

/// Serves the tools on stdin and stdout until the gateway disconnects.
pub fn serve(options: UpstreamOptions) -> anyhow::Result<()> {
    let source = match (options.tools, options.set) {
        (Some(count), _) => Source::Count(count),
        (None, Some(set)) => Source::Set(set),
        (None, None) => anyhow::bail!("give --tools N or --set NAME"),
    };
    let registry = served(&source.raw_tools(&options.data)?)?;
    let dir = std::env::temp_dir();
    let session = Arc::new(Session::new("bench-upstream", &dir, &dir));
    let executor = Arc::new(Executor::builder(registry, session).build());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(tool_mcp::serve_stdio(executor, SERVER))?;
    Ok(())
}
