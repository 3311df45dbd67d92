//! The benchmark sets: `tools.jsonl` and `queries.jsonl` per folder.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::Value;
use tool_search::{Parameter, ToolDocument};

/// One line of a set's `tools.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct RawTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub input_schema: Value,
    #[serde(default)]
    pub server: Option<String>,
}

/// One query with its relevant tools.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    pub id: Value,
    pub query: String,
    pub gold: Vec<String>,
}

/// One set.
#[derive(Debug, Clone)]
pub struct Set {
    pub name: String,
    pub tools: Vec<ToolDocument>,
    pub cases: Vec<Case>,
}

pub fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{} line {}", path.display(), i + 1))
        })
        .collect()
}

/// A tool of a set as a search document: name, description, input_schema (property names and
/// their descriptions) and server.
pub fn document(
    name: &str,
    description: &str,
    schema: &Value,
    server: Option<&str>,
) -> ToolDocument {
    let parameters = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| Parameter {
                    name: name.clone(),
                    description: prop
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default();
    ToolDocument {
        name: name.to_owned(),
        description: description.to_owned(),
        server: server.map(str::to_owned),
        parameters,
        ..ToolDocument::default()
    }
}

/// Every set folder under `dir` (those with both files), sorted by name.
pub fn load_sets(dir: &Path) -> anyhow::Result<Vec<Set>> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the data directory {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("tools.jsonl").is_file() && p.join("queries.jsonl").is_file())
        .collect();
    folders.sort();
    if folders.is_empty() {
        anyhow::bail!(
            "no set folders (with tools.jsonl and queries.jsonl) under {}; pass --data DIR",
            dir.display()
        );
    }
    folders
        .into_iter()
        .map(|folder| {
            let name = folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let raw: Vec<RawTool> = read_jsonl(&folder.join("tools.jsonl"))?;
            let tools = raw
                .iter()
                .map(|t| {
                    document(
                        &t.name,
                        &t.description,
                        &t.input_schema,
                        t.server.as_deref(),
                    )
                })
                .collect();
            let cases = read_jsonl(&folder.join("queries.jsonl"))?;
            Ok(Set { name, tools, cases })
        })
        .collect()
}
