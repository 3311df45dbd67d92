//! Workspace invariants, checked by `cargo xtask tidy` and by `cargo test -p xtask`: which crate
//! may depend on which, workspace lints and crate docs in every crate, no module cycles inside a
//! crate ([`module_cycles`]), no function over 80 lines in `crates/*/src` ([`long_fns`]), and no
//! public item that nothing outside its crate uses ([`public_items`]).

mod long_fns;
mod module_cycles;
mod public_items;
mod source;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cargo_metadata::MetadataCommand;

/// The crates of ours each crate may depend on (any dependency kind). A crate not listed here may
/// depend on any crate of ours.
const LAYERS: &[(&str, &[&str])] = &[
    ("tool-core", &[]),
    ("tool-search", &[]),
    ("tool-builtins", &["tool-core"]),
    ("tool-mcp", &["tool-core"]),
    ("tool-pool", &["tool-core", "tool-search"]),
    ("tool-skills", &["tool-core", "tool-search"]),
];

/// Crates that only tests use: any crate of ours may have them as dev-dependencies, none as a
/// normal or build dependency, and they depend on no crate of ours themselves (a dev-dependency
/// that brought `tool-core` back into `tool-core`'s own tests would give them two copies of its
/// types).
const DEV_ONLY: &[&str] = &["test-support"];

/// The library crates that must carry crate-level docs (`//!`) in `src/lib.rs`.
const DOCUMENTED: &[&str] = &[
    "tool-core",
    "tool-search",
    "tool-pool",
    "tool-builtins",
    "tool-mcp",
    "tool-skills",
];

/// The workspace root: the parent of this crate's manifest directory.
pub fn workspace_root() -> anyhow::Result<PathBuf> {
    // `cargo run` (the `cargo xtask` alias) says where the manifest is now; the path compiled in
    // is only a fallback, since a build reused from another checkout carries that checkout's.
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .context("xtask must live one level below the workspace root")
}

/// What tidy found: broken invariants, and notes for the reader (what the allowlists still
/// let through, the longest functions).
pub struct Report {
    /// Every broken invariant, one sentence each; empty when the workspace is tidy.
    pub problems: Vec<String>,
    /// Lines to print whether or not anything is broken.
    pub notes: Vec<String>,
}

/// Checks every invariant.
pub fn check(root: &Path) -> anyhow::Result<Report> {
    let mut problems = manifest_problems(root)?;
    let crates = source::workspace_crates(root)?;
    let cycles = module_cycles::check(&crates);
    let lengths = long_fns::check(root, &crates);
    problems.extend(cycles.problems);
    problems.extend(lengths.problems);
    problems.extend(public_items::check(root, &crates)?.problems);

    let mut notes = Vec::new();
    if !cycles.allowed.is_empty() {
        notes.push(format!(
            "{} module cycle(s) allowed for now by module_cycles::ALLOWED_CYCLES (which must shrink to empty):",
            cycles.allowed.len()
        ));
        notes.extend(cycles.allowed.iter().map(|line| format!("  {line}")));
    }
    if !lengths.allowed.is_empty() {
        notes.push(format!(
            "{} function(s) over {} lines allowed for now by long_fns::ALLOWED_LONG_FNS (which must shrink to empty):",
            lengths.allowed.len(),
            long_fns::MAX_FN_LINES
        ));
        notes.extend(lengths.allowed.iter().map(|f| format!("  {f}")));
    }
    notes.extend(cycles.stale);
    notes.extend(lengths.stale);
    notes.push("the longest functions in crates/*/src:".to_owned());
    notes.extend(lengths.longest.iter().map(|f| format!("  {f}")));
    Ok(Report { problems, notes })
}

/// The invariants read from the manifests: layering, dev-only crates, lints, crate docs.
fn manifest_problems(root: &Path) -> anyhow::Result<Vec<String>> {
    let metadata = MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .context("running cargo metadata")?;
    let ours: BTreeSet<String> = metadata
        .workspace_packages()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    let mut problems = Vec::new();
    for package in metadata.workspace_packages() {
        let name = package.name.as_str();
        problems.extend(dev_only_problems(package, &ours));
        if let Some((_, allowed)) = LAYERS.iter().find(|(crate_name, _)| *crate_name == name) {
            for dep in &package.dependencies {
                let dev_only = DEV_ONLY.contains(&dep.name.as_str())
                    && dep.kind == cargo_metadata::DependencyKind::Development;
                if ours.contains(&dep.name) && !allowed.contains(&dep.name.as_str()) && !dev_only {
                    problems.push(format!(
                        "{name} depends on {dep} ({kind:?}), but may only depend on {allowed:?} of this workspace's crates",
                        dep = dep.name,
                        kind = dep.kind,
                    ));
                }
            }
        }
        let manifest = std::fs::read_to_string(&package.manifest_path)
            .with_context(|| format!("reading {}", package.manifest_path))?;
        if !manifest.contains("[lints]\nworkspace = true") {
            problems.push(format!(
                "{name}: Cargo.toml must have `[lints]\\nworkspace = true` so the workspace lints apply"
            ));
        }
        if DOCUMENTED.contains(&name) {
            let lib = package
                .manifest_path
                .parent()
                .map(|dir| dir.join("src/lib.rs"))
                .context("manifest has no parent directory")?;
            let text = std::fs::read_to_string(&lib).with_context(|| format!("reading {lib}"))?;
            if !text.trim_start().starts_with("//!") {
                problems.push(format!(
                    "{name}: src/lib.rs must start with `//!` crate docs"
                ));
            }
        }
    }
    Ok(problems)
}

/// The rules for [`DEV_ONLY`] crates, as seen from `package`: it may use them only as
/// dev-dependencies, and if it is one, it depends on no crate of ours.
fn dev_only_problems(package: &cargo_metadata::Package, ours: &BTreeSet<String>) -> Vec<String> {
    let name = package.name.as_str();
    let is_dev_only = DEV_ONLY.contains(&name);
    package
        .dependencies
        .iter()
        .filter(|dep| ours.contains(&dep.name))
        .filter_map(|dep| {
            if is_dev_only {
                Some(format!(
                    "{name} is a test-only crate and must depend on no crate of ours, but depends on {}",
                    dep.name
                ))
            } else if DEV_ONLY.contains(&dep.name.as_str())
                && dep.kind != cargo_metadata::DependencyKind::Development
            {
                Some(format!(
                    "{name} depends on {} ({:?}), which may only be a dev-dependency",
                    dep.name, dep.kind
                ))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_is_tidy() {
        let root = workspace_root().unwrap();
        let report = check(&root).unwrap();
        for note in &report.notes {
            println!("{note}");
        }
        let problems = report.problems;
        assert!(
            problems.is_empty(),
            "tidy found problems:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn every_layered_crate_is_a_member() {
        let root = workspace_root().unwrap();
        let metadata = MetadataCommand::new()
            .manifest_path(root.join("Cargo.toml"))
            .no_deps()
            .exec()
            .unwrap();
        let members: BTreeSet<&str> = metadata
            .workspace_packages()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        for (name, _) in LAYERS {
            assert!(members.contains(name), "{name} is not a workspace member");
        }
    }
}
