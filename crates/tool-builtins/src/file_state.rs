//! The session's read state: which files the model has read, as they were when it read them.
//! write_file and edit_file consult it so that a file is never overwritten blind or after someone
//! else changed it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use tool_core::ToolError;

/// A file as the model last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileSnapshot {
    /// The modification time when it was read or written.
    pub(crate) mtime: Option<SystemTime>,
    /// The SHA-256 of its bytes.
    pub(crate) hash: [u8; 32],
}

impl FileSnapshot {
    /// The snapshot of `bytes` with modification time `mtime`.
    pub(crate) fn of(bytes: &[u8], mtime: Option<SystemTime>) -> Self {
        Self {
            mtime,
            hash: Sha256::digest(bytes).into(),
        }
    }
}

/// Read state shared by the file tools of one [`crate::Builtins`], keyed by session id and
/// resolved path, so that tools shared between sessions do not mix their sessions' reads.
#[derive(Debug, Default)]
pub(crate) struct FileState {
    files: Mutex<HashMap<(String, PathBuf), FileSnapshot>>,
}

impl FileState {
    /// Records that `session` has seen `path` with these contents.
    pub(crate) fn record(&self, session: &str, path: &Path, snapshot: FileSnapshot) {
        self.lock()
            .insert((session.to_owned(), path.to_path_buf()), snapshot);
    }

    /// What `session` last saw of `path`, if anything.
    fn get(&self, session: &str, path: &Path) -> Option<FileSnapshot> {
        self.lock()
            .get(&(session.to_owned(), path.to_path_buf()))
            .cloned()
    }

    /// Checks that `session` has read `path` and that the file on disk (`current` bytes, with
    /// modification time `mtime`) is unchanged since. The hash decides; a changed mtime with the
    /// same bytes (a `touch`) is not a change worth refusing a write for.
    pub(crate) fn check_fresh(
        &self,
        session: &str,
        path: &Path,
        shown: &str,
        current: &[u8],
        mtime: Option<SystemTime>,
    ) -> Result<(), ToolError> {
        let Some(seen) = self.get(session, path) else {
            return Err(ToolError::failed(format!(
                "{shown} exists but has not been read in this session; read it with read_file first, then retry"
            )));
        };
        if seen.mtime == mtime && seen.hash == FileSnapshot::of(current, mtime).hash {
            return Ok(());
        }
        if seen.hash == FileSnapshot::of(current, mtime).hash {
            // Only the mtime moved: refresh it so the next check is cheap to reason about.
            self.record(session, path, FileSnapshot::of(current, mtime));
            return Ok(());
        }
        Err(ToolError::failed(format!(
            "{shown} has changed on disk since it was last read (by the user, a formatter or another tool); read it again with read_file, then redo the change against its current contents"
        )))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, PathBuf), FileSnapshot>> {
        // Entries are inserted whole, so a poisoned map is still consistent.
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_changed_and_touched_files() {
        let state = FileState::default();
        let path = Path::new("/x/a.txt");
        assert!(state.check_fresh("s", path, "a.txt", b"one", None).is_err());
        state.record("s", path, FileSnapshot::of(b"one", None));
        assert!(state.check_fresh("s", path, "a.txt", b"one", None).is_ok());
        assert!(
            state
                .check_fresh("other", path, "a.txt", b"one", None)
                .is_err()
        );
        let changed = state
            .check_fresh("s", path, "a.txt", b"two", None)
            .unwrap_err();
        assert!(changed.to_string().contains("changed on disk"));
        let later = Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(5));
        assert!(state.check_fresh("s", path, "a.txt", b"one", later).is_ok());
    }
}
