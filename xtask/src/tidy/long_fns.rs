//! No function over [`MAX_FN_LINES`] lines in our crates' sources.
//!
//! A function's length counts from the line of its `fn` keyword to the line of its closing
//! brace (attributes and doc comments above it are not counted). Free functions, methods and
//! trait methods with a body are measured, and functions nested in them too; functions in
//! `#[cfg(test)]` modules and items, `#[test]` functions, and anything outside `crates/*/src`
//! (tests/, benches/, examples/, xtask) are not.

use std::path::Path;

use syn::visit::Visit;

use super::source::{CrateSource, is_cfg_test, is_test_fn};

/// The longest a function may be, in lines.
pub const MAX_FN_LINES: usize = 80;

/// Functions allowed over [`MAX_FN_LINES`] for now, as (file from the workspace root, name;
/// `Type::method` for methods), each one being split into smaller, well-named functions. The
/// list must only shrink, to empty (it is empty: the functions that were over the limit when this
/// check was written have been split). A function not listed here that goes over the limit
/// fails tidy.
pub const ALLOWED_LONG_FNS: &[(&str, &str)] = &[];

/// A measured function.
#[derive(Clone, Debug)]
pub struct Function {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The line of its `fn` keyword.
    pub line: usize,
    /// `name`, or `Type::name` for a method.
    pub name: String,
    /// Lines from the `fn` keyword to the closing brace.
    pub lines: usize,
}

impl std::fmt::Display for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} {} ({} lines)",
            self.file, self.line, self.name, self.lines
        )
    }
}

/// What the check found.
#[derive(Default)]
pub struct LengthReport {
    /// Functions over the limit that the allowlist does not name.
    pub problems: Vec<String>,
    /// Functions over the limit that the allowlist names.
    pub allowed: Vec<Function>,
    /// Allowlist entries that name no function over the limit any more (to be deleted).
    pub stale: Vec<String>,
    /// The five longest functions, longest first.
    pub longest: Vec<Function>,
}

/// Measures every function of `crates`, whose files are under `root`.
pub fn check(root: &Path, crates: &[CrateSource]) -> LengthReport {
    let mut functions = Vec::new();
    for source in crates {
        for module in &source.modules {
            let file = module
                .file
                .strip_prefix(root)
                .unwrap_or(&module.file)
                .display()
                .to_string();
            let mut measurer = Measurer {
                file,
                owner: Vec::new(),
                found: &mut functions,
            };
            for item in &module.items {
                measurer.visit_item(item);
            }
        }
    }
    // A binary root and its library may share files; measure each function once.
    functions.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    functions.dedup_by(|a, b| a.file == b.file && a.line == b.line);
    report(functions)
}

fn report(mut functions: Vec<Function>) -> LengthReport {
    let mut result = LengthReport::default();
    let mut used = vec![false; ALLOWED_LONG_FNS.len()];
    for function in functions.iter().filter(|f| f.lines > MAX_FN_LINES) {
        let entry = ALLOWED_LONG_FNS
            .iter()
            .position(|(file, name)| *file == function.file && *name == function.name);
        match entry {
            Some(index) => {
                used[index] = true;
                result.allowed.push(function.clone());
            }
            None => result.problems.push(format!(
                "{function} is longer than {MAX_FN_LINES} lines: split it into smaller functions whose names say what each step does"
            )),
        }
    }
    for ((file, name), used) in ALLOWED_LONG_FNS.iter().zip(used) {
        if !used {
            result.stale.push(format!(
                "{file} {name} is no longer over {MAX_FN_LINES} lines (or is gone); delete it from ALLOWED_LONG_FNS"
            ));
        }
    }
    functions.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.file.cmp(&b.file)));
    functions.truncate(5);
    result.longest = functions;
    result
}

/// Walks one module's items, recording each function's length.
struct Measurer<'f> {
    file: String,
    /// The enclosing `impl` or `trait`'s name, for method names.
    owner: Vec<String>,
    found: &'f mut Vec<Function>,
}

impl Measurer<'_> {
    fn record(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Function {
            file: self.file.clone(),
            line: start,
            name,
            lines: end.saturating_sub(start) + 1,
        });
    }
}

impl<'ast> Visit<'ast> for Measurer<'_> {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // Inline modules are modules of their own, measured from their own entry.
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if is_cfg_test(&function.attrs) || is_test_fn(&function.attrs) {
            return;
        }
        self.record(&function.sig.ident, &function.sig.fn_token, &function.block);
        syn::visit::visit_item_fn(self, function);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        let owner = match &*item.self_ty {
            syn::Type::Path(path) => path
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default(),
            // `impl Trait for &T` and the like: named by the trait, if any.
            _ => item
                .trait_
                .as_ref()
                .and_then(|(_, path, _)| path.segments.last())
                .map_or_else(|| "impl".to_owned(), |s| s.ident.to_string()),
        };
        self.owner.push(owner);
        syn::visit::visit_item_impl(self, item);
        self.owner.pop();
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        self.owner.push(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if is_cfg_test(&function.attrs) || is_test_fn(&function.attrs) {
            return;
        }
        self.record(&function.sig.ident, &function.sig.fn_token, &function.block);
        // Functions nested in a method are not methods.
        let owners = std::mem::take(&mut self.owner);
        syn::visit::visit_impl_item_fn(self, function);
        self.owner = owners;
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if is_cfg_test(&function.attrs) {
            return;
        }
        if let Some(block) = &function.default {
            self.record(&function.sig.ident, &function.sig.fn_token, block);
        }
        let owners = std::mem::take(&mut self.owner);
        syn::visit::visit_trait_item_fn(self, function);
        self.owner = owners;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure(text: &str) -> Vec<(String, usize)> {
        let file = syn::parse_file(text).unwrap();
        let mut found = Vec::new();
        let mut measurer = Measurer {
            file: "x.rs".to_owned(),
            owner: Vec::new(),
            found: &mut found,
        };
        for item in &file.items {
            measurer.visit_item(item);
        }
        found.into_iter().map(|f| (f.name, f.lines)).collect()
    }

    #[test]
    fn lengths_count_from_fn_to_the_closing_brace() {
        let text = "/// Docs.\n#[inline]\nfn one() {}\n\nimpl S {\n    pub fn two(&self) {\n        let s = \"}\";\n        // }\n    }\n}\ntrait T {\n    fn three() {\n        fn inner() {}\n    }\n    fn four();\n}\n";
        assert_eq!(
            measure(text),
            [
                ("one".to_owned(), 1),
                ("S::two".to_owned(), 4),
                ("T::three".to_owned(), 3),
                ("inner".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn tests_are_not_measured() {
        let text = "#[test]\nfn a() {}\n#[cfg(test)]\nimpl S { fn b() {} }\nfn c() {}\n";
        assert_eq!(measure(text), [("c".to_owned(), 1)]);
    }
}
