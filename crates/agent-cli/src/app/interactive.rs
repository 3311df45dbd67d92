//! The interactive front end: the trust question, the prompt loop, slash commands, `@path` attachments, the recap of a resumed session and the terminal's rendering of events.

use super::*;

/// Interactive start in a folder whose files would widen something not yet approved: one prompt
/// listing exactly what, answered trust or not now. "Trust" approves the items shown, not the
/// files as they are by then.
pub(crate) async fn ask_trust(input: &ui::InputLines) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let paths = Paths::new(&cwd, &|name| std::env::var(name).ok());
    let pending = trust::pending(&paths, &cwd)?;
    if pending.is_empty() {
        return Ok(());
    }
    let answer = input.line(&ui::trust_prompt_text(&cwd, &pending)).await?;
    if answer.is_some_and(|a| matches!(a.trim(), "t" | "trust" | "y" | "yes")) {
        trust::approve(&paths, &cwd, &pending)?;
        eprintln!("trusted {}", cwd.display());
    }
    Ok(())
}

pub(crate) async fn interactive_mode(
    agent: &mut Agent,
    input: &ui::InputLines,
    terminal: &ui::Terminal,
    turn: &std::sync::Mutex<CancellationToken>,
    origins: &RuleSources,
) -> anyhow::Result<ExitCode> {
    let multi_line = if input.is_terminal() {
        " · end a line with \\ (or press Alt-Enter) for another"
    } else {
        ""
    };
    eprintln!(
        "agent-cli · session {} · {} tools loaded, {} deferred · /help lists commands · Ctrl-C cancels a turn, Ctrl-D exits{multi_line}",
        agent.session_id(),
        agent.runtime.pool.request_tools().tools.len(),
        agent.runtime.pool.deferred_names().len()
    );
    let skills: Vec<String> = agent
        .runtime
        .skills
        .set()
        .iter()
        .map(|skill| skill.name.clone())
        .collect();
    input.set_skills(skills.clone());
    print_recap(agent);
    eprintln!("{}", commands::status_line(agent));
    loop {
        let line = match input.prompt("\n> ").await? {
            Read::Line(line) => line,
            Read::End => return Ok(ExitCode::SUCCESS),
            // Ctrl-C between turns leaves, as it always has.
            Read::Interrupted => return Ok(ExitCode::from(130)),
        };
        if line.trim().is_empty() {
            continue;
        }
        let prompt = match Slash::parse(&line) {
            Some(Ok(Slash::Exit)) => return Ok(ExitCode::SUCCESS),
            Some(Ok(command)) => {
                let token = fresh_token(turn);
                match slash(agent, command, &token, origins).await {
                    Ok(text) => println!("{text}"),
                    Err(err) => eprintln!("error: {err:#}"),
                }
                continue;
            }
            Some(Err(message)) => match skill_prompt(&line, &skills) {
                Some(prompt) => prompt,
                None => {
                    eprintln!("{message}");
                    continue;
                }
            },
            None => line.trim().to_owned(),
        };
        run_prompt(agent, terminal, turn, &prompt).await;
    }
}

/// `/NAME what to do` for a skill NAME: a prompt asking the model to use that skill.
pub(crate) fn skill_prompt(line: &str, skills: &[String]) -> Option<String> {
    let rest = line.trim().strip_prefix('/')?;
    let (name, task) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    skills.iter().any(|s| s == name).then(|| {
        format!("Use the `{name}` skill. {}", task.trim())
            .trim_end()
            .to_owned()
    })
}

/// One turn of the conversation: the prompt's attachments, the answer, and the lines after it.
async fn run_prompt(
    agent: &mut Agent,
    terminal: &ui::Terminal,
    turn: &std::sync::Mutex<CancellationToken>,
    prompt: &str,
) {
    let token = fresh_token(turn);
    attach_files(agent, prompt);
    terminal.start_turn();
    let result = agent.run_turn(prompt, &token).await;
    terminal.end_turn();
    match result {
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
            eprintln!("{}", commands::status_line(agent));
        }
        Err(err) => eprintln!("\nerror: {err:#}"),
    }
}

/// A resumed session's conversation so far (from its latest summary on), with what each
/// sub-agent did, so the user sees where the work stands before the first prompt.
pub(crate) fn print_recap(agent: &Agent) {
    if agent.messages().is_empty() {
        return;
    }
    let registry = &agent.runtime.registry;
    let describe = |name: &str, input: &serde_json::Value| {
        registry
            .get(name)
            .and_then(|entry| entry.tool().info(input).ok())
            .and_then(|call| call.activity().map(str::to_owned))
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
pub(crate) const RECAP_LINES: usize = 40;

/// Attaches the files the prompt's `@path` words name to the next message, saying on stderr
/// which could not be attached and why.
pub(crate) fn attach_files(agent: &mut Agent, prompt: &str) {
    for note in agent.attach_files(prompt) {
        eprintln!("note: {note}");
    }
}

/// The line after each turn: its tokens and cost, and the session's cost so far.
pub(crate) fn turn_usage_line(turn: &usage::Costed, session: &usage::Costed) -> String {
    let mut line = format!("  tokens: {}", turn.line());
    if let Some(cost) = session.cost_usd {
        line.push_str(&format!(" (session ${cost:.4})"));
    }
    line
}

/// Runs a slash command; returns what to print.
pub(crate) async fn slash(
    agent: &mut Agent,
    command: Slash,
    cancel: &CancellationToken,
    origins: &RuleSources,
) -> anyhow::Result<String> {
    Ok(match command {
        Slash::Help => commands::HELP.to_owned(),
        Slash::Clear => {
            agent.clear()?;
            "(conversation cleared: the next message starts afresh)".to_owned()
        }
        Slash::Compact(keep) => {
            let spent = agent.compact_now(keep.as_deref(), cancel).await?;
            format!("  tokens: {}", spent.line())
        }
        Slash::Context => commands::context_report(agent),
        Slash::Cost => commands::cost_report(agent),
        Slash::Tools => commands::tools_report(agent),
        Slash::Mcp => commands::mcp_report(agent),
        Slash::Model(Some(model)) => {
            agent.window.tokens = usage::context_window(&model, origins.context_window);
            agent.max_tokens = origins
                .max_tokens
                .or_else(|| usage::max_output_tokens(&model))
                .unwrap_or(agent_cli::agent::DEFAULT_MAX_TOKENS);
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
            &agent.permission_rules(),
            &origins.origins,
            &origins.waiting,
        ),
        Slash::Exit => String::new(),
    })
}

/// Where the permission rules in force came from, for `/permissions`.
pub(crate) struct RuleSources {
    pub(crate) origins: Vec<commands::RuleOrigin>,
    /// The project's allow rules that wait for trust.
    pub(crate) waiting: Vec<tool_core::PermissionRule>,
    /// The `contextWindow` setting, which holds for any model `/model` picks.
    pub(crate) context_window: Option<usize>,
    /// The `maxTokens` setting, likewise.
    pub(crate) max_tokens: Option<u32>,
}

impl RuleSources {
    pub(crate) fn load(ctx: &Context, args: &ToolArgs) -> anyhow::Result<Self> {
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
            max_tokens: ctx.settings.max_tokens,
        })
    }
}
