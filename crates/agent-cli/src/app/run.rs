//! A run without a subcommand: the session assembled, then print mode or the interactive front end.

use super::*;

/// Asks about trust (interactive), loads the settings, opens or resumes the session, builds the
/// agent, then answers one task (`-p`) or runs the interactive loop.
pub(crate) async fn run(args: RunArgs, trust_project: bool) -> anyhow::Result<ExitCode> {
    let interactive = args.print.is_none();
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let input = ui::input_lines(&Paths::new(&cwd, &|name| std::env::var(name).ok()), &cwd);
    if interactive && !trust_project {
        ask_trust(&input).await?;
    }
    let ctx = Context::load(trust_project)?;
    let terminal = interactive.then(|| {
        Arc::new(ui::Terminal::new(
            Arc::clone(&input),
            ctx.paths.clone(),
            ctx.cwd.clone(),
        ))
    });
    let front_end: Arc<dyn FrontEnd> = match &terminal {
        Some(terminal) => Arc::clone(terminal) as Arc<dyn FrontEnd>,
        None => print_front_end(args.output_format),
    };
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
    let mut options = ctx.tool_options(&args.provider_tools());
    options.native_activation =
        provider_config(&args.provider, &ctx.settings)?.loads_deferred_tools();
    let runtime = ToolRuntime::build(
        &ctx.cwd,
        transcript.id(),
        session_dir,
        &ctx.settings,
        &options,
        front_end,
    )?;
    if let Some(manager) = &runtime.mcp {
        if let Some(terminal) = &terminal {
            tokio::spawn(ui::report_mcp_states(
                Arc::clone(terminal),
                manager.watch_states(),
            ));
        } else {
            // A one-shot task has no later turn in which late tools could be used, so print mode
            // waits for the servers (each is bounded by its connect timeout; a broken one fails
            // fast) before the first request.
            runtime.settle_mcp().await;
        }
    }
    let mut agent = build_agent(&ctx, &args, runtime, transcript, messages)?;
    agent.max_turns = args.max_turns;

    let turn = cancel_on_ctrl_c(terminal.clone());

    match args.print {
        Some(task) => {
            let structured = args.output_schema.is_some();
            print_mode(&mut agent, &task, args.output_format, &turn, structured).await
        }
        None => {
            let origins = RuleSources::load(&ctx, &args.tools)?;
            let terminal = terminal.context("the interactive mode has a terminal front end")?;
            interactive_mode(&mut agent, &input, &terminal, &turn, &origins).await
        }
    }
}
