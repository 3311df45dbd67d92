//! The state the pool and its two tools share: the registry, the rules, the deferred tools'
//! search index and the session's discoveries.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use serde_json::Value;
use tool_core::{AnyTool, Loading, Origin, PermissionRules, ToolRegistry};
use tool_search::{Parameter, ToolDocument};

use crate::config::{EXECUTE_TOOL, PoolConfig, TOOL_SEARCH};
use crate::discovery::Discovered;
use crate::error::PoolError;
use crate::index::ToolIndex;
use crate::mode::{CharEstimate, DeferralMode, TokenCounter};
use crate::related::RelatedSearch;

pub(crate) struct State {
    pub(crate) index: ToolIndex,
    /// Indexed (deferrable) tools: name → fingerprint of their spec.
    pub(crate) indexed: BTreeMap<String, u64>,
    pub(crate) discovered: Discovered,
    /// The deferred names announced so far (the first announcement plus every delta).
    pub(crate) announced: Option<BTreeSet<String>>,
    pub(crate) first_announcement: Option<String>,
    /// The deferred names as of the last sync, which the next delta is taken against.
    pub(crate) deferred_now: BTreeSet<String>,
    /// What each MCP server says it is for (its instructions), by server name.
    pub(crate) notes: BTreeMap<String, String>,
}

pub(crate) struct Shared {
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) config: PoolConfig,
    pub(crate) rules: RwLock<PermissionRules>,
    pub(crate) counter: RwLock<Arc<dyn TokenCounter>>,
    pub(crate) related: RwLock<Option<Arc<dyn RelatedSearch>>>,
    /// Whether `execute_tool` takes only tools a search found first (see
    /// [`crate::ToolPool::set_require_discovery`]).
    pub(crate) require_discovery: std::sync::atomic::AtomicBool,
    state: Mutex<State>,
}

impl Shared {
    pub(crate) fn new(registry: Arc<ToolRegistry>, config: PoolConfig) -> Self {
        Self {
            registry,
            config,
            rules: RwLock::new(PermissionRules::default()),
            counter: RwLock::new(Arc::new(CharEstimate)),
            related: RwLock::new(None),
            require_discovery: std::sync::atomic::AtomicBool::new(true),
            state: Mutex::new(State {
                index: ToolIndex::default(),
                indexed: BTreeMap::new(),
                discovered: Discovered::new(),
                announced: None,
                first_announcement: None,
                deferred_now: BTreeSet::new(),
                notes: BTreeMap::new(),
            }),
        }
    }

    /// What else `query` finds besides tools, as a note for the search's result.
    pub(crate) fn related(&self, query: &str) -> Option<String> {
        let related = self
            .related
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        related.and_then(|r| r.related(query))
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // The state is updated in whole steps under the lock; a poisoned lock still guards it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add_mcp_tool(&self, tool: AnyTool) -> Result<bool, PoolError> {
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

    pub(crate) fn is_deferrable(&self, tool: &AnyTool) -> bool {
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

    pub(crate) fn visible_tools(&self) -> Vec<AnyTool> {
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

    pub(crate) fn deferral_active(&self, visible: &[AnyTool]) -> bool {
        match self.config.mode {
            DeferralMode::Standard => false,
            DeferralMode::Always => visible.iter().any(|t| self.is_deferrable(t)),
            DeferralMode::Auto { percent } => {
                self.deferrable_tokens(visible) * 100
                    > usize::from(percent) * self.config.context_window
            }
        }
    }

    pub(crate) fn deferrable_tokens(&self, visible: &[AnyTool]) -> usize {
        let counter = Arc::clone(&self.counter.read().unwrap_or_else(|e| e.into_inner()));
        visible
            .iter()
            .filter(|t| self.is_deferrable(t))
            .map(|t| {
                let text = schema_text(t);
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
            .filter(|t| self.is_deferrable(t))
            .map(|t| t.spec().name.clone())
            .collect()
    }

    pub(crate) fn sync(&self) {
        let visible = self.visible_tools();
        let deferrable: BTreeMap<String, AnyTool> = visible
            .iter()
            .filter(|t| self.is_deferrable(t))
            .map(|t| (t.spec().name.clone(), t.clone()))
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
            .filter(|(name, fp)| deferrable.get(*name).is_none_or(|t| fingerprint(t) != **fp))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale {
            state.index.remove(&name);
            state.indexed.remove(&name);
        }
        let mut fresh = Vec::new();
        for (name, tool) in &deferrable {
            if !state.indexed.contains_key(name) {
                fresh.push(document(tool));
                state.indexed.insert(name.clone(), fingerprint(tool));
            }
        }
        // In one batch: a dense side embeds a connecting server's tools together.
        state.index.add_all(fresh);
        let gone: Vec<String> = state
            .discovered
            .iter()
            .filter(|n| !deferrable.contains_key(*n))
            .map(str::to_owned)
            .collect();
        for name in gone {
            state.discovered.remove(&name);
        }
        state.deferred_now = deferred_now;
    }
}

/// The text whose tokens `auto` counts: what sending the tool would cost.
fn schema_text(tool: &AnyTool) -> String {
    let spec = tool.spec();
    format!("{}\n{}\n{}", spec.name, spec.description, spec.input_schema)
}

fn fingerprint(tool: &AnyTool) -> u64 {
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
pub fn document(tool: &AnyTool) -> ToolDocument {
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
