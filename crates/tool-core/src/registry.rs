//! Tools by name and by alias, each with its input schema compiled once.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use crate::erased::AnyTool;
use crate::error::CoreError;

/// A registered tool with its compiled input validator.
pub struct RegisteredTool {
    tool: AnyTool,
    validator: jsonschema::Validator,
}

impl fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("name", &self.tool.spec().name)
            .finish_non_exhaustive()
    }
}

impl RegisteredTool {
    /// The tool.
    pub fn tool(&self) -> &AnyTool {
        &self.tool
    }

    /// The validator compiled from the tool's input schema.
    pub fn validator(&self) -> &jsonschema::Validator {
        &self.validator
    }
}

#[derive(Default)]
struct Inner {
    tools: BTreeMap<String, Arc<RegisteredTool>>,
    /// Alias → canonical name.
    aliases: BTreeMap<String, String>,
}

/// Tools by name and alias. Cheap to share: clone the `Arc` it lives in; tools can come and go
/// while the executor runs (an MCP server connecting or leaving).
#[derive(Default)]
pub struct ToolRegistry {
    inner: RwLock<Inner>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("names", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // The maps are only ever replaced whole under the lock, so a poisoned lock still guards
        // consistent data.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a tool, compiling its input schema. Fails on an invalid name or schema, or a
    /// name or alias that is already taken.
    pub fn register(&self, tool: impl Into<AnyTool>) -> Result<(), CoreError> {
        let tool = tool.into();
        let spec = tool.spec();
        spec.check()?;
        let validator = jsonschema::validator_for(&spec.input_schema).map_err(|err| {
            CoreError::InvalidSchema {
                tool: spec.name.clone(),
                reason: err.to_string(),
            }
        })?;
        let mut inner = self.write();
        for name in std::iter::once(&spec.name).chain(&spec.aliases) {
            let existing = inner
                .tools
                .get(name)
                .map(|_| name.clone())
                .or_else(|| inner.aliases.get(name).cloned());
            if let Some(existing) = existing {
                return Err(CoreError::DuplicateName {
                    name: name.clone(),
                    existing,
                });
            }
        }
        for alias in &spec.aliases {
            inner.aliases.insert(alias.clone(), spec.name.clone());
        }
        let name = spec.name.clone();
        inner
            .tools
            .insert(name, Arc::new(RegisteredTool { tool, validator }));
        Ok(())
    }

    /// Removes a tool (by its canonical name) and its aliases; returns it if it was there.
    pub fn unregister(&self, name: &str) -> Option<AnyTool> {
        let mut inner = self.write();
        let entry = inner.tools.remove(name)?;
        inner.aliases.retain(|_, target| target != name);
        Some(entry.tool.clone())
    }

    /// Finds a tool by name or alias.
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        let inner = self.read();
        let canonical = inner.aliases.get(name).map_or(name, String::as_str);
        inner.tools.get(canonical).cloned()
    }

    /// Whether a tool is registered under this name or alias.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Canonical names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().tools.keys().cloned().collect()
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> Vec<AnyTool> {
        self.read().tools.values().map(|e| e.tool.clone()).collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.read().tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().tools.is_empty()
    }

    /// Up to `limit` registered names (and aliases) closest to `name`, best first: names that
    /// differ only in case or separators, then names that contain it or are contained in it,
    /// then names within a small edit distance.
    pub fn suggest(&self, name: &str, limit: usize) -> Vec<String> {
        let inner = self.read();
        let wanted = normalise(name);
        let mut scored: Vec<(u32, String)> = inner
            .tools
            .keys()
            .chain(inner.aliases.keys())
            .filter_map(|candidate| {
                let norm = normalise(candidate);
                let score = if norm == wanted {
                    1000
                } else if !wanted.is_empty() && (norm.contains(&wanted) || wanted.contains(&norm)) {
                    900
                } else {
                    let similarity = strsim::jaro_winkler(&wanted, &norm);
                    if similarity < 0.8 {
                        return None;
                    }
                    (similarity * 800.0) as u32
                };
                Some((score, candidate.clone()))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, n)| n).take(limit).collect()
    }
}

fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}
