//! The subcommands: `trust`, `doctor`, `tools list|search|call`, `mcp list` (`mcp serve` is in `context`'s run), `skills list|search`.

use super::*;

/// `agent-cli skills list` and `agent-cli skills search QUERY`.
pub(crate) fn skills_command(
    command: SkillsCommand,
    trust_project: bool,
) -> anyhow::Result<ExitCode> {
    let ctx = Context::load(trust_project)?;
    let set = agent_cli::skills::load_set(&ctx.paths, &ctx.cwd);
    match command {
        SkillsCommand::List => {
            if set.is_empty() {
                println!(
                    "no skills: a skill is a folder with a SKILL.md in {}, {} or {}",
                    ctx.cwd.join(".agent-cli/skills").display(),
                    ctx.cwd.join(".claude/skills").display(),
                    ctx.paths.user_dir.join("skills").display()
                );
            }
            for skill in set.iter() {
                let applies = skill.source == tool_skills::SkillSource::User
                    || ctx.trusted_skills.contains(&skill.name);
                println!("{}", agent_cli::skills::describe(skill, applies));
            }
        }
        SkillsCommand::Search { query, limit } => {
            let found = set.search(&query, limit)?;
            if found.is_empty() {
                println!("no skill matches `{query}`");
            }
            for skill in found {
                println!("{}: {}", skill.name, skill.description.trim());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `agent-cli doctor`: what the machine supports and what applies in this folder.
pub(crate) fn doctor_command() -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let paths = Paths::new(&cwd, &|name| std::env::var(name).ok());
    println!("{}", tool_builtins::sandbox_support());
    println!("user directory: {}", paths.user_dir.display());
    let pending = trust::pending(&paths, &cwd)?;
    if pending.is_empty() {
        println!("this folder: nothing of its own settings waits for trust");
    } else {
        println!("this folder: not trusted; `agent-cli trust` would enable:");
        for item in pending {
            println!("  {item}");
        }
    }
    let resolved = trust::resolve(&paths, &cwd, false)?;
    let sandbox = resolved.settings.sandbox.mode.unwrap_or_default();
    println!("shell sandbox mode: {sandbox}");
    let shell = agent_cli::runtime::shell_config(&resolved.settings, &ToolOptions::default());
    let denies = agent_cli::runtime::read_denies(&resolved.settings.rules());
    for enforcement in tool_builtins::enforcement(&shell, &denies) {
        println!("{enforcement}");
    }
    let search =
        match agent_cli::runtime::embeddings_folder(&resolved.settings, &ToolOptions::default()) {
            Some(folder) => agent_cli::runtime::hybrid::describe(folder),
            None => "keywords only (BM25+; search.embeddings names a model for a hybrid search)"
                .to_owned(),
        };
    println!("tool search: {search}");
    Ok(ExitCode::SUCCESS)
}

/// `agent-cli trust [DIR]`: approves what the folder's own files widen.
pub(crate) fn trust_command(dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let dir = match dir {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    anyhow::ensure!(dir.is_dir(), "{} is not a folder", dir.display());
    let paths = Paths::new(&dir, &|name| std::env::var(name).ok());
    let items = trust::trust(&paths, &dir)?;
    println!("trusted {}", dir.display());
    for item in &items {
        println!("  {item}");
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn tools_command(
    command: ToolsCommand,
    trust_project: bool,
) -> anyhow::Result<ExitCode> {
    let ctx = Context::load(trust_project)?;
    match command {
        ToolsCommand::List { deferred, tools } => tools_list(&ctx, &tools, deferred).await,
        ToolsCommand::Search {
            query,
            explain,
            limit,
            tools,
        } => tools_search(&ctx, &tools, &query, explain, limit).await,
        ToolsCommand::Call { name, input, tools } => tools_call(&ctx, &tools, name, &input).await,
    }
}

/// `tools list [--deferred]`: the tools a request carries, or the deferred ones.
pub(crate) async fn tools_list(
    ctx: &Context,
    tools: &ToolArgs,
    deferred: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(tools, Arc::new(Headless))?;
    runtime.settle_mcp().await;
    let mut out = std::io::stdout().lock();
    if deferred {
        for name in runtime.pool.deferred_names() {
            let description = runtime
                .registry
                .get(&name)
                .map(|e| first_line(&e.tool().spec().description))
                .unwrap_or_default();
            writeln!(out, "{name:<32} {description}")?;
        }
    } else {
        for tool in runtime.pool.request_tools().tools {
            writeln!(
                out,
                "{:<32} {}",
                tool.spec().name,
                first_line(&tool.spec().description)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tools search QUERY [--explain]`: every visible tool ranked by the search engine.
pub(crate) async fn tools_search(
    ctx: &Context,
    tools: &ToolArgs,
    query: &str,
    explain: bool,
    limit: usize,
) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(tools, Arc::new(Headless))?;
    runtime.settle_mcp().await;
    let mut index = tool_search::SearchIndex::default();
    for tool in runtime.pool.visible_tools() {
        index.add(tool_pool::document(&tool));
    }
    let results = index.search(query, limit)?;
    let mut out = std::io::stdout().lock();
    for hit in &results.hits {
        writeln!(out, "{:>8.3}  {}", hit.score, hit.name)?;
        if explain && let Some(explanation) = index.explain(query, &hit.name)? {
            writeln!(out, "{explanation}")?;
        }
    }
    for name in &results.missing {
        writeln!(out, "not found: {name}")?;
    }
    if results.hits.is_empty() && results.missing.is_empty() {
        writeln!(out, "no tool matched `{query}`")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `tools call NAME --input JSON`: one call through the whole lifecycle.
pub(crate) async fn tools_call(
    ctx: &Context,
    tools: &ToolArgs,
    name: String,
    input: &str,
) -> anyhow::Result<ExitCode> {
    let input: Value = serde_json::from_str(input).with_context(|| {
        format!(
            "--input is not JSON: {input}; pass an object such as '{{\"path\": \"README.md\"}}'"
        )
    })?;
    let front_end: Arc<dyn FrontEnd> = if std::io::stdin().is_terminal() {
        Arc::new(ui::Terminal::new(
            ui::input_lines(&ctx.paths, &ctx.cwd),
            ctx.paths.clone(),
            ctx.cwd.clone(),
        ))
    } else {
        Arc::new(Headless)
    };
    let runtime = ctx.runtime(tools, front_end)?;
    runtime.settle_mcp().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            ui::print_event(&event);
        }
    });
    let result = runtime
        .executor
        .execute(
            ToolCall::new("cli_call", name, input),
            CancellationToken::new(),
            Some(tx),
        )
        .await;
    let _ = printer.await;
    println!("{}", result.text());
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) async fn mcp_command(
    command: McpCommand,
    trust_project: bool,
) -> anyhow::Result<ExitCode> {
    let mut ctx = Context::load(trust_project)?;
    match command {
        McpCommand::List { timeout } => mcp_list(&ctx, timeout).await,
        McpCommand::Serve {
            tools,
            http,
            token_env,
            config,
            no_builtins,
        } => {
            if let Some(file) = config {
                ctx.settings.mcp_servers = servers_of(&file)?;
            }
            let mut options = ctx.tool_options(&tools);
            options.no_builtins = no_builtins;
            options.no_skill_grants = true;
            mcp_serve(&ctx, options, http, token_env.as_deref()).await
        }
    }
}

/// The servers of an `.mcp.json`-style file given on the command line (the user's own choice, so
/// it needs no trust).
fn servers_of(
    file: &std::path::Path,
) -> anyhow::Result<std::collections::BTreeMap<String, serde_json::Value>> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "mcpServers")]
        mcp_servers: std::collections::BTreeMap<String, serde_json::Value>,
    }
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("--config {}: cannot read it", file.display()))?;
    let parsed: File = serde_json::from_str(&text).with_context(|| {
        format!(
            "--config {}: not an MCP configuration; write {{\"mcpServers\": {{\"name\": {{\"command\": \"...\", \"args\": [...]}}}}}}, as in .mcp.json",
            file.display()
        )
    })?;
    Ok(parsed.mcp_servers)
}

/// `mcp serve`: the pool's request tools over stdio, or over HTTP on `http` behind the token in
/// the variable `token_env`.
async fn mcp_serve(
    ctx: &Context,
    mut options: ToolOptions,
    http: Option<std::net::SocketAddr>,
    token_env: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let token = match token_env {
        Some(name) => Some(
            std::env::var(name)
                .ok()
                .filter(|token| !token.trim().is_empty())
                .with_context(|| {
                    format!("--token-env {name}: the variable is not set or empty; set it to the token HTTP clients will send")
                })?,
        ),
        None => None,
    };
    if let Some(addr) = http
        && !addr.ip().is_loopback()
        && token.is_none()
    {
        anyhow::bail!(
            "{addr} can be reached from other machines: give --token-env NAME, a variable holding the token clients must send as `Authorization: Bearer <token>`, or serve on a loopback address such as 127.0.0.1"
        );
    }
    // What a client sees is small and fixed: the core tools, tool_search and execute_tool;
    // every other tool is found with tool_search.
    options.defer_tools.get_or_insert_with(|| "true".to_owned());
    let runtime = Arc::new(ctx.runtime_with(&options, Arc::new(Headless))?);
    runtime.settle_mcp().await;
    // Stateless: a client may search through one gateway process and call through another.
    runtime.pool.set_require_discovery(false);
    let pool = runtime.pool.clone();
    // The pool follows the registry on each upstream change (`upstream_changes`), so a listing
    // only reads it.
    let listing: tool_mcp::Listing = Arc::new(move || pool.request_tools().tools);
    let executor = Arc::new(runtime.executor.clone());
    let mut serve = tool_mcp::McpServe::new(executor, "agent-cli").listing(listing);
    if let Some(changes) = upstream_changes(&runtime) {
        serve = serve.announcing(changes);
    }
    match http {
        None => serve.stdio().await?,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr()?;
            eprintln!("serving MCP on http://{bound}{}", tool_mcp::MCP_PATH);
            serve.http(listener, token).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp list`: each server's state and tool count, and the project's servers waiting for trust.
pub(crate) async fn mcp_list(ctx: &Context, timeout: u64) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(&ToolArgs::default(), Arc::new(Headless))?;
    let waiting: Vec<(&str, &str)> = ctx
        .ignored
        .iter()
        .filter_map(|item| match item {
            trust::Widening::Server { name, launch, .. } => Some((name.as_str(), launch.as_str())),
            _ => None,
        })
        .collect();
    if runtime.mcp.is_none() && waiting.is_empty() {
        println!("no MCP servers configured: add them to .mcp.json or to the settings' mcpServers");
        return Ok(ExitCode::SUCCESS);
    }
    let states = runtime
        .settle_mcp_within(std::time::Duration::from_secs(timeout))
        .await;
    let mut out = std::io::stdout().lock();
    for (server, state) in &states {
        writeln!(out, "{server:<24} {}", ui::mcp_state_text(state))?;
    }
    for (server, launch) in waiting {
        writeln!(
            out,
            "{server:<24} waiting for trust ({launch}); run `agent-cli trust` to use it"
        )?;
    }
    if let Some(manager) = &runtime.mcp {
        manager.shutdown();
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(100)
        .collect()
}

/// A signal each time an upstream MCP server's tools changed (it connected, left, or changed its
/// list), once the pool is in line with them again; `None` without MCP servers.
fn upstream_changes(runtime: &Arc<ToolRuntime>) -> Option<tokio::sync::watch::Receiver<()>> {
    use tokio::sync::broadcast::error::RecvError;
    let mut changes = runtime.mcp.as_ref()?.subscribe();
    let (tx, rx) = tokio::sync::watch::channel(());
    let runtime = Arc::clone(runtime);
    tokio::spawn(async move {
        while let Ok(_) | Err(RecvError::Lagged(_)) = changes.recv().await {
            runtime.sync_pool();
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    Some(rx)
}
