//! The pool: which tools go in each request, in which order, and which are deferred.

use std::collections::BTreeMap;
use std::sync::{Arc, MutexGuard, Weak};

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};
use serde_json::Value;
use tool_core::{AnyTool, NameSuggester, Origin, PermissionRules, ToolRegistry};

use crate::config::{EXECUTE_TOOL, PoolConfig, TOOL_SEARCH};
use crate::error::PoolError;
use crate::mode::{Activation, DeferralMode, TokenCounter};
use crate::related::RelatedSearch;
use crate::shared::{Shared, State};
use crate::suggest::PoolSuggester;
use crate::tools::{ExecuteTool, ToolSearchTool};

/// The tools of one request: a stable part (the same bytes turn after turn) and, with inline or
/// native activation, the discovered tools after it.
#[derive(Clone, Default)]
pub struct RequestTools {
    /// Every tool of the request, in order.
    pub tools: Vec<AnyTool>,
    /// How many of `tools` form the stable prefix.
    pub stable_len: usize,
    /// How the tools after the stable part got there. With [`Activation::Native`] they are
    /// declared deferred: the provider loads one when a `tool_search` result references it.
    pub activation: Activation,
}

impl std::fmt::Debug for RequestTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestTools")
            .field("names", &self.names())
            .field("stable_len", &self.stable_len)
            .field("activation", &self.activation)
            .finish()
    }
}

impl RequestTools {
    /// The tools' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// The tools declared deferred (`defer_loading`): with native activation, those after the
    /// stable part, as long as the stable part keeps at least one tool loaded (an API refuses a
    /// request whose every tool is deferred); else none.
    pub fn deferred(&self) -> &[AnyTool] {
        match self.activation {
            Activation::Native if self.stable_len > 0 => {
                self.tools.get(self.stable_len..).unwrap_or_default()
            }
            _ => &[],
        }
    }

    /// Whether `name` is declared deferred in this request: the only tools a native tool
    /// reference may name.
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred().iter().any(|t| t.spec().name == name)
    }

    /// The tools as the request declares them to the model, in order. Each provider renders
    /// these in its own wire format; the one with prompt caching puts its breakpoint on the
    /// declaration at `stable_len - 1`.
    pub fn declarations(&self) -> Vec<ToolDeclaration<'_>> {
        self.tools
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                ToolDeclaration {
                    name: &spec.name,
                    description: &spec.description,
                    input_schema: &spec.input_schema,
                }
            })
            .collect()
    }
}

/// A stable serialisation of everything a provider's rendering reads: the declarations in order
/// and where the stable part ends. Equal bytes here mean equal bytes on the wire.
impl Serialize for RequestTools {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let native = !self.deferred().is_empty();
        let mut out = serializer.serialize_struct("RequestTools", 2 + usize::from(native))?;
        out.serialize_field("tools", &self.declarations())?;
        out.serialize_field("stable_len", &self.stable_len)?;
        if native {
            out.serialize_field("deferred_from", &self.stable_len)?;
        }
        out.end()
    }
}

/// One tool as a request declares it: the part of its spec that every provider's tools format
/// carries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ToolDeclaration<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// The description the model reads.
    pub description: &'a str,
    /// The JSON Schema of its input.
    pub input_schema: &'a Value,
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
        let shared = Arc::new(Shared::new(Arc::clone(&registry), config));
        let weak: Weak<Shared> = Arc::downgrade(&shared);
        let activation = shared.config.activation;
        if !registry.contains(TOOL_SEARCH) {
            registry.register(ToolSearchTool::new(weak.clone(), activation))?;
        }
        if !registry.contains(EXECUTE_TOOL) {
            registry.register(ExecuteTool::new(weak))?;
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

    /// Makes `tool_search` also ask `related` (a skill index, say) and add its answer to each
    /// keyword search's result. The tools array does not change.
    pub fn set_related_search(&self, related: Arc<dyn RelatedSearch>) {
        *self
            .shared
            .related
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(related);
    }

    /// Makes `tool_search` hybrid (feature `embeddings`): its keyword searches fuse the
    /// lexical ranking with `dense`'s ranking by meaning ([`tool_search::HybridIndex`]), so a
    /// request worded unlike a tool's description still finds it. The deferrable tools indexed
    /// now get their vectors at once (those `dense`'s cache lacks are embedded, which can take a
    /// while for many tools), and tools that come or go later (servers connecting and
    /// disconnecting, [`ToolPool::sync`]) are added to and removed from both sides.
    ///
    /// Every query form works as before: `select:`, `+word`, `mcp__server` and queries the model
    /// cannot read are answered by the lexical side alone. Prefetching and the "did you mean"
    /// suggester stay lexical, since the dense side ranks every tool for every query. Replaces a
    /// dense side set before. On an error no tool is lost and the search is as it was (lexical,
    /// in the unlikely case that the error came after the tools were embedded).
    ///
    /// `dense` is typically `DenseIndex::new(Arc::new(SentenceEncoder::open(folder)?),
    /// Some(cache_dir))`.
    #[cfg(feature = "embeddings")]
    pub fn set_dense_index(
        &self,
        dense: tool_search::DenseIndex,
    ) -> Result<(), tool_search::EmbeddingError> {
        self.state().index.set_dense(dense)
    }

    /// How many indexed tools have a vector on the dense side (fewer than the deferrable tools
    /// after an embedding error); `None` while `tool_search` is lexical alone (feature
    /// `embeddings`).
    #[cfg(feature = "embeddings")]
    pub fn dense_tools(&self) -> Option<usize> {
        self.state().index.dense_len()
    }

    /// The last error embedding tools that came after [`ToolPool::set_dense_index`]: those
    /// tools are found by their words alone (feature `embeddings`).
    #[cfg(feature = "embeddings")]
    pub fn dense_error(&self) -> Option<String> {
        self.state().index.dense_error()
    }

    /// Answers unknown tool names for the executor's "did you mean": close names by edit
    /// distance, then deferred tools found by searching for the name's words.
    pub fn suggester(&self) -> Arc<dyn NameSuggester> {
        Arc::new(PoolSuggester::new(Arc::downgrade(&self.shared)))
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
    pub fn add_mcp_tool(&self, tool: impl Into<AnyTool>) -> Result<bool, PoolError> {
        let added = self.shared.add_mcp_tool(tool.into())?;
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
    pub fn visible_tools(&self) -> Vec<AnyTool> {
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
    /// the built-in part of the request. With inline or native activation, the tools found so far
    /// follow the stable part in the order they were found.
    pub fn request_tools(&self) -> RequestTools {
        let visible = self.visible_tools();
        let active = self.shared.deferral_active(&visible);
        let mode = self.shared.config.mode;
        let activation = self.shared.config.activation;
        let mut deferred: BTreeMap<String, AnyTool> = BTreeMap::new();
        let mut tools: Vec<AnyTool> = Vec::new();
        for tool in visible {
            let name = tool.spec().name.as_str();
            let dropped = match name {
                TOOL_SEARCH => mode == DeferralMode::Standard,
                EXECUTE_TOOL => mode == DeferralMode::Standard || activation != Activation::Proxy,
                _ => false,
            };
            if dropped {
                continue;
            }
            if active && self.shared.is_deferrable(&tool) {
                deferred.insert(name.to_owned(), tool);
            } else {
                tools.push(tool);
            }
        }
        let stable_len = tools.len();
        if activation != Activation::Proxy && !deferred.is_empty() {
            let state = self.state();
            tools.extend(
                state
                    .discovered
                    .iter()
                    .filter_map(|n| deferred.get(n).cloned()),
            );
        }
        RequestTools {
            tools,
            stable_len,
            activation,
        }
    }

    /// The announcement of the deferred tools for the system prompt. Fixed at the first call: later
    /// changes arrive as [`ToolPool::take_deltas`], so the system prompt never changes. `None`
    /// when nothing is deferred.
    pub fn announcement(&self) -> Option<String> {
        let names = self.deferred_names();
        let mut state = self.state();
        if state.announced.is_none() {
            let config = &self.shared.config;
            state.first_announcement = (!names.is_empty()).then(|| {
                crate::announce::announcement(
                    &names,
                    config.activation,
                    config.announcement_bytes(),
                    &state.notes,
                )
            });
            let announced: std::collections::BTreeSet<String> = names.into_iter().collect();
            state.deferred_now.clone_from(&announced);
            state.announced = Some(announced);
        }
        state.first_announcement.clone()
    }

    /// Whether `execute_tool` takes only a tool that a search found first in this pool (the
    /// default: a model reads a tool's schema before it calls it). A gateway whose clients may
    /// search through one process and call through another (any of several behind a load
    /// balancer) turns it off: the input is still checked against the tool's schema.
    pub fn set_require_discovery(&self, required: bool) {
        self.shared
            .require_discovery
            .store(required, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records what the MCP server `server` says it is for (the instructions it returned when it
    /// connected): an announcement past its budget shows it, cut, on the server's line.
    pub fn set_server_note(&self, server: &str, note: &str) {
        self.state()
            .notes
            .insert(server.to_owned(), note.to_owned());
    }

    /// A message describing the deferred tools that came or went since the announcement or the
    /// last delta taken (as of the last [`ToolPool::sync`]): at most one, naming the tools when
    /// they fit the announcement's budget, else counting them per server. Empty before the
    /// first announcement.
    pub fn take_deltas(&self) -> Vec<String> {
        let budget = self.shared.config.announcement_bytes();
        let mut state = self.state();
        let Some(announced) = &state.announced else {
            return Vec::new();
        };
        let now = &state.deferred_now;
        let added: Vec<&str> = now.difference(announced).map(String::as_str).collect();
        let removed: Vec<&str> = announced.difference(now).map(String::as_str).collect();
        let Some(text) = crate::announce::delta(&added, &removed, budget) else {
            return Vec::new();
        };
        state.announced = Some(state.deferred_now.clone());
        vec![text]
    }

    /// Marks tools as discovered (they become callable through `execute_tool`, or join the
    /// request with inline and native activation).
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
        // Lexical alone: a dense side would rank every tool, relevant or not.
        let Ok(results) = state
            .index
            .lexical()
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
