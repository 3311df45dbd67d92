//! Settings: a user file and a project file (JSON), merged, then overridden by flags.
//!
//! ```json
//! {
//!   "permissions": {"allow": ["shell(git status:*)"], "ask": [], "deny": ["mcp__slack"], "mode": "default"},
//!   "deferTools": "auto:10",
//!   "activation": "native", "nativeToolSearch": false,
//!   "provider": "anthropic", "model": "claude-sonnet-4-5", "baseUrl": "https://api.anthropic.com",
//!   "contextWindow": 200000, "compactThreshold": 0.85, "maxTokens": 8192, "thinking": "off",
//!   "prices": {"my-local-model": {"input": 0, "output": 0}},
//!   "hooks": {"preToolUse": [{"matcher": "shell", "command": "./check.sh"}], "postToolUse": []},
//!   "mcpServers": {"memory": {"command": "npx", "args": ["@modelcontextprotocol/server-memory"]}},
//!   "sandbox": {"mode": "workspace-write", "network": "allow"},
//!   "shellEnvironment": {"include": ["GITHUB_TOKEN"], "exclude": ["AWS_*"]}
//! }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_builtins::{NetworkPolicy, SandboxMode, ShellEnvironment};
use tool_core::{PermissionMode, PermissionRules};

/// The permission part of the settings: the rules (tool-core's [`PermissionRules`], whose lists
/// it reads through) and the starting mode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionSettings {
    /// The allow, ask and deny lists.
    #[serde(flatten)]
    pub rules: PermissionRules,
    /// The starting permission mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PermissionMode>,
}

impl std::ops::Deref for PermissionSettings {
    type Target = PermissionRules;

    fn deref(&self) -> &PermissionRules {
        &self.rules
    }
}

impl std::ops::DerefMut for PermissionSettings {
    fn deref_mut(&mut self) -> &mut PermissionRules {
        &mut self.rules
    }
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSetting {
    /// Tool names it applies to: `|`-separated globs (all tools when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The command, run with `sh -c`.
    pub command: String,
    /// Seconds it may take (60 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// Hook commands by event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookSettings {
    /// Run before a call's permission check.
    #[serde(default)]
    pub pre_tool_use: Vec<HookSetting>,
    /// Run after a call.
    #[serde(default)]
    pub post_tool_use: Vec<HookSetting>,
}

/// Everything a settings file may hold; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Permission rules and mode.
    #[serde(default)]
    pub permissions: PermissionSettings,
    /// Deferral mode: `true`, `false`, `auto` or `auto:N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_tools: Option<Value>,
    /// Activation strategy: `native`, `proxy` or `inline` (native where the provider loads
    /// deferred tools itself, else proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<String>,
    /// The OpenAI-compatible chat completions server loads deferred tools natively
    /// (`defer_loading` function tools and `tool_reference` parts), so `native` is the default
    /// activation with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_tool_search: Option<bool>,
    /// `anthropic` or `openai`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model's context window in tokens (known models' windows are built in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<usize>,
    /// The share of the context window past which the conversation is compacted (0.85).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_threshold: Option<f64>,
    /// The most output tokens per model request (default: the model's own limit from the table of
    /// known models, else 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Extended thinking: `"off"` (the default), `"adaptive"`, or a budget in tokens (1024 or
    /// more), on top of `maxTokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<crate::provider::Thinking>,
    /// Prices in dollars per million tokens by model name or name prefix, over the built-in table
    /// (the user's own: a project's are ignored, see [`crate::trust::resolve`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, crate::usage::Price>,
    /// Hook commands.
    #[serde(default)]
    pub hooks: HookSettings,
    /// MCP servers, in the `.mcp.json` format.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, Value>,
    /// The sandbox of approved shell commands: a mode (`read-only`, `workspace-write`, the
    /// default, or `off`), or `{"mode": ..., "network": "allow" | "deny"}`.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// Which environment variables shell commands see besides the default (names that look
    /// like secrets are removed).
    #[serde(default, skip_serializing_if = "is_default_environment")]
    pub shell_environment: ShellEnvironment,
    /// How `tool_search` ranks the deferred tools.
    #[serde(default, skip_serializing_if = "SearchSettings::is_empty")]
    pub search: SearchSettings,
}

/// The `search` setting (the user's own: a project's is ignored, see [`crate::trust::resolve`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchSettings {
    /// A sentence-transformers model folder (`model.safetensors`, `config.json`,
    /// `tokenizer.json`): `tool_search` then ranks by keywords and by meaning together. Needs
    /// a build with the `embeddings` feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<PathBuf>,
}

impl SearchSettings {
    fn is_empty(&self) -> bool {
        self.embeddings.is_none()
    }
}

fn is_default_environment(environment: &ShellEnvironment) -> bool {
    *environment == ShellEnvironment::default()
}

/// The `sandbox` setting: a mode, or a table with the mode and the network rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SandboxText", deny_unknown_fields)]
pub struct SandboxSettings {
    /// Where approved commands may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// Whether approved commands may use the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicy>,
}

impl SandboxSettings {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `self` overridden by what `other` sets.
    #[must_use]
    pub fn merged(self, other: Self) -> Self {
        Self {
            mode: other.mode.or(self.mode),
            network: other.network.or(self.network),
        }
    }
}

/// How the `sandbox` setting may be written.
#[derive(Deserialize)]
#[serde(untagged)]
enum SandboxText {
    Mode(SandboxMode),
    Table {
        #[serde(default)]
        mode: Option<SandboxMode>,
        #[serde(default)]
        network: Option<NetworkPolicy>,
    },
}

impl From<SandboxText> for SandboxSettings {
    fn from(text: SandboxText) -> Self {
        match text {
            SandboxText::Mode(mode) => Self {
                mode: Some(mode),
                network: None,
            },
            SandboxText::Table { mode, network } => Self { mode, network },
        }
    }
}

impl Settings {
    /// Reads a settings file; a missing file is empty settings, a malformed one an error that
    /// names the file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not valid settings JSON; fix it or move it away (see `agent-cli --help` for the format)",
                path.display()
            )
        })
    }

    /// `self` overridden by `other`: scalars from `other` win, rule lists and hooks are combined,
    /// MCP servers are merged by name (`other` wins).
    #[must_use]
    pub fn merged(mut self, other: Settings) -> Self {
        self.permissions.rules.extend(&other.permissions.rules);
        self.permissions.mode = other.permissions.mode.or(self.permissions.mode);
        self.defer_tools = other.defer_tools.or(self.defer_tools);
        self.activation = other.activation.or(self.activation);
        self.native_tool_search = other.native_tool_search.or(self.native_tool_search);
        self.provider = other.provider.or(self.provider);
        self.model = other.model.or(self.model);
        self.base_url = other.base_url.or(self.base_url);
        self.context_window = other.context_window.or(self.context_window);
        self.compact_threshold = other.compact_threshold.or(self.compact_threshold);
        self.max_tokens = other.max_tokens.or(self.max_tokens);
        self.thinking = other.thinking.or(self.thinking);
        self.prices.extend(other.prices);
        self.hooks.pre_tool_use.extend(other.hooks.pre_tool_use);
        self.hooks.post_tool_use.extend(other.hooks.post_tool_use);
        self.mcp_servers.extend(other.mcp_servers);
        self.sandbox = self.sandbox.merged(other.sandbox);
        if other.search.embeddings.is_some() {
            self.search.embeddings = other.search.embeddings;
        }
        self.shell_environment
            .include
            .extend(other.shell_environment.include);
        self.shell_environment
            .exclude
            .extend(other.shell_environment.exclude);
        self
    }

    /// The permission rules.
    pub fn rules(&self) -> PermissionRules {
        self.permissions.rules.clone()
    }

    /// The deferral setting as text (`true`, `false`, `auto`, `auto:N`), if set.
    pub fn defer_tools_text(&self) -> Option<String> {
        self.defer_tools.as_ref().map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// Where settings and sessions live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The user's directory: `$AGENT_CLI_HOME`, else `$XDG_CONFIG_HOME/agent-cli`, else
    /// `~/.config/agent-cli` (the home directory from `$HOME`, else the system's account
    /// database), else a folder of this process under the temporary directory. Never inside the
    /// project: a repository must not be able to write the user's settings, skills or agents.
    pub user_dir: PathBuf,
    /// The project's directory: `<cwd>/.agent-cli`.
    pub project_dir: PathBuf,
}

impl Paths {
    /// The paths for a working directory, from the environment.
    pub fn new(cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let user_dir = env("AGENT_CLI_HOME")
            .map(PathBuf::from)
            .or_else(|| env("XDG_CONFIG_HOME").map(|d| PathBuf::from(d).join("agent-cli")))
            .or_else(|| {
                env("HOME")
                    .map(PathBuf::from)
                    .or_else(std::env::home_dir)
                    .map(|home| home.join(".config").join("agent-cli"))
            })
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("agent-cli-{}", std::process::id()))
            });
        Self {
            user_dir,
            project_dir: cwd.join(".agent-cli"),
        }
    }

    /// The user settings file.
    pub fn user_settings(&self) -> PathBuf {
        self.user_dir.join("settings.json")
    }

    /// The project settings file.
    pub fn project_settings(&self) -> PathBuf {
        self.project_dir.join("settings.json")
    }

    /// Where sessions are kept.
    pub fn sessions_dir(&self) -> PathBuf {
        self.user_dir.join("sessions")
    }

    /// Where the tools' embeddings are kept between sessions, by content and model.
    pub fn embeddings_cache(&self) -> PathBuf {
        self.user_dir.join("embeddings")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_permission_list_is_an_error_not_a_missing_rule() {
        let text = r#"{"permissions": {"dney": ["read_file(.env)"]}}"#;
        let err = serde_json::from_str::<Settings>(text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("dney"), "{err}");
        let ok: Settings = serde_json::from_str(
            r#"{"permissions": {"deny": ["read_file(.env)"], "mode": "plan"}}"#,
        )
        .unwrap();
        assert_eq!(ok.rules().deny.len(), 1);
        assert_eq!(ok.permissions.mode, Some(PermissionMode::Plan));
    }

    #[test]
    fn project_settings_override_user_settings() {
        let user: Settings = serde_json::from_value(serde_json::json!({
            "permissions": {"allow": ["read_file"], "mode": "plan"},
            "model": "a", "provider": "openai", "deferTools": "auto",
            "mcpServers": {"x": {"command": "one"}, "y": {"command": "two"}}
        }))
        .unwrap();
        let project: Settings = serde_json::from_value(serde_json::json!({
            "permissions": {"deny": ["shell"]},
            "model": "b", "deferTools": false,
            "mcpServers": {"y": {"command": "three"}}
        }))
        .unwrap();
        let merged = user.merged(project);
        assert_eq!(merged.model.as_deref(), Some("b"));
        assert_eq!(merged.provider.as_deref(), Some("openai"));
        assert_eq!(merged.permissions.mode, Some(PermissionMode::Plan));
        assert_eq!(merged.rules().allow.len(), 1);
        assert_eq!(merged.rules().deny.len(), 1);
        assert_eq!(merged.defer_tools_text().as_deref(), Some("false"));
        assert_eq!(merged.mcp_servers["y"]["command"], "three");
        assert_eq!(merged.mcp_servers["x"]["command"], "one");
    }

    #[test]
    fn bad_settings_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"permissions": {"allow": ["shell("]}}"#).unwrap();
        let err = format!("{:#}", Settings::load(&path).unwrap_err());
        assert!(
            err.contains("settings.json is not valid settings JSON"),
            "{err}"
        );
        assert!(err.contains("invalid permission rule"), "{err}");
        std::fs::write(&path, r#"{"permisions": {}}"#).unwrap();
        let err = format!("{:#}", Settings::load(&path).unwrap_err());
        assert!(err.contains("unknown field `permisions`"), "{err}");
    }

    #[test]
    fn the_user_directory_is_never_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::new(dir.path(), &|_| None);
        assert!(!paths.user_dir.starts_with(dir.path()), "{paths:?}");
        let home = Paths::new(dir.path(), &|name| {
            (name == "HOME").then(|| "/h".to_owned())
        });
        assert_eq!(home.user_dir, Path::new("/h/.config/agent-cli"));
    }
}
