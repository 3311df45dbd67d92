//! How the shell tool runs commands: the shell program, timeouts, output caps and the sandbox.

use std::path::PathBuf;
use std::time::Duration;

use super::environment::ShellEnvironment;
use super::mode::{NetworkPolicy, SandboxMode, TEMP_DIRS};

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
    /// Where approved commands may write (enforced with Landlock where the kernel has it).
    pub sandbox: SandboxMode,
    /// Whether approved commands may use the network (enforced with a network namespace).
    pub network: NetworkPolicy,
    /// The sandbox launcher: an executable that calls [`crate::run_if_launcher`] first thing in
    /// `main` (the agent's own, or this crate's `tool-sandbox`). Without one, commands that
    /// would run without asking ask, and approved commands are confined by Landlock alone
    /// (writes), without the network rule, the read-only git files or hidden denied paths.
    pub launcher: Option<PathBuf>,
    /// The temporary directories a workspace-write sandbox lets commands write; `None` for
    /// `/tmp`, `/var/tmp`, `/dev/shm` and `$TMPDIR`.
    pub temp_dirs: Option<Vec<PathBuf>>,
    /// Which of the agent's environment variables commands see.
    pub environment: ShellEnvironment,
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
            network: NetworkPolicy::default(),
            launcher: None,
            temp_dirs: None,
            environment: ShellEnvironment::default(),
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

    /// The shell program commands run with.
    pub(crate) fn shell_program(&self) -> PathBuf {
        self.program
            .clone()
            .or_else(|| std::env::var_os("SHELL").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/bin/sh"))
    }

    /// The temporary directories a workspace-write sandbox lets commands write.
    pub(crate) fn temp_dirs(&self) -> Vec<PathBuf> {
        match &self.temp_dirs {
            Some(dirs) => dirs.clone(),
            None => TEMP_DIRS
                .iter()
                .map(PathBuf::from)
                .chain([std::env::temp_dir()])
                .collect(),
        }
    }
}
