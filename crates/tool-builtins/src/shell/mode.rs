//! The sandbox's settings as values: where approved commands may write, whether they may use
//! the network, and the temporary directories `workspace-write` allows.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// Whether approved commands may use the network (`sandbox.network` in the agent's settings).
/// Commands that run without asking never may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPolicy {
    /// Approved commands may connect anywhere the user may.
    #[default]
    Allow,
    /// Approved commands run in a network namespace with nothing in it.
    Deny,
}

/// Temporary directories a workspace-write sandbox may write, besides `$TMPDIR`.
pub(crate) const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

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
