//! Blocking file-system work, run off the async threads.

use tool_core::ToolError;

/// Runs blocking file-system work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::failed(format!("the operation stopped unexpectedly: {err}")))?
}
