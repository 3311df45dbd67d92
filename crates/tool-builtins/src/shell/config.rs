//! How the shell tool runs commands: the shell program, timeouts, output caps and the sandbox.

use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::SandboxMode;

/// How the shell tool runs commands.
#[derive(Debug, Clone)]
pub struct ShellConfig {
    /// The shell program, run as `program -c command`; `None` uses `$SHELL`, else `/bin/sh`.
    pub program: Option<PathBuf>,
    /// The timeout when the call gives none.
    pub default_timeout: Duration,
    /// The longest timeout a call may ask for.
    pub max_timeout: Duration,
    /// Bytes kept of each of stdout and stderr (half from the start, half from the end); the
    /// rest is counted and dropped while it is read.
    pub max_output_bytes: usize,
    /// How long to wait for the output pipes to close after the shell exits, for background
    /// processes that still hold them; after that the process group is killed.
    pub pipe_grace: Duration,
    /// Where commands may write (enforced with Landlock where the kernel has it).
    pub sandbox: SandboxMode,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            program: None,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 30_000,
            pipe_grace: Duration::from_secs(2),
            sandbox: SandboxMode::default(),
        }
    }
}

impl ShellConfig {
    /// The same configuration with another sandbox mode.
    #[must_use]
    pub fn with_sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }
}
