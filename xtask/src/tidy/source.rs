//! Our crates' sources as modules: each crate root (`src/lib.rs`, `src/main.rs`) parsed with
//! `syn`, and every module it declares, file or inline, in declaration order. Modules under
//! `#[cfg(test)]` are left out: they are not part of what the crate builds for its users.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// One module of a crate: its path from the crate root, the file it lives in, and its own items
/// (an inline `mod` inside it is a module of its own, listed separately).
pub struct Module {
    /// The module's path from the crate root; empty for the root itself.
    pub path: Vec<String>,
    /// The file holding the module's items.
    pub file: PathBuf,
    /// The module's items, without those of `#[cfg(test)]` modules.
    pub items: Vec<syn::Item>,
    /// Whether the module is written inline (`mod x { ... }`) in its parent's file.
    pub inline: bool,
}

impl Module {
    /// The module's name as reports show it: `crate` for the root, else `a::b`.
    pub fn name(&self) -> String {
        if self.path.is_empty() {
            "crate".to_owned()
        } else {
            self.path.join("::")
        }
    }
}

/// One crate target's modules: a library or a binary.
pub struct CrateSource {
    /// The package name, with ` (bin)` for a binary root.
    pub label: String,
    /// Every module, the root first.
    pub modules: Vec<Module>,
}

/// The library and binary roots of every crate under `crates/`, parsed.
pub fn workspace_crates(root: &Path) -> anyhow::Result<Vec<CrateSource>> {
    let mut crates = Vec::new();
    let dir = root.join("crates");
    let mut packages: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    packages.sort();
    for package in packages {
        let name = package
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (file, label) in [
            ("src/lib.rs", name.clone()),
            ("src/main.rs", format!("{name} (bin)")),
        ] {
            let root_file = package.join(file);
            if root_file.is_file() {
                crates.push(CrateSource {
                    label,
                    modules: crate_modules(&root_file)?,
                });
            }
        }
    }
    Ok(crates)
}

/// The modules of the crate whose root file is `root_file`.
pub fn crate_modules(root_file: &Path) -> anyhow::Result<Vec<Module>> {
    let items = parse(root_file)?;
    let children_dir = root_file
        .parent()
        .map(Path::to_path_buf)
        .context("a crate root has a parent directory")?;
    let mut modules = Vec::new();
    collect(
        Vec::new(),
        root_file,
        &children_dir,
        items,
        false,
        &mut modules,
    )?;
    Ok(modules)
}

fn parse(file: &Path) -> anyhow::Result<Vec<syn::Item>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
    Ok(parsed.items)
}

/// A `mod` declaration met in a module's items.
struct Child {
    name: String,
    path_attr: Option<String>,
    /// Whether the declaration has a `cfg` attribute (so its file may be absent).
    conditional: bool,
    /// The items of an inline module.
    body: Option<Vec<syn::Item>>,
}

/// Adds the module at `path` (items from `file`) and, depth first, every module it declares;
/// `children_dir` is where its `mod x;` files live.
fn collect(
    path: Vec<String>,
    file: &Path,
    children_dir: &Path,
    items: Vec<syn::Item>,
    inline: bool,
    modules: &mut Vec<Module>,
) -> anyhow::Result<()> {
    let mut children = Vec::new();
    let mut own = Vec::new();
    for item in items {
        match item {
            syn::Item::Mod(module) if is_cfg_test(&module.attrs) => {}
            syn::Item::Mod(mut module) => {
                // The parent keeps the declaration; the body belongs to the child's own module.
                let body = module.content.take().map(|(_, items)| items);
                let conditional = module.attrs.iter().any(|a| a.path().is_ident("cfg"));
                children.push(Child {
                    name: module.ident.to_string(),
                    path_attr: path_attribute(&module.attrs),
                    conditional,
                    body,
                });
                own.push(syn::Item::Mod(module));
            }
            other => own.push(other),
        }
    }
    modules.push(Module {
        path: path.clone(),
        file: file.to_path_buf(),
        items: own,
        inline,
    });
    for child in children {
        let Child {
            name,
            path_attr,
            conditional,
            body,
        } = child;
        let mut child_path = path.clone();
        child_path.push(name.clone());
        let dir = children_dir.join(&name);
        match body {
            Some(items) => collect(child_path, file, &dir, items, true, modules)?,
            None => {
                let found = module_file(children_dir, &name, path_attr.as_deref());
                // A module only built on some platforms may have no file on others.
                let (child_file, grandchildren_dir) = match found {
                    Err(_) if conditional => continue,
                    other => other?,
                };
                let items = parse(&child_file)?;
                collect(
                    child_path,
                    &child_file,
                    &grandchildren_dir,
                    items,
                    false,
                    modules,
                )?;
            }
        }
    }
    Ok(())
}

/// The file of `mod name;` declared by a module whose children live in `dir`, and where that
/// module's own children live: `name.rs` (children in `name/`) or `name/mod.rs`, or a
/// `#[path]` relative to `dir`.
fn module_file(
    dir: &Path,
    name: &str,
    path_attr: Option<&str>,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    if let Some(path) = path_attr {
        let file = dir.join(path);
        let children = file.with_extension("");
        return Ok((file, children));
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() {
        return Ok((flat, dir.join(name)));
    }
    let nested = dir.join(name).join("mod.rs");
    if nested.is_file() {
        return Ok((nested, dir.join(name)));
    }
    anyhow::bail!(
        "module `{name}` declared but neither {} nor {} exists",
        flat.display(),
        nested.display()
    )
}

fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        let syn::Meta::NameValue(meta) = &attr.meta else {
            return None;
        };
        if !meta.path.is_ident("path") {
            return None;
        }
        match &meta.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Some(text.value()),
            _ => None,
        }
    })
}

/// Whether `attrs` hold `#[cfg(test)]` (alone; `cfg(any(test, ...))` is built outside tests too).
pub fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// Whether `attrs` mark a test function (`#[test]`, `#[tokio::test]`, ...).
pub fn is_test_fn(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "test")
    })
}
