//! What the file tools share: where they may work, the file a call works on, and how they run
//! blocking file-system work.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tool_core::{PermissionCheck, ToolContext, ToolError};

use crate::atomic::write_atomic;
use crate::denies::ReadDenies;
use crate::file_state::{FileSnapshot, FileState};
use crate::roots::AllowedRoots;
use crate::walk::Denied;
use crate::walk::search_root;

/// The working directory (the session's unless configured) and the extra allowed roots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Workspace {
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) extra_roots: Vec<PathBuf>,
    /// What read deny rules keep from every tool that reads.
    pub(crate) denies: Arc<ReadDenies>,
}

impl Workspace {
    /// The allowed roots for a call in this context.
    pub(crate) fn roots(&self, ctx: &ToolContext) -> AllowedRoots {
        let cwd = self
            .cwd
            .clone()
            .unwrap_or_else(|| ctx.session().cwd().to_path_buf());
        AllowedRoots::new(&cwd, &self.extra_roots)
    }

    /// The roots a call in this context may read: the allowed roots, and the session's saved
    /// tool results (oversized outputs whose previews point the model at them), read-only.
    pub(crate) fn read_roots(&self, ctx: &ToolContext) -> AllowedRoots {
        self.roots(ctx)
            .with_root(&ctx.session().dir().join(tool_core::RESULTS_DIR))
    }

    /// Allows a read of `path` when it lies inside the roots a call may read and no read deny
    /// rule names it.
    pub(crate) fn check_read(&self, ctx: &ToolContext, path: &str) -> PermissionCheck {
        let roots = self.read_roots(ctx);
        match roots.resolve(path) {
            Ok(resolved) if self.denies.denies(&resolved, roots.cwd()) => PermissionCheck::Deny {
                reason: format!(
                    "{path} is kept from the tools by a read deny rule; do not try to read it another way"
                ),
            },
            checked => allow_unless_refused(checked, PermissionCheck::Allow),
        }
    }

    /// What a walk under `roots` must leave out.
    pub(crate) fn denied(&self, roots: &AllowedRoots) -> Denied {
        Denied {
            denies: Arc::clone(&self.denies),
            cwd: roots.cwd().to_path_buf(),
        }
    }

    /// `allowed` when `path` lies inside the allowed roots; a denial that says why otherwise.
    pub(crate) fn check_path(
        &self,
        ctx: &ToolContext,
        path: &str,
        allowed: PermissionCheck,
    ) -> PermissionCheck {
        allow_unless_refused(self.roots(ctx).resolve(path), allowed)
    }

    /// Allows a search of `path` (the working directory when `None`) when it lies inside the
    /// allowed roots and exists.
    pub(crate) fn check_search(&self, ctx: &ToolContext, path: Option<&str>) -> PermissionCheck {
        let roots = self.read_roots(ctx);
        match search_root(&roots, path) {
            Ok(root) if self.denies.denies(&root, roots.cwd()) => PermissionCheck::Deny {
                reason: format!(
                    "{} is kept from the tools by a read deny rule; search elsewhere",
                    path.unwrap_or(".")
                ),
            },
            root => allow_unless_refused(root, PermissionCheck::Allow),
        }
    }
}

fn allow_unless_refused<T>(
    checked: Result<T, ToolError>,
    allowed: PermissionCheck,
) -> PermissionCheck {
    match checked {
        Ok(_) => allowed,
        Err(err) => PermissionCheck::Deny {
            reason: err.to_string(),
        },
    }
}

/// The file one call of read_file, write_file or edit_file works on: its resolved path, the
/// path as the model sees it, and the session's read state that guards writes to it. It owns
/// what it holds, so blocking work can take it along.
pub(crate) struct FileTarget {
    /// The resolved path, inside the allowed roots.
    pub(crate) path: PathBuf,
    /// The path as tools show it to the model.
    pub(crate) shown: String,
    files: Arc<FileState>,
    session: String,
}

impl FileTarget {
    /// Resolves `path` within the allowed roots of a call in `ctx`.
    pub(crate) fn resolve(
        workspace: &Workspace,
        files: &Arc<FileState>,
        ctx: &ToolContext,
        path: &str,
    ) -> Result<Self, ToolError> {
        Self::resolve_in(workspace.roots(ctx), files, ctx, path)
    }

    /// Resolves `path` within the roots a call in `ctx` may read.
    pub(crate) fn resolve_for_reading(
        workspace: &Workspace,
        files: &Arc<FileState>,
        ctx: &ToolContext,
        path: &str,
    ) -> Result<Self, ToolError> {
        Self::resolve_in(workspace.read_roots(ctx), files, ctx, path)
    }

    fn resolve_in(
        roots: AllowedRoots,
        files: &Arc<FileState>,
        ctx: &ToolContext,
        path: &str,
    ) -> Result<Self, ToolError> {
        let path = roots.resolve(path)?;
        Ok(Self {
            shown: roots.display(&path),
            path,
            files: Arc::clone(files),
            session: ctx.session().id().to_owned(),
        })
    }

    /// Records that the session has seen the file with these contents.
    pub(crate) fn record(&self, bytes: &[u8], mtime: Option<SystemTime>) {
        self.files
            .record(&self.session, &self.path, FileSnapshot::of(bytes, mtime));
    }

    /// For an existing file: checks it is a file the session has read and that is unchanged
    /// since, and returns its bytes. For a missing file: `None`.
    pub(crate) fn read_guarded(&self) -> Result<Option<Vec<u8>>, ToolError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(self.io_error("inspect", &err)),
        };
        if meta.is_dir() {
            return Err(ToolError::failed(format!(
                "{} is a directory; give the path of a file inside it",
                self.shown
            )));
        }
        let current = std::fs::read(&self.path).map_err(|e| self.io_error("read", &e))?;
        self.files.check_fresh(
            &self.session,
            &self.path,
            &self.shown,
            &current,
            meta.modified().ok(),
        )?;
        Ok(Some(current))
    }

    /// Creates the directories a new file goes in.
    pub(crate) fn create_parents(&self) -> Result<(), ToolError> {
        match self.path.parent() {
            Some(parent) => std::fs::create_dir_all(parent)
                .map_err(|e| self.io_error("create the directories of", &e)),
            None => Ok(()),
        }
    }

    /// Writes atomically and records the new contents as seen, so a second edit needs no
    /// re-read.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), ToolError> {
        write_atomic(&self.path, bytes).map_err(|e| self.io_error("write", &e))?;
        let mtime = std::fs::metadata(&self.path)
            .ok()
            .and_then(|m| m.modified().ok());
        self.record(bytes, mtime);
        Ok(())
    }

    /// Maps an I/O error on this file to a message the model can act on.
    pub(crate) fn io_error(&self, action: &str, err: &std::io::Error) -> ToolError {
        use std::io::ErrorKind;
        let hint = match err.kind() {
            ErrorKind::NotFound => "check the path with glob",
            ErrorKind::PermissionDenied => "the operating system refused access; pick another file",
            ErrorKind::IsADirectory => "it is a directory; list it with glob",
            _ => "check the path and try again",
        };
        ToolError::failed(format!("could not {action} {}: {err}; {hint}", self.shown))
    }
}

/// A lexically normalised form of the path as given, for permission rules: `src/../Cargo.toml`
/// must not match a rule for `src/**`.
pub(crate) fn rule_path(path: &str) -> PathBuf {
    crate::roots::normalise_lexically(Path::new(path))
}
