//! Public items nobody outside their crate uses. A library's `pub` items are its promise to
//! users; one that no other crate, binary, example, test, bench or document names is an internal
//! that leaked, and should be `pub(crate)`, unless [`PUBLIC_BY_DESIGN`] says why it is public.
//!
//! Checked: the items declared `pub` directly in a library crate's modules (functions, types,
//! traits, constants, statics, type aliases), by name. A name counts as used when a public
//! signature of the crate names it (a type a public function returns or takes, a public field's
//! type: users meet it through that item), or when it occurs as a word anywhere outside the crate's library sources (its unit tests count as inside): the other
//! crates, the crate's own binary, integration tests, examples and benches, `benches/`, `xtask/`,
//! and the Markdown documents.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use super::source::CrateSource;

/// Public items that nothing in the workspace names, and why each stays public.
pub const PUBLIC_BY_DESIGN: &[(&str, &str, &str)] = &[
    (
        "test-support",
        "fixture_in",
        "the `fixture!` macro calls it from the caller's crate",
    ),
    (
        "tool-core",
        "DEFAULT_MAX_RESULT_CHARS",
        "the result budget a tool gets unless its spec sets one; authors size theirs against it",
    ),
    (
        "tool-pool",
        "TOOL_SEARCH",
        "the search tool's name, for a core whitelist or a rule that names it",
    ),
    (
        "tool-pool",
        "DEFAULT_CORE_TOOLS",
        "the default core whitelist, for a configuration that extends it rather than replaces it",
    ),
];

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
        let mut words = words_outside(root, &package.join("src"), &binary)?;
        let mut signatures = SignatureNames::default();
        for module in &source.modules {
            for item in &module.items {
                signatures.public_item(item);
            }
        }
        words.extend(signatures.names);
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

/// Every identifier-like word in the workspace's Rust and Markdown files; of the files under
/// `library` (the crate's `src`, its unit tests included) that are not in `binary` or
/// `src/bin`, only the words of their doc examples.
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
            let inside = path.starts_with(library)
                && !path.starts_with(library.join("bin"))
                && !binary.contains(&path);
            if !wanted {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            // Inside the library, only its doc examples are users.
            let text = if inside { doc_examples(&text) } else { text };
            words.extend(
                text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    Ok(words)
}

/// The identifiers that the public signatures of a crate name.
#[derive(Default)]
struct SignatureNames {
    names: BTreeSet<String>,
}

impl SignatureNames {
    fn public_item(&mut self, item: &syn::Item) {
        let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
        match item {
            syn::Item::Fn(f) if public(&f.vis) => self.visit_signature(&f.sig),
            syn::Item::Struct(s) if public(&s.vis) => {
                for field in s.fields.iter().filter(|f| public(&f.vis)) {
                    self.visit_type(&field.ty);
                }
            }
            syn::Item::Enum(e) if public(&e.vis) => {
                for field in e.variants.iter().flat_map(|v| v.fields.iter()) {
                    self.visit_type(&field.ty);
                }
            }
            syn::Item::Trait(t) if public(&t.vis) => {
                for item in &t.items {
                    match item {
                        syn::TraitItem::Fn(f) => self.visit_signature(&f.sig),
                        syn::TraitItem::Type(t) => self.visit_trait_item_type(t),
                        syn::TraitItem::Const(c) => self.visit_type(&c.ty),
                        _ => {}
                    }
                }
            }
            syn::Item::Type(t) if public(&t.vis) => self.visit_type(&t.ty),
            syn::Item::Const(c) if public(&c.vis) => self.visit_type(&c.ty),
            syn::Item::Static(s) if public(&s.vis) => self.visit_type(&s.ty),
            syn::Item::Impl(block) => {
                let of_trait = block.trait_.is_some();
                for item in &block.items {
                    match item {
                        syn::ImplItem::Fn(f) if of_trait || public(&f.vis) => {
                            self.visit_signature(&f.sig);
                        }
                        syn::ImplItem::Type(t) if of_trait => self.visit_type(&t.ty),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for SignatureNames {
    fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
        self.names.insert(segment.ident.to_string());
        syn::visit::visit_path_segment(self, segment);
    }
}

/// The code blocks of a Rust file's doc comments (`///` and `//!`), which rustdoc runs as tests.
fn doc_examples(text: &str) -> String {
    let mut examples = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let line = line.trim_start();
        let Some(doc) = line
            .strip_prefix("///")
            .or_else(|| line.strip_prefix("//!"))
        else {
            in_block = false;
            continue;
        };
        if doc.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            examples.push_str(doc);
            examples.push('\n');
        }
    }
    examples
}
