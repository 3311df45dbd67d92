//! The gitignore-aware walk and the glob matching shared by glob and grep.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{DirEntry, WalkBuilder, WalkParallel, WalkState};
use tool_core::{ToolContext, ToolError};

use crate::denies::ReadDenies;
use crate::offload::blocking;
use crate::roots::AllowedRoots;

/// Walks the files under `root` off the async threads, in parallel, and keeps what `visit`
/// makes of each (in no particular order). Each walker thread starts its own `state` (such as a
/// searcher), so `visit` needs no lock for it. The walk stops early when the call is cancelled,
/// and a cancelled call is answered with [`ToolError::Cancelled`].
pub(crate) async fn walk_files<S, T>(
    root: PathBuf,
    denied: Denied,
    ctx: &ToolContext,
    state: impl Fn() -> S + Send + Sync + 'static,
    visit: impl Fn(&mut S, &Path, DirEntry) -> Option<T> + Send + Sync + 'static,
) -> Result<Vec<T>, ToolError>
where
    S: Send,
    T: Send + 'static,
{
    let cancel = ctx.cancellation().clone();
    let found = blocking(move || {
        let found = Mutex::new(Vec::new());
        walker(&root, denied).run(|| {
            let (found, visit, root, cancel) = (&found, &visit, &root, &cancel);
            let mut state = state();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && let Some(item) = visit(&mut state, root, entry)
                {
                    found.lock().unwrap_or_else(|e| e.into_inner()).push(item);
                }
                WalkState::Continue
            })
        });
        Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
    })
    .await?;
    if ctx.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(found)
}

/// What a walk must leave out: the paths read deny rules name, relative to a working directory.
#[derive(Debug, Clone)]
pub(crate) struct Denied {
    pub(crate) denies: Arc<ReadDenies>,
    pub(crate) cwd: PathBuf,
}

/// A parallel walk of `root` that respects `.gitignore`, `.ignore` and the global git excludes
/// (inside a git repository or not), includes hidden files, and never enters `.git` or a path
/// a read deny rule names.
fn walker(root: &Path, denied: Denied) -> WalkParallel {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .threads(threads)
        .filter_entry(move |entry| {
            entry.file_name() != ".git" && !denied.denies.denies(entry.path(), &denied.cwd)
        })
        .build_parallel()
}

/// A file-name or path glob. A pattern without `/` matches file names at any depth (`*.rs`);
/// a pattern with `/` matches the path relative to the search root (`src/**/*.rs`).
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathGlob {
    /// Compiles `pattern`, or says how to write it.
    pub(crate) fn new(pattern: &str, what: &str) -> Result<Self, ToolError> {
        let pattern = pattern.trim();
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        if pattern.is_empty() {
            return Err(ToolError::invalid(format!(
                "{what} is empty: pass a glob such as \"*.rs\" or \"src/**/*.ts\""
            )));
        }
        if Path::new(pattern).is_absolute() {
            return Err(ToolError::invalid(format!(
                "{what} `{pattern}` is absolute; pass the directory as `path` and a relative pattern such as \"**/*.rs\""
            )));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|err| {
                ToolError::invalid(format!(
                    "{what} `{pattern}` is not a valid glob: {}; use *, ?, ** and {{a,b}} as in \"src/**/*.{{ts,tsx}}\"",
                    err.kind()
                ))
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    /// Whether the file at `path` (under `root`) matches.
    pub(crate) fn is_match(&self, root: &Path, path: &Path) -> bool {
        if self.by_name {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            path.strip_prefix(root)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        }
    }
}

/// The directory a search starts from: the given path resolved within the roots, or the
/// working directory.
pub(crate) fn search_root(roots: &AllowedRoots, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path {
        None => Ok(roots.cwd().to_path_buf()),
        Some(p) if p.trim().is_empty() || p.trim() == "." => Ok(roots.cwd().to_path_buf()),
        Some(p) => {
            let resolved = roots.resolve(p)?;
            if !resolved.exists() {
                return Err(ToolError::failed(format!(
                    "{p} does not exist; pass an existing directory or file as path, or leave it out to search the working directory"
                )));
            }
            Ok(resolved)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_and_path_globs() {
        let root = Path::new("/r");
        let by_name = PathGlob::new("*.rs", "pattern").unwrap();
        assert!(by_name.is_match(root, Path::new("/r/a/b/c.rs")));
        let by_path = PathGlob::new("src/*.rs", "pattern").unwrap();
        assert!(by_path.is_match(root, Path::new("/r/src/c.rs")));
        assert!(!by_path.is_match(root, Path::new("/r/src/x/c.rs")));
        assert!(PathGlob::new("a[", "pattern").is_err());
        assert!(PathGlob::new("/etc/*", "pattern").is_err());
    }
}
