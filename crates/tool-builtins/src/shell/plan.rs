//! The plan a sandboxed command starts with: what the launcher builds before it executes the
//! command, decided by the sandbox's policy and carried to the launcher as JSON.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What the launcher builds before it executes the command.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Where the command may read; `None` for everywhere.
    pub(crate) read: Option<Vec<PathBuf>>,
    /// What the command may execute (files or directories); `None` for whatever it may read.
    pub(crate) exec: Option<Vec<PathBuf>>,
    /// Where the command may write (besides the devices everyone may write).
    pub(crate) write: Vec<PathBuf>,
    /// Whether the command may use the network.
    pub(crate) network: bool,
    /// Paths mounted read-only over themselves (a repository's hooks and config).
    pub(crate) read_only: Vec<PathBuf>,
    /// Paths a read deny rule names, each covered by `cover` (files) or an empty directory.
    pub(crate) hidden: Vec<PathBuf>,
    /// The file mounted over each hidden file, and the empty directory over each hidden folder.
    pub(crate) cover: Option<(PathBuf, PathBuf)>,
    /// Whether the process may create namespaces here (unprivileged user namespaces).
    pub(crate) namespaces: bool,
}

impl Plan {
    pub(crate) fn needs_namespaces(&self) -> bool {
        !self.network || !self.read_only.is_empty() || !self.hidden.is_empty()
    }
}
