//! Environment variables no process the tools start may see: the provider's API key above all.
//!
//! The agent reads its key from its own environment, and every child inherits that environment
//! unless told otherwise. A front end names the variables it holds secret once, with
//! [`withhold`]; every place that starts a process for a tool (the shell, hooks, MCP servers
//! over stdio) removes them with [`scrub`]. The list is process-wide because the environment is.

use std::sync::RwLock;

static WITHHELD: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Keeps the variable `name` from every process the tools start from now on.
pub fn withhold(name: impl Into<String>) {
    let name = name.into();
    let mut withheld = WITHHELD.write().unwrap_or_else(|e| e.into_inner());
    if !name.is_empty() && !withheld.contains(&name) {
        withheld.push(name);
    }
}

/// Whether `name` is withheld from the tools' processes.
pub fn is_withheld(name: &str) -> bool {
    WITHHELD
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|withheld| withheld == name)
}

/// The withheld variables, in the order they were named.
pub fn withheld() -> Vec<String> {
    WITHHELD.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Removes every withheld variable from the environment `process` will get.
pub fn scrub(process: &mut tokio::process::Command) {
    for name in WITHHELD.read().unwrap_or_else(|e| e.into_inner()).iter() {
        process.env_remove(name);
    }
}
