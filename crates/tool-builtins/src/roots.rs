//! Allowed roots: the working directory plus the roots the user adds. Every path a file tool
//! touches is resolved (symlinks included) and checked against them before any read or write.

use std::path::{Component, Path, PathBuf};

use tool_core::ToolError;

/// The directories file tools may touch. Paths are checked after resolving symlinks, so a link
/// inside a root that points outside it is refused.
#[derive(Debug, Clone)]
pub(crate) struct AllowedRoots {
    cwd: PathBuf,
    roots: Vec<PathBuf>,
}

impl AllowedRoots {
    /// Roots made of the working directory and `extra` roots. Each root is canonicalised when it
    /// exists, so comparisons are made between resolved paths.
    pub(crate) fn new(cwd: &Path, extra: &[PathBuf]) -> Self {
        let cwd = canonical_or_lexical(cwd);
        let mut roots = vec![cwd.clone()];
        for root in extra {
            let root = if root.is_absolute() {
                root.clone()
            } else {
                cwd.join(root)
            };
            roots.push(canonical_or_lexical(&root));
        }
        Self { cwd, roots }
    }

    /// These roots and one more.
    pub(crate) fn with_root(mut self, root: &Path) -> Self {
        self.roots.push(canonical_or_lexical(root));
        self
    }

    /// The resolved working directory.
    pub(crate) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves `path` (relative to the working directory) to an absolute path with every
    /// existing component's symlinks resolved, and refuses it when it lies outside every root.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        if path.trim().is_empty() {
            return Err(ToolError::invalid(
                "the path is empty: pass a file path such as \"src/main.rs\"",
            ));
        }
        if path.contains('\0') {
            return Err(ToolError::invalid(
                "the path contains a NUL byte: pass a plain file path",
            ));
        }
        let joined = self.cwd.join(expand_home(path));
        let resolved = resolve_existing_prefix(&joined);
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            let shown = if Path::new(path) == resolved {
                path.to_owned()
            } else {
                format!("{path} (resolved to {})", resolved.display())
            };
            Err(ToolError::failed(format!(
                "{shown} is outside the allowed directories ({}); work on files inside them, or ask the user to add the directory as an allowed root",
                self.describe()
            )))
        }
    }

    /// Whether an already resolved path lies inside a root.
    fn contains(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|root| resolved.starts_with(root))
    }

    /// The resolved roots, the working directory first.
    pub(crate) fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// `path` relative to the working directory when it lies inside it, else absolute: how
    /// tools show paths to the model (short, and valid input for the next call).
    pub(crate) fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        names.join(", ")
    }
}

fn expand_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    PathBuf::from(path)
}

fn canonical_or_lexical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalise_lexically(path))
}

/// Removes `.` and folds `..` without touching the file system. A `..` at the root stays at the
/// root, as the kernel does.
pub(crate) fn normalise_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Resolves symlinks in the longest existing prefix of an absolute path and appends the rest
/// lexically. Walking component by component (rather than normalising `..` first) is what makes
/// `link/../x` mean what the kernel will make of it.
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::new();
    let mut components = path.components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let candidate = resolved.join(name);
                match std::fs::canonicalize(&candidate) {
                    Ok(real) => resolved = real,
                    Err(_) => {
                        // The rest does not exist yet (a file about to be created): fold it
                        // lexically. A dangling symlink is followed by hand so that it cannot
                        // point a new file outside the roots.
                        if let Ok(target) = std::fs::read_link(&candidate) {
                            let target = if target.is_absolute() {
                                target
                            } else {
                                resolved.join(target)
                            };
                            resolved = normalise_lexically(&target);
                        } else {
                            resolved.push(name);
                        }
                        let rest: PathBuf = components.by_ref().collect();
                        return normalise_lexically(&resolved.join(rest));
                    }
                }
            }
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation_folds_dots() {
        assert_eq!(
            normalise_lexically(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalise_lexically(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(
            normalise_lexically(Path::new("src/../../x")),
            PathBuf::from("../x")
        );
    }

    #[test]
    fn dot_dot_tricks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        let roots = AllowedRoots::new(&root, &[]);
        assert!(roots.resolve("src/../x.txt").is_ok());
        assert!(roots.resolve("src/../../x.txt").is_err());
        assert!(roots.resolve("missing/../../x.txt").is_err());
        assert!(roots.resolve("/etc/passwd").is_err());
        assert!(roots.resolve("").is_err());
    }

    #[test]
    fn symlinks_are_resolved_before_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("new"), root.join("dangling")).unwrap();
        let roots = AllowedRoots::new(&root, &[]);
        assert!(roots.resolve("link/secret").is_err());
        assert!(roots.resolve("link/new-file").is_err());
        assert!(roots.resolve("dangling").is_err());
        let extra = AllowedRoots::new(&root, std::slice::from_ref(&outside));
        assert!(extra.resolve("link/secret").is_ok());
    }
}
