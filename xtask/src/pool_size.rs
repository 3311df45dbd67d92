//! `cargo xtask pool-size`: the size of the request's tools array for the built-ins plus the
//! tools of real MCP servers (their `tools/list` kept as fixtures), per deferral mode.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use async_trait::async_trait;
use serde_json::Value;
use tool_core::{
    Loading, Origin, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec,
};
use tool_pool::{Activation, CharEstimate, DeferralMode, PoolConfig, ToolPool};

/// A tool as an MCP server lists it; never called here.
struct Listed(ToolSpec);

#[async_trait]
impl Tool for Listed {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed("listed only, for measuring"))
    }
}

fn mcp_tools(dir: &Path) -> anyhow::Result<Vec<Arc<dyn Tool>>> {
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
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
            out.push(Arc::new(Listed(spec)));
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
            pool.add_mcp_tool(Arc::clone(tool))?;
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
    Ok(())
}
