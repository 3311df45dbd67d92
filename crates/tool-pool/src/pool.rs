//! The pool: which tools go in each request, in which order, and which are deferred.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};

use serde_json::{Value, json};
use tool_core::{Executor, Loading, Origin, PermissionRules, Tool, ToolRegistry};
use tool_search::{Parameter, SearchIndex, ToolDocument};

use crate::discovery::Discovered;
use crate::error::PoolError;
use crate::mode::{Activation, CharEstimate, DeferralMode, TokenCounter};
use crate::tools::{ExecuteTool, ToolSearchTool};

/// The name of the tool search tool.
pub const TOOL_SEARCH: &str = "tool_search";
/// The name of the proxy that calls discovered tools.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// The tools sent with every request unless configured otherwise: the everyday built-ins plus the
/// two tools that make deferral work.
pub const DEFAULT_CORE_TOOLS: &[&str] = &[
    "edit_file",
    EXECUTE_TOOL,
    "glob",
    "grep",
    "read_file",
    "shell",
    "todo_write",
    TOOL_SEARCH,
    "web_fetch",
    "write_file",
];

/// How the pool decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Tools never deferred, by name.
    pub core: BTreeSet<String>,
    /// When deferral is on.
    pub mode: DeferralMode,
    /// How discovered tools become usable.
    pub activation: Activation,
    /// The model's context window in tokens (for `auto`).
    pub context_window: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            core: DEFAULT_CORE_TOOLS.iter().map(|s| (*s).to_owned()).collect(),
            mode: DeferralMode::default(),
            activation: Activation::default(),
            context_window: 200_000,
        }
    }
}

/// The tools of one request: a stable part (the same bytes turn after turn) and, with inline
/// activation, the discovered tools after it.
#[derive(Clone)]
pub struct RequestTools {
    /// Every tool of the request, in order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// How many of `tools` form the stable prefix.
    pub stable_len: usize,
}

impl std::fmt::Debug for RequestTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestTools")
            .field("names", &self.names())
            .field("stable_len", &self.stable_len)
            .finish()
    }
}

impl RequestTools {
    /// The tools' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools array in Anthropic's Messages API format, with `cache_control` on the last tool
    /// of the stable part.
    pub fn to_anthropic(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, tool)| {
                let spec = tool.spec();
                let mut entry = json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                });
                if i + 1 == self.stable_len {
                    entry["cache_control"] = json!({"type": "ephemeral"});
                }
                entry
            })
            .collect();
        Value::Array(tools)
    }

    /// The tools array in OpenAI's chat completions function-tools format.
    pub fn to_openai(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                json!({
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.input_schema,
                    },
                })
            })
            .collect();
        Value::Array(tools)
    }
}

pub(crate) struct State {
    pub(crate) index: SearchIndex,
    /// Indexed (deferrable) tools: name → fingerprint of their spec.
    indexed: BTreeMap<String, u64>,
    pub(crate) discovered: Discovered,
    /// The deferred names announced so far (the first announcement plus every delta).
    announced: Option<BTreeSet<String>>,
    first_announcement: Option<String>,
    deltas: Vec<String>,
}

pub(crate) struct Shared {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) config: PoolConfig,
    rules: RwLock<PermissionRules>,
    counter: RwLock<Arc<dyn TokenCounter>>,
    state: Mutex<State>,
    pub(crate) executor: OnceLock<Executor>,
}

/// Decides which tools go in each request and keeps that request byte-stable.
///
/// Built-in tools come first, sorted by name, then MCP tools, sorted by name; a deferred tool is
/// left out and found with `tool_search`. The same set of tools gives the same bytes whatever
/// order they were registered in.
#[derive(Clone)]
pub struct ToolPool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ToolPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolPool")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl ToolPool {
    /// A pool over `registry`. Registers `tool_search` and `execute_tool` in it.
    pub fn new(registry: Arc<ToolRegistry>, config: PoolConfig) -> Result<Self, PoolError> {
        let shared = Arc::new(Shared {
            registry: Arc::clone(&registry),
            config,
            rules: RwLock::new(PermissionRules::default()),
            counter: RwLock::new(Arc::new(CharEstimate)),
            state: Mutex::new(State {
                index: SearchIndex::default(),
                indexed: BTreeMap::new(),
                discovered: Discovered::new(),
                announced: None,
                first_announcement: None,
                deltas: Vec::new(),
            }),
            executor: OnceLock::new(),
        });
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        let activation = shared.config.activation;
        if !registry.contains(TOOL_SEARCH) {
            registry.register(Arc::new(ToolSearchTool::new(weak.clone(), activation)))?;
        }
        if !registry.contains(EXECUTE_TOOL) {
            registry.register(Arc::new(ExecuteTool::new(weak)))?;
        }
        let pool = Self { shared };
        pool.sync();
        Ok(pool)
    }

    /// Removes tools that these rules deny outright (including whole-server rules).
    pub fn set_rules(&self, rules: PermissionRules) {
        *self.shared.rules.write().unwrap_or_else(|e| e.into_inner()) = rules;
        self.sync();
    }

    /// Counts tokens with `counter` (for `auto`), instead of the 2.5-characters estimate.
    pub fn set_token_counter(&self, counter: Arc<dyn TokenCounter>) {
        *self
            .shared
            .counter
            .write()
            .unwrap_or_else(|e| e.into_inner()) = counter;
    }

    /// Gives `execute_tool` the executor that runs discovered tools through the whole lifecycle.
    /// Call once, after building the executor over the same registry.
    pub fn attach_executor(&self, executor: Executor) {
        let _ = self.shared.executor.set(executor);
    }

    /// The registry the pool reads.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.registry
    }

    /// The configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.shared.config
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state()
    }

    /// Adds an MCP tool; a built-in of the same name wins (the MCP tool is skipped and `false`
    /// returned). An MCP tool of the same name is replaced.
    pub fn add_mcp_tool(&self, tool: Arc<dyn Tool>) -> Result<bool, PoolError> {
        let added = self.shared.add_mcp_tool(tool)?;
        self.sync();
        Ok(added)
    }

    /// Removes every tool of an MCP server; returns how many left.
    pub fn remove_server(&self, server: &str) -> usize {
        let names: Vec<String> = self
            .shared
            .registry
            .tools()
            .into_iter()
            .filter(|t| matches!(&t.spec().origin, Origin::Mcp { server: s, .. } if s == server))
            .map(|t| t.spec().name.clone())
            .collect();
        for name in &names {
            self.shared.registry.unregister(name);
        }
        self.sync();
        names.len()
    }

    /// Brings the search index and the announcement in line with the registry, changing only the
    /// documents of tools that came, went or changed. Call it after changing the registry directly
    /// (an MCP server's tools changing); the pool's own methods call it.
    pub fn sync(&self) {
        self.shared.sync();
    }

    /// The tools the model may see at all: enabled and not denied outright, built-ins first, then
    /// MCP tools, each part sorted by name.
    pub fn visible_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.shared.visible_tools()
    }

    /// Whether deferral is in effect right now (for `auto`, whether the deferrable tools are over
    /// the threshold).
    pub fn deferral_active(&self) -> bool {
        self.shared.deferral_active(&self.visible_tools())
    }

    /// The tokens the deferrable tools' schemas would take in a request (counted with the token
    /// counter, or estimated): what `auto` compares with its share of the context window.
    pub fn deferrable_tokens(&self) -> usize {
        self.shared.deferrable_tokens(&self.visible_tools())
    }

    /// The deferred tools' names, sorted: built-ins first, then MCP tools.
    pub fn deferred_names(&self) -> Vec<String> {
        self.shared.deferred_names()
    }

    /// Whether `name` is deferred now.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred_names().iter().any(|n| n == name)
    }

    /// The tools of the next request.
    ///
    /// Outside `standard` mode, `tool_search` (and with the proxy, `execute_tool`) stay in the
    /// array even while `auto` finds nothing to defer, so servers coming and going never change
    /// the built-in part of the request.
    pub fn request_tools(&self) -> RequestTools {
        let visible = self.visible_tools();
        let active = self.shared.deferral_active(&visible);
        let mode = self.shared.config.mode;
        let activation = self.shared.config.activation;
        let mut deferred: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for tool in visible {
            let name = tool.spec().name.as_str();
            let dropped = match name {
                TOOL_SEARCH => mode == DeferralMode::Standard,
                EXECUTE_TOOL => mode == DeferralMode::Standard || activation == Activation::Inline,
                _ => false,
            };
            if dropped {
                continue;
            }
            if active && self.shared.is_deferrable(tool.as_ref()) {
                deferred.insert(name.to_owned(), tool);
            } else {
                tools.push(tool);
            }
        }
        let stable_len = tools.len();
        if activation == Activation::Inline && !deferred.is_empty() {
            let state = self.state();
            tools.extend(
                state
                    .discovered
                    .iter()
                    .filter_map(|n| deferred.get(n).cloned()),
            );
        }
        RequestTools { tools, stable_len }
    }

    /// The announcement of the deferred tools for the system prompt. Fixed at the first call: later
    /// changes arrive as [`ToolPool::take_deltas`], so the system prompt never changes. `None`
    /// when nothing is deferred.
    pub fn announcement(&self) -> Option<String> {
        let names = self.deferred_names();
        let mut state = self.state();
        if state.announced.is_none() {
            state.deltas.clear();
            state.first_announcement =
                (!names.is_empty()).then(|| announce(&names, self.shared.config.activation));
            state.announced = Some(names.into_iter().collect());
        }
        state.first_announcement.clone()
    }

    /// Messages describing deferred tools that came or went since the last announcement, oldest
    /// first; taking them empties the queue.
    pub fn take_deltas(&self) -> Vec<String> {
        std::mem::take(&mut self.state().deltas)
    }

    /// Marks tools as discovered (they become callable through `execute_tool`, or inline).
    pub fn discover<S: AsRef<str>>(&self, names: &[S]) {
        let mut state = self.state();
        for name in names {
            state.discovered.insert(name.as_ref());
        }
    }

    /// Whether a tool was discovered in this session.
    pub fn is_discovered(&self, name: &str) -> bool {
        self.state().discovered.contains(name)
    }

    /// The discovered tools, in discovery order.
    pub fn discovered(&self) -> Vec<String> {
        self.state().discovered.iter().map(str::to_owned).collect()
    }

    /// Between turns: suggests up to three deferred tools not yet discovered that match the recent
    /// messages, and marks them discovered. Never on the user's first message, so a session's first
    /// request is the same whatever the user typed.
    pub fn prefetch(&self, recent_text: &str, is_first_user_message: bool) -> Vec<String> {
        const PREFETCH_LIMIT: usize = 3;
        if is_first_user_message || !self.deferral_active() {
            return Vec::new();
        }
        // Long pastes are cut: the start of a message says what it is about.
        let query: String = recent_text.chars().take(500).collect();
        let mut state = self.state();
        let Ok(results) = state
            .index
            .search(&query, PREFETCH_LIMIT + state.discovered.len().min(20))
        else {
            return Vec::new();
        };
        let fresh: Vec<String> = results
            .hits
            .into_iter()
            .map(|h| h.name)
            .filter(|n| !state.discovered.contains(n))
            .take(PREFETCH_LIMIT)
            .collect();
        for name in &fresh {
            state.discovered.insert(name);
        }
        fresh
    }
}

fn announce(names: &[String], activation: Activation) -> String {
    let how = match activation {
        Activation::Proxy => "find them with tool_search, then call them through execute_tool",
        Activation::Inline => "find them with tool_search; once found they can be called directly",
    };
    format!(
        "<available-deferred-tools>\nThese tools exist but are not loaded; {how}.\n{}\n</available-deferred-tools>",
        names.join("\n")
    )
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // The state is updated in whole steps under the lock; a poisoned lock still guards it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add_mcp_tool(&self, tool: Arc<dyn Tool>) -> Result<bool, PoolError> {
        let name = tool.spec().name.clone();
        if let Some(existing) = self.registry.get(&name) {
            if existing.tool().spec().origin == Origin::BuiltIn {
                return Ok(false);
            }
            self.registry.unregister(&name);
        }
        self.registry.register(tool)?;
        Ok(true)
    }

    pub(crate) fn is_deferrable(&self, tool: &dyn Tool) -> bool {
        let spec = tool.spec();
        if spec.name == TOOL_SEARCH
            || spec.name == EXECUTE_TOOL
            || spec.loading == Loading::AlwaysLoad
        {
            return false;
        }
        if self.config.core.contains(&spec.name) {
            return false;
        }
        // Everything else is deferrable: MCP tools, tools marked `defer`, and built-ins outside
        // the core whitelist.
        true
    }

    pub(crate) fn visible_tools(&self) -> Vec<Arc<dyn Tool>> {
        let rules = self.rules.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (mut builtins, mut mcp): (Vec<_>, Vec<_>) = self
            .registry
            .tools()
            .into_iter()
            .filter(|t| t.is_enabled() && !rules.denies_tool(&t.spec().name, &t.spec().aliases))
            .partition(|t| t.spec().origin == Origin::BuiltIn);
        builtins.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        mcp.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        builtins.extend(mcp);
        builtins
    }

    fn deferral_active(&self, visible: &[Arc<dyn Tool>]) -> bool {
        match self.config.mode {
            DeferralMode::Standard => false,
            DeferralMode::Always => visible.iter().any(|t| self.is_deferrable(t.as_ref())),
            DeferralMode::Auto { percent } => {
                self.deferrable_tokens(visible) * 100
                    > usize::from(percent) * self.config.context_window
            }
        }
    }

    fn deferrable_tokens(&self, visible: &[Arc<dyn Tool>]) -> usize {
        let counter = Arc::clone(&self.counter.read().unwrap_or_else(|e| e.into_inner()));
        visible
            .iter()
            .filter(|t| self.is_deferrable(t.as_ref()))
            .map(|t| {
                let text = schema_text(t.as_ref());
                counter
                    .count_tokens(&text)
                    .unwrap_or_else(|| CharEstimate::estimate(&text))
            })
            .sum()
    }

    pub(crate) fn deferred_names(&self) -> Vec<String> {
        let visible = self.visible_tools();
        if !self.deferral_active(&visible) {
            return Vec::new();
        }
        visible
            .iter()
            .filter(|t| self.is_deferrable(t.as_ref()))
            .map(|t| t.spec().name.clone())
            .collect()
    }

    fn sync(&self) {
        let visible = self.visible_tools();
        let deferrable: BTreeMap<String, Arc<dyn Tool>> = visible
            .iter()
            .filter(|t| self.is_deferrable(t.as_ref()))
            .map(|t| (t.spec().name.clone(), Arc::clone(t)))
            .collect();
        let deferred_now: BTreeSet<String> = if self.deferral_active(&visible) {
            deferrable.keys().cloned().collect()
        } else {
            BTreeSet::new()
        };
        let mut state = self.state();
        let stale: Vec<String> = state
            .indexed
            .iter()
            .filter(|(name, fp)| {
                deferrable
                    .get(*name)
                    .is_none_or(|t| fingerprint(t.as_ref()) != **fp)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            state.index.remove(&name);
            state.indexed.remove(&name);
        }
        for (name, tool) in &deferrable {
            if !state.indexed.contains_key(name) {
                state.index.add(document(tool.as_ref()));
                state
                    .indexed
                    .insert(name.clone(), fingerprint(tool.as_ref()));
            }
        }
        let gone: Vec<String> = state
            .discovered
            .iter()
            .filter(|n| !deferrable.contains_key(*n))
            .map(str::to_owned)
            .collect();
        for name in gone {
            state.discovered.remove(&name);
        }
        if let Some(announced) = state.announced.clone() {
            let added: Vec<&String> = deferred_now.difference(&announced).collect();
            let removed: Vec<&String> = announced.difference(&deferred_now).collect();
            if !added.is_empty() || !removed.is_empty() {
                let mut text = String::from("<deferred-tools-delta>\n");
                if !added.is_empty() {
                    let list: Vec<&str> = added.iter().map(|s| s.as_str()).collect();
                    text.push_str(&format!("Now available (deferred): {}\n", list.join(", ")));
                }
                if !removed.is_empty() {
                    let list: Vec<&str> = removed.iter().map(|s| s.as_str()).collect();
                    text.push_str(&format!("No longer available: {}\n", list.join(", ")));
                }
                text.push_str("</deferred-tools-delta>");
                state.deltas.push(text);
                state.announced = Some(deferred_now);
            }
        }
    }
}

/// The text whose tokens `auto` counts: what sending the tool would cost.
fn schema_text(tool: &dyn Tool) -> String {
    let spec = tool.spec();
    format!("{}\n{}\n{}", spec.name, spec.description, spec.input_schema)
}

fn fingerprint(tool: &dyn Tool) -> u64 {
    let spec = tool.spec();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    spec.name.hash(&mut hasher);
    spec.aliases.hash(&mut hasher);
    spec.description.hash(&mut hasher);
    spec.search_hint.hash(&mut hasher);
    spec.input_schema.to_string().hash(&mut hasher);
    hasher.finish()
}

/// A tool as a search document: its name, hint, description, origin and parameters.
pub fn document(tool: &dyn Tool) -> ToolDocument {
    let spec = tool.spec();
    let (server, mcp_tool) = match &spec.origin {
        Origin::Mcp { server, tool } => (Some(server.clone()), Some(tool.clone())),
        Origin::BuiltIn => (None, None),
    };
    let parameters = spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| Parameter {
                    name: name.clone(),
                    description: schema
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default();
    ToolDocument {
        name: spec.name.clone(),
        aliases: spec.aliases.clone(),
        label: None,
        server,
        mcp_tool,
        search_hint: spec.search_hint.clone(),
        description: spec.description.clone(),
        parameters,
    }
}
