//! The tool side of a session: registry, built-ins, pool and executor, built from settings.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::Context as _;
use tool_builtins::{Builtins, ReadDenies, SandboxMode, ShellConfig};
use tool_core::{
    AnyTool, CommandHook, Executor, PermissionMode, PermissionRules, Permissions, PostToolHook,
    PreToolHook, Session, ToolRegistry,
};
use tool_mcp::{McpConfig, McpManager, McpOptions, ServerState};
use tool_pool::{Activation, DeferralMode, PoolConfig, ToolPool};
use tool_skills::{SkillSession, SkillTool};

use crate::conversation::{Message, Role};
use crate::frontend::{self, FrontEnd};
use crate::settings::{Paths, Settings};
use crate::skills::SkillSearch;

/// What the command line adds to the settings for the tool side.
#[derive(Debug, Clone, Default)]
pub struct ToolOptions {
    /// `--permission-mode`.
    pub mode: Option<PermissionMode>,
    /// `--defer-tools`.
    pub defer_tools: Option<String>,
    /// `--activation`.
    pub activation: Option<String>,
    /// The provider loads deferred tools itself
    /// ([`crate::provider::ProviderConfig::loads_deferred_tools`]): without `--activation` or the
    /// setting, activation is `native`, else `proxy`.
    pub native_activation: bool,
    /// `--add-dir`.
    pub extra_roots: Vec<PathBuf>,
    /// `--allow` rules.
    pub allow: Vec<String>,
    /// `--deny` rules.
    pub deny: Vec<String>,
    /// `--sandbox`.
    pub sandbox: Option<SandboxMode>,
    /// The project's skills whose `allowed-tools` apply, as [`crate::trust::resolve`] decided
    /// (the user's own skills' always do).
    pub trusted_skills: std::collections::BTreeSet<String>,
    /// `--embeddings`: a model folder for a hybrid `tool_search` (over `search.embeddings`).
    pub embeddings: Option<PathBuf>,
    /// Where the tools' embeddings are kept between sessions.
    pub embeddings_cache: Option<PathBuf>,
    /// Leave the built-in tools out (`mcp serve --no-builtins`: a gateway to MCP servers only).
    pub no_builtins: bool,
    /// Skills' `allowed-tools` grant nothing (`mcp serve`: a grant lasts for the rest of a turn,
    /// and a gateway's clients have no turns, and over HTTP share one process).
    pub no_skill_grants: bool,
}

/// The tools of one session, wired together.
pub struct ToolRuntime {
    /// Every tool, built-ins and MCP.
    pub registry: Arc<ToolRegistry>,
    /// Which tools go in each request.
    pub pool: ToolPool,
    /// Runs calls through the lifecycle.
    pub executor: Executor,
    /// The session (id, directory, mode).
    pub session: Arc<Session>,
    /// The permission stage (its rules grow with "always allow" answers).
    pub permissions: Arc<Permissions>,
    /// The MCP servers, when any are configured.
    pub mcp: Option<McpManager>,
    /// The session's skills (the `skill` tool is registered when there is at least one).
    pub skills: Arc<SkillSession>,
    /// The model's context window in tokens, which sizes the skill listing.
    pub context_window: usize,
    /// What a restricted runtime built from this one (a sub-agent's) inherits.
    inheritance: Inheritance,
    /// Where the agent and its tools report, and ask.
    pub(crate) front_end: Arc<dyn FrontEnd>,
}

/// What a restricted runtime (a sub-agent's) inherits from the runtime it was built from: the
/// registry its tools are picked from, the session (so a permission mode change applies to both),
/// the permission rules, the hooks and the front end.
#[derive(Clone)]
pub struct Inheritance {
    /// The parent's registry. Weak, because the tools that keep an inheritance are registered in
    /// it, and a strong reference would keep the registry alive forever.
    pub registry: Weak<ToolRegistry>,
    /// The parent's session.
    pub session: Arc<Session>,
    /// The parent's permission stage (rules learned from "always allow" answers included).
    pub permissions: Arc<Permissions>,
    /// The parent's pre-tool hooks.
    pub pre_hooks: Vec<Arc<dyn PreToolHook>>,
    /// The parent's post-tool hooks.
    pub post_hooks: Vec<Arc<dyn PostToolHook>>,
    /// The parent's front end.
    pub front_end: Arc<dyn FrontEnd>,
    /// The parent's deferral, activation and announcement budget: a sub-agent offered deferred
    /// tools finds them with its own `tool_search` and is told of them the same way.
    pub pool: PoolConfig,
}

impl Inheritance {
    /// A runtime whose model sees only `offered` and whose executor also knows `refused`, so
    /// that a call of one of those gets that tool's own answer rather than "no such tool". The
    /// offered tools are deferred as the parent's are, and found with the runtime's own
    /// `tool_search` (over the offered tools alone); with none to defer, every one is sent. It
    /// shares the session and the hooks, starts from the current rules, and reports to and asks
    /// through `front_end` instead of the parent's.
    pub fn restricted(
        &self,
        offered: Vec<AnyTool>,
        refused: Vec<AnyTool>,
        front_end: Arc<dyn FrontEnd>,
    ) -> anyhow::Result<ToolRuntime> {
        let visible = Arc::new(ToolRegistry::new());
        let callable = Arc::new(ToolRegistry::new());
        for tool in &offered {
            visible.register(tool.clone())?;
        }
        let mode = if self.pool.mode == DeferralMode::Standard || !defers_any(&self.pool, &offered)
        {
            DeferralMode::Standard
        } else {
            self.pool.mode
        };
        let config = PoolConfig {
            mode,
            ..self.pool.clone()
        };
        let pool = ToolPool::new(Arc::clone(&visible), config)?;
        // The pool's own tool_search and execute_tool come first: the parent's are refused.
        for tool in visible.tools() {
            callable.register(tool)?;
        }
        for tool in refused {
            if !callable.contains(&tool.spec().name) {
                callable.register(tool)?;
            }
        }
        let rules = self.permissions.rules();
        pool.set_rules(rules.clone());
        let mut permissions = Permissions::new(rules);
        if let Some(prompter) = frontend::prompter(&front_end) {
            permissions = permissions.with_prompter(prompter);
        }
        let permissions = Arc::new(permissions);
        let mut builder = Executor::builder(Arc::clone(&callable), Arc::clone(&self.session))
            .permissions(Arc::clone(&permissions));
        for hook in &self.pre_hooks {
            builder = builder.pre_hook(Arc::clone(hook));
        }
        for hook in &self.post_hooks {
            builder = builder.post_hook(Arc::clone(hook));
        }
        let inheritance = Self {
            registry: Arc::downgrade(&callable),
            permissions: Arc::clone(&permissions),
            front_end: Arc::clone(&front_end),
            ..self.clone()
        };
        Ok(ToolRuntime {
            registry: callable,
            pool,
            executor: builder.build(),
            session: Arc::clone(&self.session),
            permissions,
            mcp: None,
            skills: Arc::new(SkillSession::new(Arc::default())),
            context_window: crate::skills::DEFAULT_CONTEXT_WINDOW,
            inheritance,
            front_end,
        })
    }
}

/// Whether a pool configured as `config` would defer any of `tools` (the always-loaded, the
/// core whitelist and the pool's own tools are never deferred).
fn defers_any(config: &PoolConfig, tools: &[AnyTool]) -> bool {
    tools.iter().any(|tool| {
        let spec = tool.spec();
        spec.loading != tool_core::Loading::AlwaysLoad && !config.core.contains(&spec.name)
    })
}

/// The model folder `tool_search` embeds with, if any: the flag's, else the setting's.
pub fn embeddings_folder<'a>(settings: &'a Settings, options: &'a ToolOptions) -> Option<&'a Path> {
    options
        .embeddings
        .as_deref()
        .or(settings.search.embeddings.as_deref())
}

/// The dense side of `tool_search`, with the `embeddings` feature.
#[cfg(feature = "embeddings")]
pub mod hybrid {
    use std::path::Path;
    use std::sync::Arc;

    use anyhow::Context as _;
    use tool_pool::ToolPool;
    use tool_search::{DenseIndex, SentenceEncoder};

    /// Loads the model in `folder` and makes the pool's `tool_search` hybrid; the tools'
    /// vectors are read from and kept in `cache`.
    pub(crate) fn attach(
        pool: &ToolPool,
        folder: &Path,
        cache: Option<&Path>,
    ) -> anyhow::Result<()> {
        let encoder = open(folder)?;
        let dense = DenseIndex::new(Arc::new(encoder), cache);
        pool.set_dense_index(dense)
            .with_context(|| format!("embedding the tools with the model in {}", folder.display()))
    }

    /// What `doctor` says about tool search with the model in `folder`.
    pub fn describe(folder: &Path) -> String {
        match open(folder) {
            Ok(encoder) => format!("hybrid (keywords and {})", encoder.describe()),
            Err(err) => format!("keywords only: {err:#}"),
        }
    }

    fn open(folder: &Path) -> anyhow::Result<SentenceEncoder> {
        SentenceEncoder::open(folder).with_context(|| {
            format!(
                "the embeddings model in {} (search.embeddings or --embeddings) cannot be \
                 loaded; name a sentence-transformers folder with model.safetensors, \
                 config.json and tokenizer.json",
                folder.display()
            )
        })
    }
}

/// Without the `embeddings` feature: a model named in the settings or flags is an error that
/// says how to get a build that reads it.
#[cfg(not(feature = "embeddings"))]
pub mod hybrid {
    use std::path::Path;

    use tool_pool::ToolPool;

    const REBUILD: &str = "this agent-cli was built without the `embeddings` feature: build it \
                           with `cargo build -p agent-cli --features embeddings`, or remove \
                           search.embeddings / --embeddings";

    /// Refuses: this build cannot read a model.
    pub(crate) fn attach(
        _pool: &ToolPool,
        folder: &Path,
        _cache: Option<&Path>,
    ) -> anyhow::Result<()> {
        anyhow::bail!(
            "{} names an embeddings model, but {REBUILD}",
            folder.display()
        )
    }

    /// What `doctor` says about tool search with the model in `folder`.
    pub fn describe(folder: &Path) -> String {
        format!("keywords only ({} is set, but {REBUILD})", folder.display())
    }
}

/// The MCP servers of the settings (which hold the project's `.mcp.json` servers that apply, see
/// [`crate::trust`]), with `${VAR}` expanded from the environment.
pub(crate) fn mcp_config(settings: &Settings) -> anyhow::Result<Option<McpConfig>> {
    if settings.mcp_servers.is_empty() {
        return Ok(None);
    }
    let text = serde_json::json!({ "mcpServers": settings.mcp_servers }).to_string();
    let config = McpConfig::parse(&text, |name| std::env::var(name).ok())
        .context("the MCP server configuration (.mcp.json and the settings' mcpServers)")?;
    Ok(Some(config))
}

impl ToolRuntime {
    /// Builds the tool side for `cwd` from merged settings and flags. The agent and its tools
    /// report to `front_end`, and ask through it when it can ask (else calls that need approval
    /// are denied).
    pub fn build(
        cwd: &Path,
        session_id: &str,
        session_dir: PathBuf,
        settings: &Settings,
        options: &ToolOptions,
        front_end: Arc<dyn FrontEnd>,
    ) -> anyhow::Result<Self> {
        let rules = rules(settings, options)?;
        let mode = options
            .mode
            .or(settings.permissions.mode)
            .unwrap_or_default();
        let mut permissions = Permissions::new(rules.clone());
        if let Some(prompter) = frontend::prompter(&front_end) {
            permissions = permissions.with_prompter(prompter);
        }
        let permissions = Arc::new(permissions);
        let registry = Arc::new(ToolRegistry::new());
        let mut builtins = Builtins::new()
            .cwd(cwd)
            .shell_config(shell_config(settings, options))
            .deny_reads(read_denies(&rules));
        for root in &options.extra_roots {
            builtins = builtins.allowed_root(root);
        }
        if !options.no_builtins {
            builtins.register_all(&registry)?;
        }
        let skills = register_skills(cwd, &registry, &permissions, options)?;
        let pool_config = pool_config(settings, options)?;
        let pool = ToolPool::new(Arc::clone(&registry), pool_config.clone())?;
        pool.set_rules(rules);
        if let Some(folder) = embeddings_folder(settings, options) {
            hybrid::attach(&pool, folder, options.embeddings_cache.as_deref())?;
        }
        if !skills.set().is_empty() {
            pool.set_related_search(Arc::new(SkillSearch(Arc::clone(&skills))));
        }

        let session = Arc::new(Session::new(session_id, session_dir, cwd).with_mode(mode));
        let mut inheritance = Inheritance {
            registry: Arc::downgrade(&registry),
            session: Arc::clone(&session),
            permissions: Arc::clone(&permissions),
            pre_hooks: Vec::new(),
            post_hooks: Vec::new(),
            front_end: Arc::clone(&front_end),
            pool: pool_config,
        };
        let mut builder = Executor::builder(Arc::clone(&registry), Arc::clone(&session))
            .permissions(Arc::clone(&permissions))
            .suggester(pool.suggester());
        for hook in &settings.hooks.pre_tool_use {
            let hook: Arc<dyn PreToolHook> = Arc::new(command_hook(hook)?);
            inheritance.pre_hooks.push(Arc::clone(&hook));
            builder = builder.pre_hook(hook);
        }
        for hook in &settings.hooks.post_tool_use {
            let hook: Arc<dyn PostToolHook> = Arc::new(command_hook(hook)?);
            inheritance.post_hooks.push(Arc::clone(&hook));
            builder = builder.post_hook(hook);
        }
        let executor = builder.build();
        let mcp = mcp_config(settings)?.map(|config| start_mcp(config, &registry, &pool));
        Ok(Self {
            registry,
            pool,
            executor,
            session,
            permissions,
            mcp,
            skills,
            context_window: settings
                .context_window
                .unwrap_or(crate::skills::DEFAULT_CONTEXT_WINDOW),
            inheritance,
            front_end,
        })
    }

    /// Takes up what a resumed conversation says the session had found: the tools it called
    /// (directly, or by name through `execute_tool`) and the tools its native searches loaded
    /// count as discovered again, so they stay callable and, with inline or native activation,
    /// in the request; and the skills its
    /// `<skill-discovery>` notes suggested are not suggested again.
    pub fn resume_from(&self, messages: &[Message]) {
        let mut called = Vec::new();
        let mut suggested = Vec::new();
        for message in messages {
            for (_, name, input) in message.tool_uses() {
                match input.get("tool_name").and_then(serde_json::Value::as_str) {
                    Some(target) if name == tool_pool::EXECUTE_TOOL => called.push(target),
                    _ => called.push(name),
                }
            }
            if message.role == Role::User {
                suggested.extend(crate::skills::suggested_in(&message.text()));
            }
            // The tools a native search loaded stay declared, so its references stay valid.
            for block in &message.content {
                if let crate::conversation::Block::ToolResult(result) = block {
                    called.extend(tool_pool::tool_references(result));
                }
            }
        }
        self.pool.discover(&called);
        self.skills.mark_suggested(suggested);
    }

    /// Where the agent and its tools report, and ask.
    pub fn front_end(&self) -> &Arc<dyn FrontEnd> {
        &self.front_end
    }

    /// What a restricted runtime built from this one (a sub-agent's) inherits.
    pub fn inheritance(&self) -> Inheritance {
        self.inheritance.clone()
    }

    /// Waits until no MCP server is still connecting (each is bounded by the connect timeout the
    /// servers were started with), then brings the pool in line; returns each server's state.
    pub async fn settle_mcp(&self) -> std::collections::BTreeMap<String, ServerState> {
        self.settle_mcp_within(McpOptions::default().connect_timeout)
            .await
    }

    /// [`ToolRuntime::settle_mcp`], waiting at most `timeout`.
    pub async fn settle_mcp_within(
        &self,
        timeout: Duration,
    ) -> std::collections::BTreeMap<String, ServerState> {
        let Some(manager) = &self.mcp else {
            return std::collections::BTreeMap::new();
        };
        let (states, _) = manager.settled(timeout).await;
        self.sync_pool();
        states
    }

    /// Brings the pool in line with the registry, and with what the MCP servers said about
    /// themselves (their instructions, which an announcement past its budget shows).
    pub fn sync_pool(&self) {
        if let Some(manager) = &self.mcp {
            for (server, text) in manager.instructions() {
                self.pool.set_server_note(&server, &text);
            }
        }
        self.pool.sync();
    }

    /// The system prompt: who the agent is, the tools' own guidance, the deferred tools'
    /// announcement, and the skills (within a share of the context window). Built once per
    /// session; later changes arrive as delta messages.
    pub fn system_prompt(&self) -> String {
        let mut prompt = format!(
            "You are a coding agent working in {}. Use the tools to read, search, edit and run code; \
             read a file before editing it; keep changes small and explain what you did.\n",
            self.session.cwd().display()
        );
        for tool in self.pool.request_tools().tools {
            if let Some(guidance) = tool.prompt() {
                prompt.push_str(&format!("\n# {}\n{}\n", tool.spec().name, guidance.trim()));
            }
        }
        if let Some(announcement) = self.pool.announcement() {
            prompt.push('\n');
            prompt.push_str(&announcement);
            prompt.push('\n');
        }
        let budget = crate::skills::listing_budget(self.context_window);
        if let Some(listing) = self.skills.set().listing(budget) {
            prompt.push('\n');
            prompt.push_str(&listing);
            prompt.push('\n');
        }
        prompt
    }
}

/// The skills of `cwd` (the project's and the user's), and the `skill` tool when there are any.
fn register_skills(
    cwd: &Path,
    registry: &ToolRegistry,
    permissions: &Arc<Permissions>,
    options: &ToolOptions,
) -> anyhow::Result<Arc<SkillSession>> {
    let paths = Paths::new(cwd, &|name| std::env::var(name).ok());
    let set = crate::skills::load_set(&paths, cwd);
    let trusted = options.trusted_skills.clone();
    let skills = Arc::new(if options.no_skill_grants {
        SkillSession::new(Arc::new(set))
    } else {
        crate::skills::session(set, trusted, permissions)
    });
    if !skills.set().is_empty() {
        registry.register(SkillTool::new(Arc::clone(&skills)))?;
    }
    Ok(skills)
}

fn command_hook(setting: &crate::settings::HookSetting) -> anyhow::Result<CommandHook> {
    let mut hook = CommandHook::new(&setting.command);
    if let Some(matcher) = &setting.matcher {
        hook = hook
            .with_matcher(matcher)
            .with_context(|| format!("the hook `{}`", setting.command))?;
    }
    if let Some(seconds) = setting.timeout {
        hook = hook.with_timeout(Duration::from_secs(seconds));
    }
    Ok(hook)
}

/// The settings' rules with the command line's `--allow` and `--deny` added.
/// How the shell runs commands: the sandbox of approved commands from the flag and settings,
/// this executable as the sandbox launcher, and the environment commands see.
pub fn shell_config(settings: &Settings, options: &ToolOptions) -> ShellConfig {
    let sandbox = options
        .sandbox
        .or(settings.sandbox.mode)
        .unwrap_or_default();
    ShellConfig {
        sandbox,
        network: settings.sandbox.network.unwrap_or_default(),
        launcher: std::env::current_exe().ok(),
        environment: settings.shell_environment.clone(),
        ..ShellConfig::default()
    }
}

/// What read deny rules name (`read_file(.env)`), which every tool that reads must respect.
pub fn read_denies(rules: &PermissionRules) -> ReadDenies {
    ReadDenies::new(
        rules
            .deny
            .iter()
            .filter(|rule| {
                let name = rule.tool_name();
                tool_core::tool_name_from_claude(name).unwrap_or(name) == "read_file"
            })
            .filter_map(|rule| rule.content().map(str::to_owned)),
    )
}

fn rules(settings: &Settings, options: &ToolOptions) -> anyhow::Result<PermissionRules> {
    let mut rules = settings.rules();
    let flag_rules = PermissionRules::parse(
        &options.allow.iter().map(String::as_str).collect::<Vec<_>>(),
        &[],
        &options.deny.iter().map(String::as_str).collect::<Vec<_>>(),
    )?;
    rules.extend(&flag_rules);
    Ok(rules)
}

/// Deferral and activation from the flags, else the settings, else the defaults.
fn pool_config(settings: &Settings, options: &ToolOptions) -> anyhow::Result<PoolConfig> {
    let deferral: DeferralMode = match options
        .defer_tools
        .clone()
        .or_else(|| settings.defer_tools_text())
    {
        Some(text) => text.parse()?,
        None => DeferralMode::default(),
    };
    let activation: Activation = match options
        .activation
        .clone()
        .or_else(|| settings.activation.clone())
    {
        Some(text) => text.parse()?,
        None if options.native_activation => Activation::Native,
        None => Activation::default(),
    };
    Ok(PoolConfig {
        mode: deferral,
        activation,
        context_window: settings.context_window.unwrap_or(200_000),
        ..PoolConfig::default()
    })
}

/// Starts the MCP servers in the background. As their tools come and go the pool's index and
/// deferred-tools deltas follow, and the stable part of the request stays as it was.
fn start_mcp(config: McpConfig, registry: &Arc<ToolRegistry>, pool: &ToolPool) -> McpManager {
    let manager = McpManager::start(config, Arc::clone(registry), McpOptions::default());
    let mut changes = manager.subscribe();
    let follower = pool.clone();
    tokio::spawn(async move {
        while let Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) =
            changes.recv().await
        {
            follower.sync();
        }
    });
    manager
}
