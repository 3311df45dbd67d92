//! What the file tools share: where they may work, and how they run blocking file-system work.

use std::path::PathBuf;

use tool_core::{ToolContext, ToolError};

use crate::roots::AllowedRoots;

/// The working directory (the session's unless configured) and the extra allowed roots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Workspace {
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) extra_roots: Vec<PathBuf>,
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
}

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::failed(format!("the operation stopped unexpectedly: {err}")))?
}

/// A lexically normalised form of the path as given, for permission rules: `src/../Cargo.toml`
/// must not match a rule for `src/**`.
pub(crate) fn rule_path(path: &str) -> PathBuf {
    crate::roots::normalise_lexically(std::path::Path::new(path))
}

/// Maps an I/O error on `shown` to a message the model can act on.
pub(crate) fn io_error(action: &str, shown: &str, err: &std::io::Error) -> ToolError {
    use std::io::ErrorKind;
    let hint = match err.kind() {
        ErrorKind::NotFound => "check the path with glob",
        ErrorKind::PermissionDenied => "the operating system refused access; pick another file",
        ErrorKind::IsADirectory => "it is a directory; list it with glob",
        _ => "check the path and try again",
    };
    ToolError::failed(format!("could not {action} {shown}: {err}; {hint}"))
}
