//! No module cycles inside a crate.
//!
//! Each crate's modules form a graph: module `a` has an edge to module `b` when `a` names
//! something of `b`, in a `use` (groups, renames and globs included) or in a path anywhere in its
//! code (`crate::b::f()`, `super::b::T`, `b::T` for a child `b`, paths inside macro calls). `self`
//! and `super` are resolved from `a`'s place, and a name is followed through the `use` items that
//! re-export it (`crate::Tool` is an edge to `tool` when the root says `pub use tool::Tool`), so
//! an edge goes to the module that defines the item.
//!
//! The rule for parents and children: every module of a crate is a node, a `mod.rs`'s children
//! included. A parent's `mod x;` and its non-private `use` of its own descendants (`pub use
//! x::Thing;`) are declarations, not edges, so a child that uses its parent (or a name the parent
//! re-exports) makes no cycle by that alone; a parent whose own code calls into the child does,
//! when the child also uses the parent. `#[cfg(test)]` modules are left out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use super::source::{CrateSource, Module};

/// Cycles allowed for now, as a crate (a `(bin)` suffix for a binary) and the modules of each
/// cycle. The cycles found when this check was written are all broken up, so the list is empty
/// and must stay so. A cycle passes when all its modules are in one entry of its crate.
pub const ALLOWED_CYCLES: &[(&str, &[&str])] = &[];

/// What the check found: broken rules, cycles that the allowlist covers, and allowlist entries
/// that match no cycle any more (to be deleted).
#[derive(Default)]
pub struct CycleReport {
    /// Cycles the allowlist does not cover.
    pub problems: Vec<String>,
    /// Cycles the allowlist covers, for the record.
    pub allowed: Vec<String>,
    /// Allowlist entries that no cycle needs.
    pub stale: Vec<String>,
}

/// Checks every crate for module cycles.
pub fn check(crates: &[CrateSource]) -> CycleReport {
    let mut report = CycleReport::default();
    let mut used = BTreeSet::new();
    for source in crates {
        let graph = Graph::build(&source.modules);
        for cycle in graph.cycles() {
            let mut line = format!("{}: module cycle {}", source.label, cycle.path.join(" -> "));
            if cycle.members.len() + 1 > cycle.path.len() {
                line.push_str(&format!(
                    " (one of the cycles among {})",
                    cycle.members.join(", ")
                ));
            }
            let entry = ALLOWED_CYCLES.iter().position(|(label, modules)| {
                *label == source.label
                    && cycle.members.iter().all(|m| modules.contains(&m.as_str()))
            });
            match entry {
                Some(index) => {
                    used.insert(index);
                    report.allowed.push(line);
                }
                None => report.problems.push(format!(
                    "{line}; break it (move what both sides need into a module of its own, or pass it in), since a cycle makes neither module understandable alone"
                )),
            }
        }
    }
    for (index, (label, modules)) in ALLOWED_CYCLES.iter().enumerate() {
        if !used.contains(&index) {
            report.stale.push(format!(
                "{label}: the allowed cycle among {} is gone; delete it from ALLOWED_CYCLES",
                modules.join(", ")
            ));
        }
    }
    report
}

/// A cycle: the modules of one strongly connected component, and a shortest path around it.
pub struct Cycle {
    /// The modules, sorted by name.
    pub members: Vec<String>,
    /// `a -> b -> a`, from the first member.
    pub path: Vec<String>,
}

/// The names a module defines or imports, which paths through it resolve against.
#[derive(Default)]
struct Names {
    defined: BTreeSet<String>,
    /// A name brought in by a `use`, and the absolute path it stands for.
    imported: BTreeMap<String, Vec<String>>,
    /// The modules glob-imported with `use path::*`.
    globs: Vec<Vec<String>>,
}

/// One leaf of a `use` tree that names something of this crate: its absolute path, and the name
/// it binds (`None` for a glob).
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
}

/// Paths as written, before resolving (`super::x::Y` is `["super", "x", "Y"]`).
type RawPath = Vec<String>;

/// A crate's module graph.
struct Graph {
    names: Vec<String>,
    edges: Vec<BTreeSet<usize>>,
}

/// Resolution of written paths against one crate's modules.
struct Resolver<'a> {
    index: BTreeMap<&'a [String], usize>,
    modules: &'a [Module],
    names: Vec<Names>,
}

impl<'a> Resolver<'a> {
    fn new(modules: &'a [Module]) -> Self {
        let index = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.as_slice(), i))
            .collect();
        let mut resolver = Self {
            index,
            modules,
            names: Vec::new(),
        };
        resolver.names = modules.iter().map(|m| resolver.names_of(m)).collect();
        resolver
    }

    fn names_of(&self, module: &Module) -> Names {
        let mut names = Names::default();
        for item in &module.items {
            if let Some(ident) = defined_ident(item) {
                names.defined.insert(ident);
            }
            if let syn::Item::Use(item_use) = item {
                for leaf in self.use_leaves(&module.path, &item_use.tree) {
                    match leaf.name {
                        Some(name) => {
                            names.imported.insert(name, leaf.path);
                        }
                        None => names.globs.push(leaf.path),
                    }
                }
            }
        }
        names
    }

    /// The leaves of a `use` tree in `module`, those that name something of this crate.
    fn use_leaves(&self, module: &[String], tree: &syn::UseTree) -> Vec<UseLeaf> {
        let mut raw = Vec::new();
        flatten_use(tree, &mut Vec::new(), &mut raw);
        raw.into_iter()
            .filter_map(|(written, name)| {
                let path = self.absolute(module, &written)?;
                Some(UseLeaf { path, name })
            })
            .collect()
    }

    /// The absolute path for `written` as seen from `module`, if it names something of this crate.
    fn absolute(&self, module: &[String], written: &[String]) -> Option<Vec<String>> {
        let (first, rest) = written.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" | "$crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => module.split_last()?.1.to_vec(),
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if self.index.contains_key(child.as_slice()) {
                    child
                } else {
                    return None;
                }
            }
        };
        let mut rest = rest;
        while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
            base.pop()?;
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what the absolute `path` names, following re-exports.
    fn target(&self, path: &[String], depth: usize) -> usize {
        let (module, rest) = self.longest_module(path);
        let Some((name, tail)) = rest.split_first() else {
            return module;
        };
        let names = &self.names[module];
        if depth > 16 || names.defined.contains(name) {
            return module;
        }
        if let Some(to) = names.imported.get(name) {
            let mut next = to.clone();
            next.extend(tail.iter().cloned());
            return self.target(&next, depth + 1);
        }
        for glob in &names.globs {
            if let Some(&source) = self.index.get(glob.as_slice()) {
                let there = &self.names[source];
                if there.defined.contains(name) || there.imported.contains_key(name) {
                    let mut next = glob.clone();
                    next.extend(rest.iter().cloned());
                    return self.target(&next, depth + 1);
                }
            }
        }
        module
    }

    fn longest_module<'p>(&self, path: &'p [String]) -> (usize, &'p [String]) {
        (0..=path.len())
            .rev()
            .find_map(|len| {
                self.index
                    .get(&path[..len])
                    .map(|&module| (module, &path[len..]))
            })
            .unwrap_or((0, path))
    }

    /// The modules `module` depends on.
    fn edges(&self, module: usize) -> BTreeSet<usize> {
        let here = &self.modules[module];
        let mut targets = BTreeSet::new();
        for item in &here.items {
            match item {
                syn::Item::Mod(_) => {}
                syn::Item::Use(item_use) => {
                    let reexport = !matches!(item_use.vis, syn::Visibility::Inherited);
                    for leaf in self.use_leaves(&here.path, &item_use.tree) {
                        let target = self.target(&leaf.path, 0);
                        let own_descendant = self.modules[target].path.len() > here.path.len()
                            && self.modules[target].path.starts_with(&here.path);
                        if !(reexport && own_descendant) {
                            targets.insert(target);
                        }
                    }
                }
                other => {
                    let mut paths = PathCollector::default();
                    paths.visit_item(other);
                    for written in paths.paths {
                        if let Some(absolute) = self.absolute_or_imported(module, &written) {
                            targets.insert(self.target(&absolute, 0));
                        }
                    }
                }
            }
        }
        targets.remove(&module);
        targets
    }

    /// Like [`Resolver::absolute`], and also for a path that starts with a name the module
    /// imported (`config::load` after `use crate::provider::config;`).
    fn absolute_or_imported(&self, module: usize, written: &[String]) -> Option<Vec<String>> {
        let path = &self.modules[module].path;
        // A lone name is a local, or an item the module imported (counted here, since a
        // re-export's `use` alone is no edge): never a module.
        let relative = if written.len() > 1 {
            self.absolute(path, written)
        } else {
            None
        };
        relative.or_else(|| {
            let (first, rest) = written.split_first()?;
            let mut base = self.names[module].imported.get(first)?.clone();
            base.extend(rest.iter().cloned());
            Some(base)
        })
    }
}

impl Graph {
    /// The graph of `modules`' files: an inline module is part of the file it is written in
    /// (a platform shim such as `mod imp { use super::Policy; }` is not a cycle of its own).
    fn build(modules: &[Module]) -> Self {
        let resolver = Resolver::new(modules);
        let mut node_of = vec![0; modules.len()];
        for (index, module) in modules.iter().enumerate() {
            // Modules come parent first, so an inline module's parent already has its node.
            node_of[index] = match module.path.split_last() {
                Some((_, parent)) if module.inline => node_of[resolver.index[parent]],
                _ => index,
            };
        }
        let mut edges = vec![BTreeSet::new(); modules.len()];
        for (index, targets) in (0..modules.len()).map(|m| (m, resolver.edges(m))) {
            let from = node_of[index];
            edges[from].extend(
                targets
                    .into_iter()
                    .map(|t| node_of[t])
                    .filter(|&t| t != from),
            );
        }
        Self {
            names: modules.iter().map(Module::name).collect(),
            edges,
        }
    }

    /// Every cycle, one per strongly connected component of more than one module.
    fn cycles(&self) -> Vec<Cycle> {
        let mut cycles: Vec<Cycle> = strongly_connected(&self.edges)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| self.cycle(&component))
            .collect();
        cycles.sort_by(|a, b| a.members.cmp(&b.members));
        cycles
    }

    /// A shortest way around `component`, from its first module by name.
    fn cycle(&self, component: &BTreeSet<usize>) -> Cycle {
        let mut members: Vec<usize> = component.iter().copied().collect();
        members.sort_by(|a, b| self.names[*a].cmp(&self.names[*b]));
        let start = members[0];
        let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = start;
        'search: while let Some(node) = queue.pop_front() {
            for &next in &self.edges[node] {
                if !component.contains(&next) {
                    continue;
                }
                if next == start {
                    last = node;
                    break 'search;
                }
                if let std::collections::btree_map::Entry::Vacant(entry) = previous.entry(next) {
                    entry.insert(node);
                    queue.push_back(next);
                }
            }
        }
        // Walk back from the module that closes the cycle to the start, then turn it around.
        let mut back = Vec::new();
        let mut node = last;
        while node != start {
            back.push(node);
            node = previous[&node];
        }
        back.reverse();
        let path = std::iter::once(start)
            .chain(back)
            .chain(std::iter::once(start))
            .map(|m| self.names[m].clone())
            .collect();
        Cycle {
            members: members.iter().map(|&m| self.names[m].clone()).collect(),
            path,
        }
    }
}

/// Tarjan's algorithm: the strongly connected components of the graph.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<BTreeSet<usize>> {
    struct State<'e> {
        edges: &'e [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<BTreeSet<usize>>,
    }
    fn visit(state: &mut State<'_>, node: usize) {
        state.index[node] = Some(state.next);
        state.low[node] = state.next;
        state.next += 1;
        state.stack.push(node);
        state.on_stack[node] = true;
        for &next in state.edges[node].iter() {
            match state.index[next] {
                None => {
                    visit(state, next);
                    state.low[node] = state.low[node].min(state.low[next]);
                }
                Some(index) if state.on_stack[next] => {
                    state.low[node] = state.low[node].min(index);
                }
                Some(_) => {}
            }
        }
        if Some(state.low[node]) == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack[member] = false;
                component.insert(member);
                if member == node {
                    break;
                }
            }
            state.components.push(component);
        }
    }
    let count = edges.len();
    let mut state = State {
        edges,
        index: vec![None; count],
        low: vec![0; count],
        on_stack: vec![false; count],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for node in 0..count {
        if state.index[node].is_none() {
            visit(&mut state, node);
        }
    }
    state.components
}

/// The name an item defines in its module's namespace, if any.
fn defined_ident(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Flattens a `use` tree into (written path, bound name); a glob binds no name, and a
/// `self` leaf binds the name of the module it is in.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(RawPath, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten_use(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) if name.ident == "self" => {
            out.push((prefix.clone(), prefix.last().cloned()));
        }
        syn::UseTree::Name(name) => {
            let mut path = prefix.clone();
            path.push(name.ident.to_string());
            out.push((path, Some(name.ident.to_string())));
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            if rename.ident != "self" {
                path.push(rename.ident.to_string());
            }
            out.push((path, Some(rename.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// Every path written in an item, `use` items inside it and paths inside macro calls included;
/// `#[cfg(test)]` items are skipped.
#[derive(Default)]
struct PathCollector {
    paths: Vec<RawPath>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        flatten_use(&item.tree, &mut Vec::new(), &mut leaves);
        self.paths.extend(leaves.into_iter().map(|(path, _)| path));
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !item_is_cfg_test(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if !super::source::is_cfg_test(&function.attrs) {
            syn::visit::visit_impl_item_fn(self, function);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        collect_token_paths(mac.tokens.clone(), &mut self.paths);
    }
}

fn item_is_cfg_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return false,
    };
    super::source::is_cfg_test(attrs)
}

/// Paths (`a::b::c`, `$crate::x`) in a macro call's tokens, which `syn` leaves unparsed.
fn collect_token_paths(tokens: TokenStream, out: &mut Vec<RawPath>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(group) => collect_token_paths(group.stream(), out),
            TokenTree::Ident(ident) if !preceded_by_path_separator(&tokens, i) => {
                let dollar =
                    i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                let mut path = vec![if dollar {
                    format!("${ident}")
                } else {
                    ident.to_string()
                }];
                let mut j = i + 1;
                while is_path_separator(&tokens, j) {
                    match tokens.get(j + 2) {
                        Some(TokenTree::Ident(next)) => {
                            path.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(path);
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

fn is_path_separator(tokens: &[TokenTree], at: usize) -> bool {
    matches!(
        (tokens.get(at), tokens.get(at + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && b.as_char() == ':'
    )
}

fn preceded_by_path_separator(tokens: &[TokenTree], at: usize) -> bool {
    at >= 2 && is_path_separator(tokens, at - 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(files: &[(&str, &str)]) -> Vec<Module> {
        let dir = tempfile_dir();
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        super::super::source::crate_modules(&dir.join("lib.rs")).unwrap()
    }

    fn tempfile_dir() -> std::path::PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tidy-cycles-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn cycles(files: &[(&str, &str)]) -> Vec<String> {
        Graph::build(&modules(files))
            .cycles()
            .into_iter()
            .map(|c| c.path.join(" -> "))
            .collect()
    }

    #[test]
    fn a_three_module_cycle_is_reported_with_its_path() {
        let found = cycles(&[
            (
                "lib.rs",
                "mod context; mod permission; mod tool; pub use tool::Tool;",
            ),
            (
                "context.rs",
                "use crate::permission::Rules; pub struct Context;",
            ),
            ("permission.rs", "pub struct Rules(crate::Tool);"),
            (
                "tool.rs",
                "pub struct Tool; fn f(_: &super::context::Context) {}",
            ),
        ]);
        assert_eq!(found, ["context -> permission -> tool -> context"]);
    }

    #[test]
    fn a_parent_that_only_declares_and_reexports_is_no_edge() {
        let found = cycles(&[
            ("lib.rs", "mod provider;"),
            (
                "provider/mod.rs",
                "mod config; pub use config::Config; pub struct Kind;",
            ),
            ("provider/config.rs", "use super::Kind; pub struct Config;"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_parent_calling_its_child_that_uses_it_is_a_cycle() {
        let found = cycles(&[
            ("lib.rs", "mod provider;"),
            (
                "provider/mod.rs",
                "mod config; pub struct Kind; fn f() { config::load(); }",
            ),
            (
                "provider/config.rs",
                "pub fn load() -> super::Kind { super::Kind }",
            ),
        ]);
        assert_eq!(found, ["provider -> provider::config -> provider"]);
    }

    #[test]
    fn groups_renames_macros_and_test_modules() {
        let found = cycles(&[
            ("lib.rs", "mod a; mod b; mod c;"),
            (
                "a.rs",
                "use crate::{b::{self as bee}, c::*}; fn f() { bee::g(); }",
            ),
            (
                "b.rs",
                "pub fn g() { println!(\"{}\", crate::a::X); } #[cfg(test)] mod tests { use crate::c::Y; }",
            ),
            ("c.rs", "pub struct Y;"),
        ]);
        assert_eq!(found, ["a -> b -> a"]);
    }
}
