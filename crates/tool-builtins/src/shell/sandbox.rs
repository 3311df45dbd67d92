//! The shell's sandbox: Landlock rules that confine where a command and everything it starts
//! may write, and a report of what the machine supports.
//!
//! Landlock restricts the thread that asks for it and every process that thread starts
//! afterwards. The workspace allows no `unsafe` code, so there is no `pre_exec` hook to restrict
//! the child between fork and exec; instead each sandboxed command is spawned from a short-lived
//! thread of its own that first restricts itself and then spawns. The restriction ends with that
//! thread: no other thread of the process is affected.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::confine::{self, Landlock};

/// Where the shell's commands may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands may read everything and write nothing but devices such as `/dev/null`.
    ReadOnly,
    /// Commands may write only under the session's roots, the temporary directories (`/tmp`,
    /// `/var/tmp`, `/dev/shm`, `$TMPDIR`) and devices such as `/dev/null` and `/dev/tty`.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands may write wherever the user may.
    Off,
}

impl SandboxMode {
    /// The mode's name as written in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Off => "off",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox mode name that is not one of `read-only`, `workspace-write` or `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox mode {0:?}: use read-only, workspace-write or off")]
pub struct ParseSandboxModeError(pub String);

impl FromStr for SandboxMode {
    type Err = ParseSandboxModeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "off" => Ok(Self::Off),
            other => Err(ParseSandboxModeError(other.to_owned())),
        }
    }
}

/// What this machine offers for sandboxing the shell, for a `doctor` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// Landlock, which the shell's sandbox needs.
    pub landlock: Landlock,
    /// Whether unprivileged user namespaces are allowed, when `/proc` tells.
    pub user_namespaces: Option<bool>,
}

impl SandboxSupport {
    /// Whether the shell's sandbox can be enforced here.
    pub fn enforceable(&self) -> bool {
        matches!(self.landlock, Landlock::Available { .. })
    }
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.landlock {
            Landlock::Available { abi } => write!(
                f,
                "landlock: ABI {abi} (the shell sandbox is enforced)"
            )?,
            Landlock::NotEnabled => f.write_str(
                "landlock: built into the kernel but not enabled (add \"landlock\" to the lsm= boot parameter); the shell runs without a sandbox",
            )?,
            Landlock::NotImplemented => f.write_str(
                "landlock: not in this kernel (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK); the shell runs without a sandbox",
            )?,
            Landlock::NotLinux => {
                f.write_str("landlock: Linux only; the shell runs without a sandbox")?;
            }
        }
        let namespaces = match self.user_namespaces {
            Some(true) => "available",
            Some(false) => "disabled",
            None => "unknown",
        };
        write!(f, "\nuser namespaces: {namespaces}")
    }
}

/// What this machine supports, probed once per process.
pub fn sandbox_support() -> SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    *SUPPORT.get_or_init(|| SandboxSupport {
        landlock: confine::probe(),
        user_namespaces: user_namespaces(),
    })
}

/// A warning to show the user once when `mode` asks for a sandbox this machine cannot enforce;
/// `None` when the sandbox works or is off. Commands then run unconfined, and every command
/// that is not read-only still asks for permission.
pub fn sandbox_warning(mode: SandboxMode) -> Option<String> {
    let support = sandbox_support();
    if mode == SandboxMode::Off || support.enforceable() {
        return None;
    }
    let why = support.to_string();
    let why = why.lines().next().unwrap_or_default();
    Some(format!(
        "the shell sandbox ({mode}) cannot be enforced on this machine ({why}); commands run unconfined and still ask for permission unless they only read"
    ))
}

/// Reads the kernel's switches for unprivileged user namespaces.
fn user_namespaces() -> Option<bool> {
    let read =
        |path: &str| -> Option<i64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let max = read("/proc/sys/user/max_user_namespaces")?;
    let debian_switch = read("/proc/sys/kernel/unprivileged_userns_clone").unwrap_or(1);
    let apparmor = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").unwrap_or(0);
    Some(max > 0 && debian_switch != 0 && apparmor == 0)
}

/// The sandbox for one command: its mode and the directories it may write.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) mode: SandboxMode,
    pub(crate) writable: Vec<PathBuf>,
}

impl Policy {
    /// The policy for `mode` with the session's `roots`; `None` when the mode is off or the
    /// machine cannot enforce it.
    pub(crate) fn new(mode: SandboxMode, roots: &[PathBuf]) -> Option<Self> {
        if mode == SandboxMode::Off || !sandbox_support().enforceable() {
            return None;
        }
        let mut writable: Vec<PathBuf> = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            // The roots first: they are what the model should be pointed at.
            let temp = TEMP_DIRS.iter().map(PathBuf::from);
            for dir in roots
                .iter()
                .cloned()
                .chain(temp)
                .chain([std::env::temp_dir()])
            {
                if !writable.contains(&dir) {
                    writable.push(dir);
                }
            }
        }
        Some(Self { mode, writable })
    }

    /// The writable directories, for messages.
    pub(crate) fn describe_writable(&self) -> String {
        let dirs: Vec<String> = self
            .writable
            .iter()
            .map(|dir| dir.display().to_string())
            .collect();
        dirs.join(", ")
    }

    /// What to tell the model when a sandboxed command failed on a refused write.
    pub(crate) fn refusal_note(&self) -> String {
        match self.mode {
            SandboxMode::ReadOnly => "Note: the shell runs in a read-only sandbox, which refuses every write to a file; a \"Permission denied\" above most likely means the command tried to write. Use the file tools to change files, or ask the user to run the command outside the sandbox.".to_owned(),
            _ => format!(
                "Note: the sandbox (workspace-write) refuses writes outside the session's roots and temporary directories ({}); a \"Permission denied\" above most likely means the command wrote elsewhere. Write inside those directories instead, or ask the user to run the command outside the sandbox.",
                self.describe_writable()
            ),
        }
    }
}

/// Temporary directories a workspace-write sandbox may write, besides `$TMPDIR`.
const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Spawns `command` confined by `policy`, from a thread of its own (see the module doc).
pub(crate) async fn spawn(
    mut command: tokio::process::Command,
    policy: Policy,
) -> Result<tokio::process::Child, SpawnError> {
    let runtime = tokio::runtime::Handle::current();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("shell-sandbox".to_owned())
        .spawn(move || {
            let result = confine::restrict_current_thread(&policy.writable)
                .map_err(SpawnError::Sandbox)
                .and_then(|()| {
                    let _runtime = runtime.enter();
                    command.spawn().map_err(SpawnError::Spawn)
                });
            // The call may have been cancelled meanwhile; the child then dies with the result.
            let _ = sender.send(result);
        })
        .map_err(SpawnError::Spawn)?;
    receiver
        .await
        .map_err(|_| SpawnError::Sandbox("the sandbox thread stopped unexpectedly".to_owned()))?
}

/// Why a sandboxed command could not start.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The sandbox could not be set up; nothing ran.
    Sandbox(String),
    /// The program could not be started.
    Spawn(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_serialise_in_kebab_case() {
        for mode in [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::Off,
        ] {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
            assert_eq!(
                serde_json::to_value(mode).ok(),
                Some(serde_json::Value::String(mode.as_str().to_owned()))
            );
        }
        assert!("sometimes".parse::<SandboxMode>().is_err());
    }
}
