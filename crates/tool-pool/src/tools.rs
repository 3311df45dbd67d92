//! `tool_search` and `execute_tool`: the two tools that make deferral work.

use std::sync::Weak;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    AnyTool, CallInfo, Loading, PermissionCheck, ProxyTarget, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

use crate::config::{EXECUTE_TOOL, TOOL_SEARCH};
use crate::mode::Activation;
use crate::shared::Shared;

const DEFAULT_RESULTS: usize = 5;
const MAX_RESULTS: usize = 20;

fn pool_gone() -> ToolError {
    ToolError::failed(
        "the tool pool of this session has shut down; no deferred tools can be found or run",
    )
}

/// Searches the deferred tools and activates what it finds.
pub(crate) struct ToolSearchTool {
    shared: Weak<Shared>,
    activation: Activation,
    spec: ToolSpec,
}

impl ToolSearchTool {
    pub(crate) fn new(shared: Weak<Shared>, activation: Activation) -> Self {
        let then = match activation {
            Activation::Proxy => "call them through execute_tool",
            Activation::Inline | Activation::Native => "call them directly by name",
        };
        let description = format!(
            "Finds tools that exist but are not loaded yet (the deferred tools listed in the system prompt) and loads them; then {then}.\n\
             Query forms:\n\
             - keywords describing the capability: \"send slack message\"\n\
             - +word to require a word: \"+github issue create\"\n\
             - select:NAME or select:A,B to load tools by exact name\n\
             - discover:words to see matching tools and their schemas without loading them\n\
             - mcp__SERVER to list every tool of one MCP server"
        );
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, +word, select:NAME[,NAME], discover:words, or mcp__SERVER"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "How many tools to return (default 5)"}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new(TOOL_SEARCH, description, schema)
            .with_search_hint("find search load deferred tools")
            .with_loading(Loading::AlwaysLoad);
        Self {
            shared,
            activation,
            spec,
        }
    }

    fn how_to_call(&self) -> &'static str {
        match self.activation {
            Activation::Proxy => {
                "They are loaded now: call them through execute_tool, as {\"tool_name\": \"<name>\", \"input\": {...}} with the input matching the schema"
            }
            Activation::Inline | Activation::Native => {
                "They are loaded now: call them directly by name"
            }
        }
    }

    /// The answer for tools now loaded: with the proxy, their descriptions and schemas (the
    /// model needs them for execute_tool); inline, their descriptions; natively, their names and
    /// the references the provider loads them from (it shows their definitions itself).
    fn loaded(&self, shared: &Shared, head: String, names: &[String]) -> ToolOutput {
        match self.activation {
            Activation::Proxy => {
                ToolOutput::text(format!("{head}\n{}", describe(shared, names, true)))
            }
            Activation::Inline => {
                ToolOutput::text(format!("{head}\n{}", describe(shared, names, false)))
            }
            Activation::Native => {
                let listed: Vec<String> = names.iter().map(|n| format!("- {n}")).collect();
                ToolOutput::text(format!("{head}\n{}\n", listed.join("\n")))
                    .with_structured(crate::reference::structured(names))
            }
        }
    }
}

fn describe(shared: &Shared, names: &[String], with_schema: bool) -> String {
    let mut out = String::new();
    for name in names {
        let Some(entry) = shared.registry.get(name) else {
            continue;
        };
        let spec = entry.tool().spec();
        out.push_str(&format!(
            "\n## {}\n{}\n",
            spec.name,
            spec.description.trim()
        ));
        if with_schema {
            out.push_str(&format!("Input schema: {}\n", spec.input_schema));
        }
    }
    out
}

#[async_trait]
impl Tool for ToolSearchTool {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    fn info(&self, input: &Value) -> CallInfo {
        let activity = input
            .get("query")
            .and_then(Value::as_str)
            .map(|q| format!("Searching tools for \"{q}\""));
        CallInfo::reads()
            .with_concurrency_safe(true)
            .with_activity(activity)
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let shared = self.shared.upgrade().ok_or_else(pool_gone)?;
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned();
        let limit = input
            .get("max_results")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_RESULTS, |n| (n as usize).clamp(1, MAX_RESULTS));
        let deferred = shared.deferred_names();
        if let Some(list) = query.strip_prefix("select:") {
            return Ok(self.select(&shared, list, &deferred));
        }
        let discover_only = query.starts_with("discover:");
        let related = match query.strip_prefix("discover:") {
            _ if query.starts_with("mcp__") => None,
            Some(words) => shared.related(words.trim()),
            None => shared.related(&query),
        };
        let with_related = |output: ToolOutput| match &related {
            Some(note) => with_note(output, note),
            None => output,
        };
        let results = {
            let state = shared.state();
            state.index.search(&query, limit)
        }
        .map_err(|err| ToolError::invalid(err.to_string()))?;
        let names: Vec<String> = results
            .hits
            .into_iter()
            .map(|h| h.name)
            .filter(|n| deferred.contains(n))
            .collect();
        if names.is_empty() {
            let mut text = format!(
                "No deferred tools matched \"{query}\". Try other words for the capability, +word to require a word, or mcp__SERVER to list a server's tools."
            );
            if let Some(groups) = crate::announce::groups_line(&deferred) {
                text.push('\n');
                text.push_str(&groups);
            }
            return Ok(with_related(ToolOutput::text(text)));
        }
        if discover_only {
            return Ok(with_related(ToolOutput::text(format!(
                "Found {} tool(s), not loaded. To use one, call tool_search with select:NAME.\n{}",
                names.len(),
                describe(&shared, &names, true)
            ))));
        }
        {
            let mut state = shared.state();
            for name in &names {
                state.discovered.insert(name);
            }
        }
        let head = format!(
            "Found {} tool(s) for \"{query}\". {}.",
            names.len(),
            self.how_to_call()
        );
        Ok(with_related(self.loaded(&shared, head, &names)))
    }
}

/// `output` with `note` (what else the query found) after its text.
fn with_note(mut output: ToolOutput, note: &str) -> ToolOutput {
    let text = format!("{}\n\n{}", output.joined_text().trim_end(), note.trim_end());
    output.content = vec![tool_core::Content::text(text)];
    output
}

impl ToolSearchTool {
    fn select(&self, shared: &Shared, list: &str, deferred: &[String]) -> ToolOutput {
        let visible: Vec<AnyTool> = shared.visible_tools();
        let mut found = Vec::new();
        let mut loaded = Vec::new();
        let mut missing = Vec::new();
        for wanted in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let hit = visible.iter().find(|t| {
                let spec = t.spec();
                spec.name.eq_ignore_ascii_case(wanted)
                    || spec.aliases.iter().any(|a| a.eq_ignore_ascii_case(wanted))
            });
            match hit {
                Some(tool) => {
                    let name = tool.spec().name.clone();
                    let bucket = if deferred.contains(&name) {
                        &mut found
                    } else {
                        &mut loaded
                    };
                    if !bucket.contains(&name) {
                        bucket.push(name);
                    }
                }
                None => missing.push(wanted.to_owned()),
            }
        }
        {
            let mut state = shared.state();
            for name in &found {
                state.discovered.insert(name);
            }
        }
        let mut parts = Vec::new();
        let mut structured = None;
        if !found.is_empty() {
            let head = format!("Selected {} tool(s). {}.", found.len(), self.how_to_call());
            let output = self.loaded(shared, head, &found);
            parts.push(output.joined_text().trim_end().to_owned());
            structured = output.structured;
        }
        if !loaded.is_empty() {
            let via = match self.activation {
                Activation::Proxy => " Do not use execute_tool for them.",
                Activation::Inline | Activation::Native => "",
            };
            parts.push(format!(
                "Already loaded: {}. Call these directly with your normal tool calls.{via}",
                loaded.join(", ")
            ));
        }
        if !missing.is_empty() {
            parts.push(format!(
                "Not found: {}. Check the names in the deferred tools list, or search with keywords.",
                missing.join(", ")
            ));
        }
        if parts.is_empty() {
            parts.push("select: needs tool names, as in select:NAME or select:A,B".to_owned());
        }
        let output = ToolOutput::text(parts.join("\n\n"));
        match structured {
            Some(value) => output.with_structured(value),
            None => output,
        }
    }
}

/// Calls a discovered deferred tool: a proxy that the executor resolves to its target at lookup,
/// so the target's validation, hooks, permission, progress and result budget apply once.
pub(crate) struct ExecuteTool {
    shared: Weak<Shared>,
    spec: ToolSpec,
}

impl ExecuteTool {
    pub(crate) fn new(shared: Weak<Shared>) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "The exact name of a tool found with tool_search"},
                "input": {"type": "object", "description": "The tool's input, matching the schema tool_search showed"}
            },
            "required": ["tool_name", "input"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new(
            EXECUTE_TOOL,
            "Calls a deferred tool that tool_search found in this session, with its input. The call is checked and permitted exactly as if the tool were called directly.",
            schema,
        )
        .with_search_hint("run call a discovered deferred tool")
        .with_loading(Loading::AlwaysLoad);
        Self { shared, spec }
    }

    fn target(&self, input: &Value) -> Option<AnyTool> {
        let shared = self.shared.upgrade()?;
        let name = input.get("tool_name").and_then(Value::as_str)?;
        let entry = shared.registry.get(name)?;
        Some(entry.tool().clone())
    }
}

fn target_input(input: &Value) -> Value {
    input.get("input").cloned().unwrap_or_else(|| json!({}))
}

/// The checks that make a tool callable through `execute_tool`: visible, not one of the pool's
/// own tools, deferred, and discovered in this session. Returns the tool's canonical name.
fn callable_target(shared: &Shared, wanted: &str) -> Result<String, ToolError> {
    let visible = shared.visible_tools();
    let Some(tool) = visible
        .iter()
        .find(|t| t.spec().name == wanted || t.spec().aliases.iter().any(|a| a == wanted))
    else {
        return Err(ToolError::invalid(format!(
            "there is no tool named `{wanted}`; find tools with tool_search first"
        )));
    };
    let name = tool.spec().name.clone();
    if name == EXECUTE_TOOL || name == TOOL_SEARCH {
        return Err(ToolError::invalid(format!(
            "call {name} directly, not through execute_tool"
        )));
    }
    if !shared.deferred_names().contains(&name) {
        return Err(ToolError::invalid(format!(
            "{name} is already loaded: call it directly with a normal tool call, not through execute_tool"
        )));
    }
    let required = shared
        .require_discovery
        .load(std::sync::atomic::Ordering::Relaxed);
    if required && !shared.state().discovered.contains(&name) {
        return Err(ToolError::invalid(format!(
            "{name} has not been discovered in this session: call tool_search with select:{name} first, read its input schema, then call execute_tool"
        )));
    }
    Ok(name)
}

#[async_trait]
impl Tool for ExecuteTool {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    /// The target's, with "Running <target>" when it gives no progress line.
    fn info(&self, input: &Value) -> CallInfo {
        let Some(target) = self.target(input) else {
            return CallInfo::writes();
        };
        let running = format!("Running {}", target.name());
        let info = if target.name() == EXECUTE_TOOL {
            CallInfo::writes()
        } else {
            target.info(&target_input(input)).unwrap_or_default()
        };
        let activity = info.activity().map_or(running, str::to_owned);
        info.with_activity(Some(activity))
    }

    /// The executor runs the target in this call's place (see [`Tool::proxy_target`]), so a
    /// call only reaches here when something other than an executor invokes the tool.
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed(
            "execute_tool only works through the executor, which runs the target tool in its place; call the target directly",
        ))
    }

    fn proxy_target(&self, input: &Value) -> Option<Result<ProxyTarget, ToolError>> {
        let target = self
            .shared
            .upgrade()
            .ok_or_else(pool_gone)
            .and_then(|shared| {
                let wanted = input
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                callable_target(&shared, wanted)
            });
        Some(target.map(|name| ProxyTarget {
            name,
            input: target_input(input),
        }))
    }
}
