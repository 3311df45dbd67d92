//! `cargo xtask pool-size`: the size of the request's tools array for the built-ins plus the
//! tools of real MCP servers (their `tools/list` kept as fixtures), per deferral mode; and the
//! size of the first request's system prompt and tools with one MCP server of 100 to 40,000
//! tools (the benchmark sets' tools), as the agent builds them; and, per activation strategy, the
//! requests of a scripted session (`session_size`).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use async_trait::async_trait;
use serde_json::Value;
use tool_core::{
    AnyTool, Loading, Origin, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec,
};
use tool_pool::{Activation, CharEstimate, DeferralMode, PoolConfig, ToolPool};

/// A tool as an MCP server lists it (the benchmark's upstream server answers its calls).
pub(crate) struct Listed(pub(crate) ToolSpec);

#[async_trait]
impl Tool for Listed {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.0.clone()
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> tool_core::PermissionCheck {
        tool_core::PermissionCheck::Allow
    }

    /// A short answer, the same whichever way the tool was called (for the session table).
    async fn call(&self, input: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "{} done with {input}",
            self.0.name
        )))
    }
}

pub(crate) fn mcp_tools(dir: &Path) -> anyhow::Result<Vec<AnyTool>> {
    let mut out: Vec<AnyTool> = Vec::new();
    for server in ["everything", "filesystem", "memory"] {
        let path = dir.join(format!("{server}.json"));
        let list: Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        )?;
        for tool in list["tools"].as_array().into_iter().flatten() {
            let name = tool["name"].as_str().unwrap_or_default();
            let always = tool["_meta"]["anthropic/alwaysLoad"]
                .as_bool()
                .unwrap_or(false);
            let spec = ToolSpec::new(
                format!("mcp__{server}__{name}"),
                tool["description"].as_str().unwrap_or_default(),
                tool["inputSchema"].clone(),
            )
            .with_origin(Origin::Mcp {
                server: server.to_owned(),
                tool: name.to_owned(),
            })
            .with_loading(if always {
                Loading::AlwaysLoad
            } else {
                Loading::Defer
            });
            out.push(AnyTool::new(Listed(spec)));
        }
    }
    Ok(out)
}

/// Prints the table.
pub fn run() -> anyhow::Result<()> {
    let root = crate::tidy::workspace_root()?;
    let mcp = mcp_tools(&root.join("crates/tool-pool/tests/fixtures/mcp"))?;
    println!(
        "| mode | tools sent | bytes (Anthropic) | est. tokens | bytes (OpenAI) | est. tokens |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let modes = [
        (
            "standard (nothing deferred)",
            DeferralMode::Standard,
            Activation::Proxy,
        ),
        (
            "always defer, proxy",
            DeferralMode::Always,
            Activation::Proxy,
        ),
        (
            "always defer, inline (nothing found yet)",
            DeferralMode::Always,
            Activation::Inline,
        ),
        (
            "always defer, native (nothing found yet)",
            DeferralMode::Always,
            Activation::Native,
        ),
        (
            "auto:10 (200k window)",
            DeferralMode::Auto { percent: 10 },
            Activation::Proxy,
        ),
    ];
    for (label, mode, activation) in modes {
        let registry = Arc::new(ToolRegistry::new());
        let dir = std::env::temp_dir();
        tool_builtins::Builtins::new()
            .cwd(&dir)
            .register_all(&registry)?;
        let pool = ToolPool::new(
            Arc::clone(&registry),
            PoolConfig {
                mode,
                activation,
                ..PoolConfig::default()
            },
        )?;
        for tool in &mcp {
            pool.add_mcp_tool(tool.clone())?;
        }
        let tools = pool.request_tools();
        let anthropic = agent_cli::provider::anthropic::render_tools(&tools).to_string();
        let openai = agent_cli::provider::openai::render_tools(&tools).to_string();
        println!(
            "| {label} | {} of {} | {} | {} | {} | {} |",
            tools.tools.len(),
            pool.visible_tools().len(),
            anthropic.len(),
            CharEstimate::estimate(&anthropic),
            openai.len(),
            CharEstimate::estimate(&openai),
        );
    }
    first_request_table(&root)?;
    crate::session_size::table(&mcp)
}

/// The benchmark sets' tools as one MCP server's, `count` of them (the English sets' tools
/// with JSON Schemas, repeated with a suffix past their number).
fn catalogue(root: &Path, count: usize) -> anyhow::Result<Vec<AnyTool>> {
    let bench = root.join("../shared/bench");
    let mut raw: Vec<Value> = Vec::new();
    for set in ["metatool", "seal-tools", "toollens", "ultratool-en"] {
        let path = bench.join(set).join("tools.jsonl");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            raw.push(serde_json::from_str(line)?);
        }
    }
    anyhow::ensure!(!raw.is_empty(), "no tools under {}", bench.display());
    let tools = (0..count)
        .map(|i| {
            let tool = &raw[i % raw.len()];
            let name: String = tool["name"]
                .as_str()
                .unwrap_or("tool")
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .take(40)
                .collect();
            let spec = ToolSpec::new(
                format!("mcp__bench__{name}_{i}"),
                tool["description"].as_str().unwrap_or_default(),
                tool["input_schema"].clone(),
            )
            .with_origin(Origin::Mcp {
                server: "bench".to_owned(),
                tool: format!("{name}_{i}"),
            })
            .with_loading(Loading::Defer);
            AnyTool::new(Listed(spec))
        })
        .collect();
    Ok(tools)
}

/// The first request's system prompt and tools array (Anthropic) with the default settings
/// and one MCP server of each size.
fn first_request_table(root: &Path) -> anyhow::Result<()> {
    println!();
    println!("| MCP tools | system prompt | tools array | first request (both) | est. tokens |");
    println!("| --- | --- | --- | --- | --- |");
    for count in [100, 1_000, 4_000, 40_000] {
        let dir = tempfile_dir()?;
        let runtime = agent_cli::runtime::ToolRuntime::build(
            &dir,
            "size",
            dir.join("session"),
            &agent_cli::settings::Settings::default(),
            &agent_cli::runtime::ToolOptions::default(),
            Arc::new(agent_cli::frontend::Headless),
        )?;
        let mut registered = 0;
        for tool in catalogue(root, count)? {
            // A few of the sets' schemas are not valid JSON Schema; an MCP server's would be
            // refused the same way.
            registered += usize::from(runtime.registry.register(tool).is_ok());
        }
        runtime.sync_pool();
        let system = runtime.system_prompt();
        let tools =
            agent_cli::provider::anthropic::render_tools(&runtime.pool.request_tools()).to_string();
        let both = system.len() + tools.len();
        println!(
            "| {registered} | {} | {} | {both} | {} |",
            system.len(),
            tools.len(),
            CharEstimate::estimate(&format!("{system}{tools}")),
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// A fresh folder under the temporary directory for one runtime.
fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("pool-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
