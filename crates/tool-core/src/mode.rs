//! The session's permission mode.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// The session's permission mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Rules apply; anything not allowed is asked.
    #[default]
    Default,
    /// File edits are allowed without asking; everything else as in default.
    AcceptEdits,
    /// Read-only: any call that is not read-only is denied.
    Plan,
    /// Everything not denied by a rule (or by the tool itself) is allowed.
    Bypass,
    /// Never ask: anything not allowed is denied.
    DontAsk,
}

impl PermissionMode {
    /// Every mode, in the order they are documented.
    pub const ALL: [Self; 5] = [
        Self::Default,
        Self::AcceptEdits,
        Self::Plan,
        Self::Bypass,
        Self::DontAsk,
    ];

    /// The mode's name as written in settings and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept_edits",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
            Self::DontAsk => "dont_ask",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == wanted)
            .ok_or_else(|| CoreError::InvalidMode { mode: s.to_owned() })
    }
}
