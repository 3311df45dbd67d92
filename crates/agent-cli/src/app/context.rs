//! What a run is assembled from: the folder's settings as trust resolved them, the provider, the session, the agent with its sub-agents, and Ctrl-C.

use super::*;

pub(crate) struct Context {
    pub(crate) cwd: PathBuf,
    pub(crate) paths: Paths,
    pub(crate) settings: Settings,
    /// What the project's files would widen that does not apply (not trusted).
    pub(crate) ignored: Vec<trust::Widening>,
    /// The project's skills whose `allowed-tools` apply.
    pub(crate) trusted_skills: std::collections::BTreeSet<String>,
}

impl Context {
    /// The working directory, its paths and the settings that apply (see [`trust::resolve`]).
    /// What the project's files would widen without the user's trust is ignored, with a note on
    /// stderr saying what and how to trust.
    pub(crate) fn load(trust_project: bool) -> anyhow::Result<Self> {
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
    pub(crate) fn tool_options(&self, args: &ToolArgs) -> ToolOptions {
        ToolOptions {
            mode: args.permission_mode,
            defer_tools: args.defer_tools.clone(),
            activation: args.activation.clone(),
            native_activation: false,
            extra_roots: args.add_dir.clone(),
            allow: args.allow.clone(),
            deny: args.deny.clone(),
            sandbox: args.sandbox,
            trusted_skills: self.trusted_skills.clone(),
            embeddings: args.embeddings.clone(),
            embeddings_cache: Some(self.paths.embeddings_cache()),
            no_builtins: false,
            no_skill_grants: false,
        }
    }

    pub(crate) fn runtime(
        &self,
        args: &ToolArgs,
        front_end: Arc<dyn FrontEnd>,
    ) -> anyhow::Result<ToolRuntime> {
        self.runtime_with(&self.tool_options(args), front_end)
    }

    /// [`Context::runtime`] with options already made from the flags.
    pub(crate) fn runtime_with(
        &self,
        options: &ToolOptions,
        front_end: Arc<dyn FrontEnd>,
    ) -> anyhow::Result<ToolRuntime> {
        let id = "cli";
        ToolRuntime::build(
            &self.cwd,
            id,
            self.paths.sessions_dir().join(id),
            &self.settings,
            options,
            front_end,
        )
    }
}

/// The provider from flags, then settings, then the environment.
pub(crate) fn provider_config(
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
    let mut config =
        ProviderConfig::resolve(&from_flags, &from_settings, |name| std::env::var(name).ok());
    config.native_tool_search = settings.native_tool_search.unwrap_or(false);
    Ok(config)
}

/// The session a run continues (`--resume ID`, `--continue`) or a new one, with its messages.
pub(crate) fn open_session(
    ctx: &Context,
    args: &RunArgs,
) -> anyhow::Result<(Transcript, Vec<agent_cli::conversation::Message>)> {
    let sessions = ctx.paths.sessions_dir();
    if args.resume.as_deref() == Some("") {
        Transcript::resume(&pick_session(ctx)?)
    } else if let Some(id) = &args.resume {
        Transcript::resume(&transcript::by_id(&sessions, id)?)
    } else if args.continue_ {
        let path = transcript::latest(&sessions, &ctx.cwd)?
            .context("there is no earlier session in this directory to continue; start one without --continue")?;
        Transcript::resume(&path)
    } else {
        Ok((Transcript::create(&sessions, &ctx.cwd)?, Vec::new()))
    }
}

/// How many sessions `--resume` without an id offers.
const RECENT_SESSIONS: usize = 9;

/// `--resume` without an id: the recent sessions of this directory, one picked from a menu on a
/// terminal; elsewhere an error listing them, so the id can be given.
fn pick_session(ctx: &Context) -> anyhow::Result<PathBuf> {
    let sessions = transcript::recent(&ctx.paths.sessions_dir(), &ctx.cwd, RECENT_SESSIONS)?;
    if sessions.is_empty() {
        anyhow::bail!(
            "there is no earlier session in this directory to resume; start one without --resume"
        );
    }
    let now = std::time::SystemTime::now();
    let labels: Vec<String> = sessions
        .iter()
        .map(|s| {
            let prompt = tool_core::head_chars(&s.first_prompt, 60);
            let more = if prompt.1 > 0 { "…" } else { "" };
            format!(
                "{} · {} · {}{more}",
                transcript::ago(s.modified, now),
                s.id,
                prompt.0
            )
        })
        .collect();
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        anyhow::bail!(
            "--resume needs a session id when there is no terminal to pick one on; the recent sessions here:\n  {}",
            labels.join("\n  ")
        );
    }
    let header = ["Resume which session of this directory?".to_owned()];
    match ui::pick(&header, &labels)? {
        Some(i) => Ok(sessions[i].path.clone()),
        None => anyhow::bail!("no session picked"),
    }
}

/// The slot of the running turn's token: the first Ctrl-C cancels the turn, a second one (or
/// one between turns) exits.
pub(crate) fn cancel_on_ctrl_c(
    terminal: Option<Arc<ui::Terminal>>,
) -> Arc<std::sync::Mutex<CancellationToken>> {
    let turn = Arc::new(std::sync::Mutex::new(CancellationToken::new()));
    let slot = Arc::clone(&turn);
    // Registered now, before the line editor first reads: it sets its own handler while it
    // reads and puts back the one it found, which must be this one.
    let interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
    let mut interrupts = match interrupts {
        Ok(interrupts) => interrupts,
        Err(err) => {
            eprintln!("warning: Ctrl-C cannot cancel a turn: {err}");
            return turn;
        }
    };
    tokio::spawn(async move {
        let mut presses = 0u32;
        while interrupts.recv().await.is_some() {
            let token = slot.lock().map(|t| t.clone()).ok();
            match token {
                Some(token) if !token.is_cancelled() && presses == 0 => {
                    presses += 1;
                    token.cancel();
                    let note = "(cancelling; press Ctrl-C again to exit)";
                    match &terminal {
                        Some(terminal) => terminal.notice(note),
                        None => eprintln!("\n{note}"),
                    }
                }
                _ => std::process::exit(130),
            }
        }
    });
    turn
}

/// The agent for a run: the provider, the window and threshold, the output limit and prices
/// from the settings, and the project instructions in the system prompt.
pub(crate) fn build_agent(
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
    agent.thinking = args.thinking.or(settings.thinking).unwrap_or_default();
    if let Some(slot) = structured {
        agent.expect_structured_output(slot);
    }
    Ok(agent)
}

/// The `agent` tool, with the agent types of this folder and of the user (a file that cannot be
/// used is a warning, not a failure); what sub-agents spend is added to the session's meter.
pub(crate) fn install_subagents(
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
    subagent::install(
        runtime,
        types,
        Arc::clone(provider),
        model.to_owned(),
        meter.clone(),
    )
}

pub(crate) fn fresh_token(turn: &std::sync::Mutex<CancellationToken>) -> CancellationToken {
    let token = CancellationToken::new();
    if let Ok(mut slot) = turn.lock() {
        *slot = token.clone();
    }
    token
}
