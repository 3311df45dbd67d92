//! `agent-cli`: a coding agent in the terminal.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};
use tool_builtins::SandboxMode;
use tool_core::{CancellationToken, PermissionMode, Prompter, ToolCall};

use agent_cli::agent::{Agent, AgentEvent, Observer, Outcome};
use agent_cli::commands::{self, Slash};
use agent_cli::compaction::{self, Window};
use agent_cli::instructions;
use agent_cli::runtime::{ToolOptions, ToolRuntime};
use agent_cli::settings::{Paths, Settings};
use agent_cli::structured::{self, StructuredOutput};
use agent_cli::subagent::{self, AgentTypes, UsageHook};
use agent_cli::transcript::{self, Transcript};
use agent_cli::trust;
use agent_cli::ui;
use agent_cli::usage::{self, Meter};

/// A coding agent in the terminal.
///
/// With no arguments it starts an interactive session; `-p "task"` runs one task and prints the
/// answer. It talks to Anthropic's Messages API when ANTHROPIC_API_KEY is set, to an
/// OpenAI-compatible API when OPENAI_API_KEY or OPENAI_BASE_URL is set, and otherwise to a local
/// OpenAI-compatible server at http://localhost:11434/v1 (Ollama's default).
///
/// Settings are read from ~/.config/agent-cli/settings.json (or $AGENT_CLI_HOME/settings.json) and
/// ./.agent-cli/settings.json (permissions, hooks, MCP servers, deferral, provider and model);
/// flags override them. MCP servers also come from ./.mcp.json. What a folder's own files would
/// widen (permission mode, allow rules, hooks, MCP servers that run commands, send headers or fill
/// in ${VAR}s, skills' allowed tools) applies only once you trust the folder (`agent-cli trust`);
/// deny and ask rules always apply.
/// AGENTS.md and CLAUDE.md from the repository root down (and ~/.config/agent-cli/AGENTS.md) go
/// into the system prompt. Sessions are saved as they happen under ~/.config/agent-cli/sessions
/// and compacted when they near the context window; `--continue` picks up the latest one in this
/// directory. In a session, /help lists the commands.
///
/// Examples:
///   agent-cli -p "explain src/main.rs"
///   ANTHROPIC_API_KEY=... agent-cli --permission-mode accept_edits
///   agent-cli tools search "create github issue" --explain
#[derive(Parser)]
#[command(
    name = "agent-cli",
    version,
    about,
    long_about,
    verbatim_doc_comment,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    run: RunArgs,

    /// Trust this folder for this run only: its own settings and .mcp.json may widen permissions
    /// (mode, allow rules, hooks, MCP server commands) without `agent-cli trust`.
    #[arg(long, global = true)]
    trust_project: bool,
}

#[derive(Args, Default)]
struct RunArgs {
    /// Run one task without interaction and print the result (calls that need approval are denied).
    #[arg(short = 'p', long = "print", value_name = "TASK")]
    print: Option<String>,

    /// What print mode writes to standard output.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,

    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_: bool,

    /// Resume the session with this id.
    #[arg(short = 'r', long, value_name = "ID")]
    resume: Option<String>,

    /// The most model requests in one turn.
    #[arg(long, default_value_t = 50)]
    max_turns: usize,

    /// With -p: the answer must be JSON valid against this JSON Schema file; standard output
    /// then holds only that JSON (the model is told what is wrong until it validates).
    #[arg(long, value_name = "FILE", requires = "print")]
    output_schema: Option<PathBuf>,

    #[command(flatten)]
    provider: ProviderArgs,

    #[command(flatten)]
    tools: ToolArgs,
}

#[derive(Args, Default, Clone)]
struct ProviderArgs {
    /// `anthropic` or `openai` (any OpenAI-compatible server).
    #[arg(long)]
    provider: Option<String>,
    /// The model's name.
    #[arg(long)]
    model: Option<String>,
    /// The provider's base URL, such as http://localhost:8080/v1.
    #[arg(long)]
    base_url: Option<String>,
}

#[derive(Args, Default, Clone)]
struct ToolArgs {
    /// Permission mode: default, accept_edits, plan, bypass or dont_ask.
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<PermissionMode>,
    /// Tool deferral: true, false, auto or auto:N.
    #[arg(long, value_name = "MODE")]
    defer_tools: Option<String>,
    /// How found deferred tools are called: proxy (through execute_tool) or inline.
    #[arg(long, value_name = "STRATEGY")]
    activation: Option<String>,
    /// Another directory the file tools may use (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    add_dir: Vec<PathBuf>,
    /// An allow rule such as `shell(git status:*)` (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// A deny rule such as `shell(rm:*)` or `mcp__slack` (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    deny: Vec<String>,
    /// Where shell commands may write: read-only, workspace-write (the default: the working
    /// directory, added directories and temporary directories) or off. Enforced with Landlock.
    #[arg(long, value_name = "MODE")]
    sandbox: Option<SandboxMode>,
}

#[derive(Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// The final answer as text.
    #[default]
    Text,
    /// One JSON object with the answer, session id, turns and usage.
    Json,
    /// One JSON object per line as the session happens.
    StreamJson,
}

#[derive(Subcommand)]
enum Command {
    /// Report what this machine and folder support: the shell sandbox, trust, settings.
    Doctor,
    /// Trust a folder (the current one by default): what its own settings, .mcp.json and skills
    /// enable (permission mode, allow rules, hooks, MCP servers that run commands, send headers or
    /// fill in ${VAR}s, skills' allowed tools) applies from now on, as it is now (a changed item
    /// asks again).
    Trust {
        /// The folder.
        dir: Option<PathBuf>,
    },
    /// Inspect and run tools.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// MCP servers: list the configured ones, or serve our tools to an MCP client.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Skills: folders with a SKILL.md in .agent-cli/skills/, .claude/skills/ or the user's
    /// skills/ directory (a project's skill wins a name).
    Skills {
        #[command(subcommand)]
        command: SkillsCommand,
    },
}

#[derive(Subcommand)]
enum SkillsCommand {
    /// List every skill: name, whose it is, description, folder and the tools it allows.
    List,
    /// Search the skills as the skill tool's query does.
    Search {
        /// Keywords describing the task.
        query: String,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

#[derive(Subcommand)]
enum McpCommand {
    /// Show each configured server (.mcp.json and the settings' mcpServers), its state and its tools.
    List {
        /// Seconds to wait for servers still connecting.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// Serve the built-in tools and tool_search (and through it the deferred tools) over MCP on
    /// stdio, with this project's permission rules applied (calls that would need approval are denied).
    Serve {
        #[command(flatten)]
        tools: ToolArgs,
    },
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// List the tools a request carries (and, with --deferred, the deferred ones).
    List {
        /// List the deferred tools instead.
        #[arg(long)]
        deferred: bool,
        #[command(flatten)]
        tools: ToolArgs,
    },
    /// Search the tools as tool_search would.
    Search {
        /// Keywords, +word, select:NAME, discover:words or mcp__SERVER.
        query: String,
        /// Show how each result's score came about.
        #[arg(long)]
        explain: bool,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[command(flatten)]
        tools: ToolArgs,
    },
    /// Call one tool through the whole lifecycle (with a permission prompt when needed).
    Call {
        /// The tool's name.
        name: String,
        /// The input, as a JSON object.
        #[arg(long, default_value = "{}")]
        input: String,
        #[command(flatten)]
        tools: ToolArgs,
    },
}

struct Context {
    cwd: PathBuf,
    paths: Paths,
    settings: Settings,
    /// What the project's files would widen that does not apply (not trusted).
    ignored: Vec<trust::Widening>,
    /// The project's skills whose `allowed-tools` apply.
    trusted_skills: std::collections::BTreeSet<String>,
}

impl Context {
    /// The working directory, its paths and the settings that apply (see [`trust::resolve`]).
    /// What the project's files would widen without the user's trust is ignored, with a note on
    /// stderr saying what and how to trust.
    fn load(trust_project: bool) -> anyhow::Result<Self> {
        let cwd = std::env::current_dir().context("reading the working directory")?;
        let paths = Paths::new(&cwd, &|name| std::env::var(name).ok());
        let resolved = trust::resolve(&paths, &cwd, trust_project)?;
        if !resolved.ignored.is_empty() {
            eprintln!("{}", trust::ignored_note(&resolved.ignored, &cwd));
        }
        for refused in &resolved.refused {
            eprintln!("note: {refused}");
        }
        Ok(Self {
            cwd,
            paths,
            settings: resolved.settings,
            ignored: resolved.ignored,
            trusted_skills: resolved.skills,
        })
    }

    /// The flags for the tool side, with what trust decided about the project's skills.
    fn tool_options(&self, args: &ToolArgs) -> ToolOptions {
        ToolOptions {
            mode: args.permission_mode,
            defer_tools: args.defer_tools.clone(),
            activation: args.activation.clone(),
            extra_roots: args.add_dir.clone(),
            allow: args.allow.clone(),
            deny: args.deny.clone(),
            sandbox: args.sandbox,
            trusted_skills: self.trusted_skills.clone(),
        }
    }

    fn runtime(
        &self,
        args: &ToolArgs,
        prompter: Option<Arc<dyn Prompter>>,
    ) -> anyhow::Result<ToolRuntime> {
        let id = "cli";
        ToolRuntime::build(
            &self.cwd,
            id,
            self.paths.sessions_dir().join(id),
            &self.settings,
            &self.tool_options(args),
            prompter,
        )
    }
}

fn main() -> ExitCode {
    // First, before any thread starts: this executable is also the shell sandbox's launcher.
    tool_builtins::run_if_launcher();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async_main())
}

async fn async_main() -> ExitCode {
    // The provider's key is the agent's, never a tool's: no shell command, hook or MCP server
    // this process starts sees it.
    for name in [
        agent_cli::provider::ANTHROPIC_API_KEY,
        agent_cli::provider::OPENAI_API_KEY,
    ] {
        tool_core::child_env::withhold(name);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Trust { dir }) => trust_command(dir),
        Some(Command::Doctor) => doctor_command(),
        Some(Command::Tools { command }) => tools_command(command, cli.trust_project).await,
        Some(Command::Mcp { command }) => mcp_command(command, cli.trust_project).await,
        Some(Command::Skills { command }) => skills_command(command, cli.trust_project),
        None => run(cli.run, cli.trust_project).await,
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `agent-cli skills list` and `agent-cli skills search QUERY`.
fn skills_command(command: SkillsCommand, trust_project: bool) -> anyhow::Result<ExitCode> {
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
fn doctor_command() -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}

/// `agent-cli trust [DIR]`: approves what the folder's own files widen.
fn trust_command(dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
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

async fn tools_command(command: ToolsCommand, trust_project: bool) -> anyhow::Result<ExitCode> {
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
async fn tools_list(ctx: &Context, tools: &ToolArgs, deferred: bool) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(tools, None)?;
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
async fn tools_search(
    ctx: &Context,
    tools: &ToolArgs,
    query: &str,
    explain: bool,
    limit: usize,
) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(tools, None)?;
    runtime.settle_mcp().await;
    let mut index = tool_search::SearchIndex::default();
    for tool in runtime.pool.visible_tools() {
        index.add(tool_pool::document(tool.as_ref()));
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
async fn tools_call(
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
    let prompter: Option<Arc<dyn Prompter>> = std::io::stdin().is_terminal().then(|| {
        Arc::new(ui::TerminalPrompter::new(
            ui::input_lines(),
            ctx.paths.clone(),
            ctx.cwd.clone(),
        )) as Arc<dyn Prompter>
    });
    let runtime = ctx.runtime(tools, prompter)?;
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

/// The provider from flags, then settings, then the environment.
fn provider_config(
    flags: &ProviderArgs,
    settings: &Settings,
) -> anyhow::Result<agent_cli::provider::ProviderConfig> {
    use agent_cli::provider::{ProviderChoice, ProviderConfig, ProviderKind};
    let kind = |text: Option<&String>, source: &str| -> anyhow::Result<Option<ProviderKind>> {
        text.map(|t| {
            t.parse::<ProviderKind>()
                .map_err(|e| anyhow::anyhow!("{source}: {e}"))
        })
        .transpose()
    };
    let from_flags = ProviderChoice {
        provider: kind(flags.provider.as_ref(), "--provider")?,
        model: flags.model.clone(),
        base_url: flags.base_url.clone(),
    };
    let from_settings = ProviderChoice {
        provider: kind(settings.provider.as_ref(), "the `provider` setting")?,
        model: settings.model.clone(),
        base_url: settings.base_url.clone(),
    };
    Ok(ProviderConfig::resolve(
        &from_flags,
        &from_settings,
        |name| std::env::var(name).ok(),
    ))
}

async fn mcp_command(command: McpCommand, trust_project: bool) -> anyhow::Result<ExitCode> {
    let ctx = Context::load(trust_project)?;
    match command {
        McpCommand::List { timeout } => mcp_list(&ctx, timeout).await,
        McpCommand::Serve { tools } => {
            let runtime = ctx.runtime(&tools, None)?;
            runtime.settle_mcp().await;
            tool_mcp::serve_stdio(Arc::new(runtime.executor.clone()), "agent-cli").await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `mcp list`: each server's state and tool count, and the project's servers waiting for trust.
async fn mcp_list(ctx: &Context, timeout: u64) -> anyhow::Result<ExitCode> {
    let runtime = ctx.runtime(&ToolArgs::default(), None)?;
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

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(100)
        .collect()
}

async fn run(args: RunArgs, trust_project: bool) -> anyhow::Result<ExitCode> {
    let interactive = args.print.is_none();
    let input = ui::input_lines();
    if interactive && !trust_project {
        ask_trust(&input).await?;
    }
    let ctx = Context::load(trust_project)?;
    let prompter: Option<Arc<dyn Prompter>> = interactive.then(|| {
        Arc::new(ui::TerminalPrompter::new(
            Arc::clone(&input),
            ctx.paths.clone(),
            ctx.cwd.clone(),
        )) as Arc<dyn Prompter>
    });
    let (transcript, messages) = open_session(&ctx, &args)?;
    let session_dir = ctx.paths.sessions_dir().join(transcript.id());
    let sandbox = args
        .tools
        .sandbox
        .or(ctx.settings.sandbox.mode)
        .unwrap_or_default();
    if let Some(warning) = tool_builtins::sandbox_warning(sandbox) {
        eprintln!("warning: {warning}");
    }
    let runtime = ToolRuntime::build(
        &ctx.cwd,
        transcript.id(),
        session_dir,
        &ctx.settings,
        &ctx.tool_options(&args.provider_tools()),
        prompter,
    )?;
    if let Some(manager) = &runtime.mcp {
        if interactive {
            tokio::spawn(ui::report_mcp_states(manager.watch_states()));
        } else {
            // A one-shot task has no later turn in which late tools could be used, so print mode
            // waits for the servers (each is bounded by its connect timeout; a broken one fails
            // fast) before the first request.
            runtime.settle_mcp().await;
        }
    }
    let mut agent = build_agent(&ctx, &args, runtime, transcript, messages)?;
    agent.max_turns = args.max_turns;

    let turn = cancel_on_ctrl_c();

    match args.print {
        Some(task) => {
            let structured = args.output_schema.is_some();
            print_mode(&mut agent, &task, args.output_format, &turn, structured).await
        }
        None => {
            let origins = RuleSources::load(&ctx, &args.tools)?;
            interactive_mode(&mut agent, input, &turn, &origins).await
        }
    }
}

/// The session a run continues (`--resume ID`, `--continue`) or a new one, with its messages.
fn open_session(
    ctx: &Context,
    args: &RunArgs,
) -> anyhow::Result<(Transcript, Vec<agent_cli::conversation::Message>)> {
    let sessions = ctx.paths.sessions_dir();
    if let Some(id) = &args.resume {
        Transcript::resume(&transcript::by_id(&sessions, id)?)
    } else if args.continue_ {
        let path = transcript::latest(&sessions, &ctx.cwd)?
            .context("there is no earlier session in this directory to continue; start one without --continue")?;
        Transcript::resume(&path)
    } else {
        Ok((Transcript::create(&sessions, &ctx.cwd)?, Vec::new()))
    }
}

/// The slot of the running turn's token: the first Ctrl-C cancels the turn, a second one (or
/// one between turns) exits.
fn cancel_on_ctrl_c() -> Arc<std::sync::Mutex<CancellationToken>> {
    let turn = Arc::new(std::sync::Mutex::new(CancellationToken::new()));
    let slot = Arc::clone(&turn);
    tokio::spawn(async move {
        let mut presses = 0u32;
        while tokio::signal::ctrl_c().await.is_ok() {
            let token = slot.lock().map(|t| t.clone()).ok();
            match token {
                Some(token) if !token.is_cancelled() && presses == 0 => {
                    presses += 1;
                    token.cancel();
                    eprintln!("\n(cancelling; press Ctrl-C again to exit)");
                }
                _ => std::process::exit(130),
            }
        }
    });
    turn
}

/// The agent for a run: the provider, the window and threshold, the output limit and prices
/// from the settings, and the project instructions in the system prompt.
fn build_agent(
    ctx: &Context,
    args: &RunArgs,
    runtime: ToolRuntime,
    transcript: Transcript,
    messages: Vec<agent_cli::conversation::Message>,
) -> anyhow::Result<Agent> {
    let settings = &ctx.settings;
    let config = provider_config(&args.provider, settings)?;
    let model = config.model.clone();
    let provider = agent_cli::provider::build(&config)?;
    let structured = match &args.output_schema {
        Some(path) => {
            let tool = StructuredOutput::new(structured::load_schema(path)?);
            let slot = tool.slot();
            runtime.registry.register(Arc::new(tool))?;
            runtime.pool.sync();
            Some(slot)
        }
        None => None,
    };
    let meter = Meter::new(settings.prices.clone());
    install_subagents(ctx, &runtime, &provider, &model, &meter)?;
    let files = instructions::files(&ctx.cwd, &ctx.paths.user_dir);
    let sources = instructions::load(&files, instructions::DEFAULT_BUDGET);
    let mut agent = Agent::new(provider, runtime, transcript, messages, model.clone())
        .with_meter(meter)
        .with_instructions(instructions::prompt_section(
            &sources,
            instructions::DEFAULT_BUDGET,
        ));
    agent.window = Window {
        tokens: usage::context_window(&model, settings.context_window),
        threshold: settings
            .compact_threshold
            .unwrap_or(compaction::DEFAULT_THRESHOLD),
    };
    if let Some(max_tokens) = settings.max_tokens {
        agent.max_tokens = max_tokens;
    }
    if let Some(slot) = structured {
        agent.expect_structured_output(slot);
    }
    Ok(agent)
}

/// The `agent` tool, with the agent types of this folder and of the user (a file that cannot be
/// used is a warning, not a failure); what sub-agents spend is added to the session's meter.
fn install_subagents(
    ctx: &Context,
    runtime: &ToolRuntime,
    provider: &Arc<dyn agent_cli::provider::Provider>,
    model: &str,
    meter: &Meter,
) -> anyhow::Result<()> {
    let types = AgentTypes::load(&AgentTypes::folders(&ctx.cwd, &ctx.paths.user_dir));
    for warning in &types.warnings {
        eprintln!("warning: {warning}");
    }
    let spent: UsageHook = {
        let meter = meter.clone();
        Arc::new(move |model: &str, usage| {
            meter.record(model, usage);
        })
    };
    subagent::install(
        runtime,
        types,
        Arc::clone(provider),
        model.to_owned(),
        Some(spent),
    )
}

/// Interactive start in a folder whose files would widen something not yet approved: one prompt
/// listing exactly what, answered trust or not now. "Trust" approves the items shown, not the
/// files as they are by then.
async fn ask_trust(input: &ui::InputLines) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let paths = Paths::new(&cwd, &|name| std::env::var(name).ok());
    let pending = trust::pending(&paths, &cwd)?;
    if pending.is_empty() {
        return Ok(());
    }
    eprint!("{}", ui::trust_prompt_text(&cwd, &pending));
    let _ = std::io::stderr().flush();
    let answer = input.lock().await.next_line().await?;
    if answer.is_some_and(|a| matches!(a.trim(), "t" | "trust" | "y" | "yes")) {
        trust::approve(&paths, &cwd, &pending)?;
        eprintln!("trusted {}", cwd.display());
    }
    Ok(())
}

impl RunArgs {
    fn provider_tools(&self) -> ToolArgs {
        self.tools.clone()
    }
}

fn fresh_token(turn: &std::sync::Mutex<CancellationToken>) -> CancellationToken {
    let token = CancellationToken::new();
    if let Ok(mut slot) = turn.lock() {
        *slot = token.clone();
    }
    token
}

async fn print_mode(
    agent: &mut Agent,
    task: &str,
    format: OutputFormat,
    turn: &std::sync::Mutex<CancellationToken>,
    structured: bool,
) -> anyhow::Result<ExitCode> {
    let observer = print_observer(format);
    let token = fresh_token(turn);
    let task = if structured {
        format!(
            "{task}\n\n(Give your final answer by calling the `{}` tool.)",
            structured::NAME
        )
    } else {
        task.to_owned()
    };
    attach_files(agent, &task);
    let report = agent.run_turn(&task, &token, &observer).await;
    let (mut is_error, text, report) = match report {
        Ok(report) => (
            report.outcome != Outcome::Done,
            report.text.clone(),
            Some(report),
        ),
        Err(err) => (true, format!("{err:#}"), None),
    };
    let answer = report.as_ref().and_then(|r| r.structured.clone());
    let mut subtype = match report.as_ref().map(|r| &r.outcome) {
        Some(Outcome::Done) => "success",
        Some(Outcome::MaxTurns) => "error_max_turns",
        Some(Outcome::Cancelled) => "cancelled",
        None => "error",
    };
    if structured && !is_error && answer.is_none() {
        is_error = true;
        subtype = "error_no_structured_output";
    }
    match format {
        OutputFormat::Text => match (&answer, is_error) {
            (Some(value), false) => println!("{value}"),
            (None, false) => println!("{text}"),
            (_, true) if report.is_none() => eprintln!("error: {text}"),
            (_, true) => {
                eprintln!("error: {subtype}");
                if !text.is_empty() && !structured {
                    println!("{text}");
                }
            }
        },
        OutputFormat::Json | OutputFormat::StreamJson => {
            // Everything this run spent: the turn, its compactions and its sub-agents.
            let spent = agent.session_usage();
            let mut summary = json!({
                "type": "result",
                "subtype": subtype,
                "is_error": is_error,
                "result": text,
                "session_id": agent.session_id(),
                "num_turns": report.as_ref().map_or(0, |r| r.requests),
                "usage": spent.usage,
                "total_cost_usd": spent.cost_usd,
            });
            if structured {
                summary["structured_output"] = answer.unwrap_or(Value::Null);
            }
            println!("{summary}");
        }
    }
    Ok(if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What print mode shows while it works: each event as a JSON line for `stream-json`, else
/// only retries and compactions, on standard error.
fn print_observer(format: OutputFormat) -> Observer {
    match format {
        OutputFormat::StreamJson => Arc::new(|event: AgentEvent| {
            if matches!(
                event,
                AgentEvent::Message { .. }
                    | AgentEvent::ToolResult { .. }
                    | AgentEvent::Retrying { .. }
                    | AgentEvent::Compacted { .. }
                    | AgentEvent::CompactionFailed { .. }
            ) && let Ok(line) = serde_json::to_string(&event)
            {
                println!("{line}");
            }
        }),
        _ => Arc::new(|event: AgentEvent| match event {
            AgentEvent::Retrying { attempt, reason } => {
                eprintln!("retrying (attempt {attempt}): {reason}");
            }
            AgentEvent::Compacted { .. } => eprintln!("{}", ui::compaction_text(&event)),
            AgentEvent::CompactionFailed { reason } => {
                eprintln!("the conversation could not be compacted: {reason}");
            }
            _ => {}
        }),
    }
}

async fn interactive_mode(
    agent: &mut Agent,
    input: ui::InputLines,
    turn: &std::sync::Mutex<CancellationToken>,
    origins: &RuleSources,
) -> anyhow::Result<ExitCode> {
    eprintln!(
        "agent-cli · session {} · {} tools loaded, {} deferred · /help lists commands · Ctrl-C cancels a turn, Ctrl-D exits",
        agent.session_id(),
        agent.runtime.pool.request_tools().tools.len(),
        agent.runtime.pool.deferred_names().len()
    );
    print_recap(agent);
    let observer = terminal_observer();
    loop {
        eprint!("\n> ");
        let _ = std::io::stderr().flush();
        let line = input.lock().await.next_line().await?;
        let Some(line) = line else {
            return Ok(ExitCode::SUCCESS);
        };
        if line.trim().is_empty() {
            continue;
        }
        match Slash::parse(&line) {
            Some(Ok(Slash::Exit)) => return Ok(ExitCode::SUCCESS),
            Some(Ok(command)) => {
                let token = fresh_token(turn);
                match slash(agent, command, &token, &observer, origins).await {
                    Ok(text) => println!("{text}"),
                    Err(err) => eprintln!("error: {err:#}"),
                }
                continue;
            }
            Some(Err(message)) => {
                eprintln!("{message}");
                continue;
            }
            None => {}
        }
        let token = fresh_token(turn);
        attach_files(agent, &line);
        match agent.run_turn(line.trim(), &token, &observer).await {
            Ok(report) => {
                println!();
                match report.outcome {
                    Outcome::Done => {}
                    Outcome::MaxTurns => {
                        eprintln!("(stopped after {} model requests)", report.requests)
                    }
                    Outcome::Cancelled => eprintln!("(turn cancelled)"),
                }
                eprintln!(
                    "{}",
                    turn_usage_line(&report.costed(), &agent.session_usage())
                );
            }
            Err(err) => eprintln!("\nerror: {err:#}"),
        }
    }
}

/// A resumed session's conversation so far (from its latest summary on), with what each
/// sub-agent did, so the user sees where the work stands before the first prompt.
fn print_recap(agent: &Agent) {
    if agent.messages().is_empty() {
        return;
    }
    let registry = &agent.runtime.registry;
    let describe = |name: &str, input: &serde_json::Value| {
        registry
            .get(name)
            .and_then(|entry| entry.tool().activity(input))
            .unwrap_or_else(|| format!("{name} {input}"))
    };
    let lines = agent_cli::recap::recap(
        agent.messages(),
        agent.runtime.session.dir(),
        &describe,
        RECAP_LINES,
    );
    eprintln!("── the conversation so far ──");
    for line in lines {
        eprintln!("{line}");
    }
    eprintln!("──");
}

/// How many lines of a resumed conversation are shown at the start.
const RECAP_LINES: usize = 40;

/// Attaches the files the prompt's `@path` words name to the next message, saying on stderr
/// which could not be attached and why.
fn attach_files(agent: &mut Agent, prompt: &str) {
    let cwd = agent.runtime.session.cwd().to_path_buf();
    let rules = agent.runtime.permissions.rules();
    let read_file = agent.runtime.registry.get("read_file");
    let denied = |path: &Path| {
        read_file.as_ref().is_some_and(|entry| {
            let input = serde_json::json!({ "path": path });
            rules
                .deny
                .iter()
                .any(|rule| rule.matches(entry.tool().as_ref(), &input, &cwd))
        })
    };
    let (blocks, notes) = agent_cli::attachments::attach(prompt, &cwd, &denied);
    for note in notes {
        eprintln!("note: {note}");
    }
    agent.attach(blocks);
}

/// The line after each turn: its tokens and cost, and the session's cost so far.
fn turn_usage_line(turn: &usage::Costed, session: &usage::Costed) -> String {
    let mut line = format!("  tokens: {}", turn.line());
    if let Some(cost) = session.cost_usd {
        line.push_str(&format!(" (session ${cost:.4})"));
    }
    line
}

/// Runs a slash command; returns what to print.
async fn slash(
    agent: &mut Agent,
    command: Slash,
    cancel: &CancellationToken,
    observer: &Observer,
    origins: &RuleSources,
) -> anyhow::Result<String> {
    Ok(match command {
        Slash::Help => commands::HELP.to_owned(),
        Slash::Clear => {
            agent.clear()?;
            "(conversation cleared: the next message starts afresh)".to_owned()
        }
        Slash::Compact(keep) => {
            let spent = agent.compact_now(keep.as_deref(), cancel, observer).await?;
            format!("  tokens: {}", spent.line())
        }
        Slash::Context => commands::context_report(agent),
        Slash::Cost => commands::cost_report(agent),
        Slash::Tools => commands::tools_report(agent),
        Slash::Mcp => commands::mcp_report(agent),
        Slash::Model(Some(model)) => {
            agent.window.tokens = usage::context_window(&model, origins.context_window);
            agent.set_model(model);
            format!(
                "(later requests go to {}, whose context window is taken as {} tokens)",
                agent.model(),
                agent.window.tokens
            )
        }
        Slash::Model(None) => format!("model: {}", agent.model()),
        Slash::Permissions => commands::permissions_report(
            agent.runtime.session.mode(),
            &agent.runtime.permissions.rules(),
            &origins.origins,
            &origins.waiting,
        ),
        Slash::Exit => String::new(),
    })
}

/// Where the permission rules in force came from, for `/permissions`.
struct RuleSources {
    origins: Vec<commands::RuleOrigin>,
    /// The project's allow rules that wait for trust.
    waiting: Vec<tool_core::PermissionRule>,
    /// The `contextWindow` setting, which holds for any model `/model` picks.
    context_window: Option<usize>,
}

impl RuleSources {
    fn load(ctx: &Context, args: &ToolArgs) -> anyhow::Result<Self> {
        let user = Settings::load(&ctx.paths.user_settings())?.rules();
        let project = trust::ProjectFiles::load(&ctx.paths, &ctx.cwd)?
            .settings
            .rules();
        let flags = tool_core::PermissionRules::parse(
            &args.allow.iter().map(String::as_str).collect::<Vec<_>>(),
            &[],
            &args.deny.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        let kept = trust::project_rules(&ctx.paths, &ctx.cwd)?;
        let kept = tool_core::PermissionRules {
            allow: kept,
            ..tool_core::PermissionRules::default()
        };
        let waiting = ctx
            .ignored
            .iter()
            .filter_map(|item| match item {
                trust::Widening::Allow(rule) => Some(rule.clone()),
                _ => None,
            })
            .collect();
        let origin = |origin: String, rules| commands::RuleOrigin { origin, rules };
        Ok(Self {
            origins: vec![
                origin("command line".to_owned(), flags),
                origin(
                    format!(
                        "allowed in this project (your choice, kept in {})",
                        trust::TrustStore::new(&ctx.paths).path().display()
                    ),
                    kept,
                ),
                origin(
                    format!(
                        "project settings ({})",
                        ctx.paths.project_settings().display()
                    ),
                    project,
                ),
                origin(
                    format!("user settings ({})", ctx.paths.user_settings().display()),
                    user,
                ),
            ],
            waiting,
            context_window: ctx.settings.context_window,
        })
    }
}

/// What the interactive mode shows while a turn runs: streamed text on stdout, tool progress,
/// results, retries and compactions on stderr.
fn terminal_observer() -> Observer {
    // Streamed text may stop mid-line; a status line must then start on a line of its own.
    let mid_line = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let end_line = {
        let mid_line = Arc::clone(&mid_line);
        move || {
            if mid_line.swap(false, std::sync::atomic::Ordering::Relaxed) {
                println!();
            }
        }
    };
    Arc::new(move |event: AgentEvent| match event {
        AgentEvent::Text { text } => {
            print!("{text}");
            let _ = std::io::stdout().flush();
            mid_line.store(!text.ends_with('\n'), std::sync::atomic::Ordering::Relaxed);
        }
        AgentEvent::Tool { event } => {
            end_line();
            ui::print_event(&event);
        }
        AgentEvent::ToolResult { name, result } => {
            end_line();
            ui::print_result(&name, &result);
        }
        AgentEvent::Retrying { attempt, reason } => {
            eprintln!("  (retrying, attempt {attempt}: {reason})")
        }
        AgentEvent::Compacted { .. } => {
            end_line();
            eprintln!("  {}", ui::compaction_text(&event));
        }
        AgentEvent::CompactionFailed { reason } => {
            end_line();
            eprintln!("  (the conversation could not be compacted: {reason})");
        }
        AgentEvent::Thinking { .. } | AgentEvent::Message { .. } => {}
    })
}
