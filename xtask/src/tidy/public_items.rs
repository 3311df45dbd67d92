//! Public items nobody outside their crate uses. A library's `pub` items are its promise to
//! users; one that no other crate, binary, example, test, bench or document names is an internal
//! that leaked, and should be `pub(crate)`, unless [`PUBLIC_BY_DESIGN`] says why it is public.
//!
//! Checked: the items declared `pub` directly in a library crate's modules (functions, types,
//! traits, constants, statics, type aliases), by name. A name counts as used when it occurs as a
//! word anywhere outside the crate's library sources (its unit tests count as inside): the other
//! crates, the crate's own binary, integration tests, examples and benches, `benches/`, `xtask/`,
//! and the Markdown documents.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::source::CrateSource;

/// Public items that nothing in the workspace names, and why each stays public.
pub const PUBLIC_BY_DESIGN: &[(&str, &str, &str)] = &[];

/// What the check found.
pub struct Found {
    /// One line per public item nobody outside its crate uses.
    pub problems: Vec<String>,
}

/// Checks every library crate of `crates`.
pub fn check(root: &Path, crates: &[CrateSource]) -> anyhow::Result<Found> {
    let mut problems = Vec::new();
    for source in crates.iter().filter(|c| !c.label.ends_with(" (bin)")) {
        let package = root.join("crates").join(&source.label);
        let binary: BTreeSet<PathBuf> = crates
            .iter()
            .filter(|c| c.label == format!("{} (bin)", source.label))
            .flat_map(|c| c.modules.iter().map(|m| m.file.clone()))
            .collect();
        let words = words_outside(root, &package.join("src"), &binary)?;
        for module in &source.modules {
            for name in public_names(&module.items) {
                let allowed = PUBLIC_BY_DESIGN
                    .iter()
                    .any(|(krate, item, _)| *krate == source.label && *item == name);
                if !allowed && !words.contains(&name) {
                    problems.push(format!(
                        "{}::{}{name} is public, but nothing outside {} uses it: make it \
                         pub(crate), or say why it is public in public_items::PUBLIC_BY_DESIGN",
                        source.label.replace('-', "_"),
                        module_prefix(&module.path),
                        package
                            .strip_prefix(root)
                            .unwrap_or(&package)
                            .join("src")
                            .display(),
                    ));
                }
            }
        }
    }
    Ok(Found { problems })
}

fn module_prefix(path: &[String]) -> String {
    path.iter().map(|p| format!("{p}::")).collect()
}

/// The names of the items declared `pub` (not `pub(crate)` or narrower) among `items`.
fn public_names(items: &[syn::Item]) -> Vec<String> {
    let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if public(&f.vis) => Some(f.sig.ident.to_string()),
            syn::Item::Struct(s) if public(&s.vis) => Some(s.ident.to_string()),
            syn::Item::Enum(e) if public(&e.vis) => Some(e.ident.to_string()),
            syn::Item::Trait(t) if public(&t.vis) => Some(t.ident.to_string()),
            syn::Item::Const(c) if public(&c.vis) => Some(c.ident.to_string()),
            syn::Item::Static(s) if public(&s.vis) => Some(s.ident.to_string()),
            syn::Item::Type(t) if public(&t.vis) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Every identifier-like word in the workspace's Rust and Markdown files, except those under
/// `library` (the crate's `src`, its unit tests included) that are not in `binary`.
fn words_outside(
    root: &Path,
    library: &Path,
    binary: &BTreeSet<PathBuf>,
) -> anyhow::Result<BTreeSet<String>> {
    let mut words = BTreeSet::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)?.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && !matches!(&*name, "target" | "node_modules") {
                    pending.push(path);
                }
                continue;
            }
            let wanted = name.ends_with(".rs") || name.ends_with(".md");
            if !wanted || (path.starts_with(library) && !binary.contains(&path)) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            words.extend(
                text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    Ok(words)
}
