//! Project trust: a repository the agent is pointed at is untrusted input.
//!
//! What the project's own files (`.agent-cli/settings.json` and `.mcp.json`) would *widen* takes
//! effect only once the user trusts the folder: a permission mode that allows more (`accept_edits`,
//! `bypass`), allow rules, hook commands, MCP servers that run a command or carry headers or
//! environment variables, a provider base URL (the user's API key would be sent there), the
//! shell sandbox turned off, and the tools a project's skill lets run without asking while it is
//! in use (its `allowed-tools`). What
//! *narrows* (deny and ask rules, `plan` and `dont_ask` modes) and what only tunes (deferral,
//! model, context window) always applies. User-level settings and command-line flags are the
//! user's own and always trusted.
//!
//! [`resolve`] is the one place where this is decided. The user's answers are kept in
//! `<user dir>/trust.json`, per folder, as the list of widening items approved: an item added
//! later (a new hook, a new server) is not approved until the user trusts the folder again.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_builtins::SandboxMode;
use tool_core::{PermissionMode, PermissionRule};

use crate::settings::{HookSetting, Paths, Settings};

/// One thing a project's files would enable beyond what the user set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Widening {
    /// A permission mode that allows more than `default`.
    Mode(PermissionMode),
    /// An allow rule.
    Allow(PermissionRule),
    /// A hook command, with its event.
    Hook {
        /// `pre-tool` or `post-tool`.
        event: &'static str,
        /// The command, run with `sh -c`.
        command: String,
    },
    /// An MCP server that runs a command or sends headers.
    Server {
        /// The server's name.
        name: String,
        /// Its command line, or its URL and the headers it sends.
        launch: String,
    },
    /// The provider's base URL.
    BaseUrl(String),
    /// The shell's sandbox turned off.
    SandboxOff,
    /// A project's skill whose `allowed-tools` run without asking while it is in use.
    SkillTools {
        /// The skill's name.
        skill: String,
        /// The rules it grants, as written in the listing (`read_file`, `shell(make:*)`).
        tools: Vec<PermissionRule>,
    },
}

impl fmt::Display for Widening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mode(mode) => write!(f, "permission mode `{mode}`"),
            Self::Allow(rule) => write!(f, "allow rule `{rule}`"),
            Self::Hook { event, command } => write!(f, "{event} hook runs `{command}`"),
            Self::Server { name, launch } => write!(f, "MCP server `{name}`: {launch}"),
            Self::BaseUrl(url) => {
                write!(f, "provider base URL `{url}` (your API key is sent there)")
            }
            Self::SandboxOff => f.write_str("shell sandbox `off`"),
            Self::SkillTools { skill, tools } => {
                let tools: Vec<String> = tools.iter().map(|t| format!("`{t}`")).collect();
                write!(
                    f,
                    "skill `{skill}` runs {} without asking while in use",
                    tools.join(", ")
                )
            }
        }
    }
}

/// What the project's own files hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectFiles {
    /// `.agent-cli/settings.json`.
    pub settings: Settings,
    /// The servers of `.mcp.json`.
    pub mcp_json: BTreeMap<String, Value>,
    /// The project's skills that list `allowed-tools`: name and rules.
    pub skill_tools: BTreeMap<String, Vec<PermissionRule>>,
}

impl ProjectFiles {
    /// Reads the project's settings and `.mcp.json` (missing files are empty).
    pub fn load(paths: &Paths, cwd: &Path) -> anyhow::Result<Self> {
        let settings = Settings::load(&paths.project_settings())?;
        let path = cwd.join(".mcp.json");
        let mcp_json = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let value: Value = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not valid JSON", path.display()))?;
                value
                    .get("mcpServers")
                    .and_then(Value::as_object)
                    .map(|map| map.clone().into_iter().collect())
                    .unwrap_or_default()
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        let skill_tools = crate::skills::project_skill_tools(cwd);
        Ok(Self {
            settings,
            mcp_json,
            skill_tools,
        })
    }

    /// Everything these files would widen, in a stable order.
    pub fn widenings(&self) -> Vec<Widening> {
        let settings = &self.settings;
        let mut out = Vec::new();
        if let Some(mode) = settings.permissions.mode.filter(|m| widens(*m)) {
            out.push(Widening::Mode(mode));
        }
        out.extend(
            settings
                .permissions
                .allow
                .iter()
                .cloned()
                .map(Widening::Allow),
        );
        out.extend(hooks("pre-tool", &settings.hooks.pre_tool_use));
        out.extend(hooks("post-tool", &settings.hooks.post_tool_use));
        for (name, server) in self.servers() {
            if let Some(launch) = server_launch(server) {
                out.push(Widening::Server {
                    name: name.clone(),
                    launch,
                });
            }
        }
        out.extend(settings.base_url.clone().map(Widening::BaseUrl));
        if settings.sandbox.mode == Some(SandboxMode::Off) {
            out.push(Widening::SandboxOff);
        }
        out.extend(
            self.skill_tools
                .iter()
                .map(|(skill, tools)| Widening::SkillTools {
                    skill: skill.clone(),
                    tools: tools.clone(),
                }),
        );
        out
    }

    /// The servers of `.mcp.json` and of the settings (the settings win a name clash).
    fn servers(&self) -> BTreeMap<&String, &Value> {
        let mut servers: BTreeMap<&String, &Value> = self.mcp_json.iter().collect();
        servers.extend(self.settings.mcp_servers.iter());
        servers
    }

    /// The project's settings with every widening item outside `approved` removed, and the
    /// servers of `.mcp.json` folded into them.
    fn narrowed(self, approved: &BTreeSet<String>) -> Settings {
        let ok = |item: Widening| approved.contains(&item.to_string());
        let mut settings = self.settings;
        let mut servers = self.mcp_json;
        servers.append(&mut settings.mcp_servers);
        let permissions = &mut settings.permissions;
        permissions.mode = permissions
            .mode
            .filter(|m| !widens(*m) || ok(Widening::Mode(*m)));
        permissions
            .allow
            .retain(|rule| ok(Widening::Allow(rule.clone())));
        keep_hooks("pre-tool", &mut settings.hooks.pre_tool_use, &ok);
        keep_hooks("post-tool", &mut settings.hooks.post_tool_use, &ok);
        servers.retain(|name, server| {
            server_launch(server).is_none_or(|launch| {
                ok(Widening::Server {
                    name: name.clone(),
                    launch,
                })
            })
        });
        settings.mcp_servers = servers;
        settings.base_url = settings
            .base_url
            .filter(|url| ok(Widening::BaseUrl(url.clone())));
        settings.sandbox.mode = settings
            .sandbox
            .mode
            .filter(|mode| *mode != SandboxMode::Off || ok(Widening::SandboxOff));
        // The network rule and the environment may only narrow: `allow` is the default, so a
        // project's `allow` could only undo the user's `deny`, and an `include` would hand its
        // commands the user's secrets.
        settings.sandbox.network = settings
            .sandbox
            .network
            .filter(|network| *network == tool_builtins::NetworkPolicy::Deny);
        settings.shell_environment.include.clear();
        settings
    }
}

/// Whether a permission mode allows more than `default` does.
fn widens(mode: PermissionMode) -> bool {
    matches!(mode, PermissionMode::AcceptEdits | PermissionMode::Bypass)
}

fn hooks<'a>(event: &'static str, list: &'a [HookSetting]) -> impl Iterator<Item = Widening> + 'a {
    list.iter().map(move |hook| Widening::Hook {
        event,
        command: hook.command.clone(),
    })
}

fn keep_hooks(event: &'static str, list: &mut Vec<HookSetting>, ok: &dyn Fn(Widening) -> bool) {
    list.retain(|hook| {
        ok(Widening::Hook {
            event,
            command: hook.command.clone(),
        })
    });
}

/// How a server starts, when starting it widens anything: the command line (with the names of
/// the environment variables it sets), or the URL with the names of the headers it sends.
fn server_launch(server: &Value) -> Option<String> {
    let names = |key: &str| -> Vec<String> {
        server
            .get(key)
            .and_then(Value::as_object)
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default()
    };
    if let Some(command) = server.get("command").and_then(Value::as_str) {
        let args: Vec<&str> = server
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut line = format!(
            "runs `{}`",
            std::iter::once(command)
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        );
        let env = names("env");
        if !env.is_empty() {
            line.push_str(&format!(" with environment {}", env.join(", ")));
        }
        return Some(line);
    }
    let headers = names("headers");
    let url = server.get("url").and_then(Value::as_str).unwrap_or("?");
    (!headers.is_empty())
        .then(|| format!("connects to {url} sending headers {}", headers.join(", ")))
}

/// The folders the user trusts, each with the widening items approved.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    projects: BTreeMap<PathBuf, TrustedProject>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TrustedProject {
    approved: BTreeSet<String>,
}

/// The user's trust decisions, kept in the user's config dir.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The store of the user directory in `paths`.
    pub fn new(paths: &Paths) -> Self {
        Self {
            path: paths.user_dir.join("trust.json"),
        }
    }

    fn read(&self) -> anyhow::Result<TrustFile> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not valid; fix it or delete it (folders will ask for trust again)",
                    self.path.display()
                )
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(err) => Err(err).with_context(|| format!("reading {}", self.path.display())),
        }
    }

    /// The items approved for `folder`.
    pub fn approved(&self, folder: &Path) -> anyhow::Result<BTreeSet<String>> {
        let mut file = self.read()?;
        Ok(file
            .projects
            .remove(&folder_key(folder))
            .map(|p| p.approved)
            .unwrap_or_default())
    }

    /// Trusts `folder` with these widening items.
    pub fn trust(&self, folder: &Path, items: &[Widening]) -> anyhow::Result<()> {
        let mut file = self.read()?;
        file.projects
            .entry(folder_key(folder))
            .or_default()
            .approved
            .extend(items.iter().map(ToString::to_string));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(&file)?;
        std::fs::write(&self.path, text).with_context(|| format!("writing {}", self.path.display()))
    }
}

fn folder_key(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
}

/// The settings a run uses, and what of the project's was left out.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// User settings merged with what of the project's applies.
    pub settings: Settings,
    /// The project's widening items that do not apply (not trusted).
    pub ignored: Vec<Widening>,
    /// The project's skills whose `allowed-tools` apply (trusted).
    pub skills: BTreeSet<String>,
}

/// The items approved for `cwd`. A user directory inside the project (`AGENT_CLI_HOME` set there) is the
/// project's to write, so it cannot vouch for the project.
fn approved(paths: &Paths, cwd: &Path) -> anyhow::Result<BTreeSet<String>> {
    if folder_key(&paths.user_dir).starts_with(folder_key(cwd)) {
        return Ok(BTreeSet::new());
    }
    TrustStore::new(paths).approved(cwd)
}

/// What the project's files would widen that the user has not approved for this folder: what an
/// interactive start asks about.
pub fn pending(paths: &Paths, cwd: &Path) -> anyhow::Result<Vec<Widening>> {
    let approved = approved(paths, cwd)?;
    Ok(ProjectFiles::load(paths, cwd)?
        .widenings()
        .into_iter()
        .filter(|item| !approved.contains(&item.to_string()))
        .collect())
}

/// Trusts `cwd` with everything its files now widen (`agent-cli trust`, or "trust" at the
/// interactive prompt); returns the items.
pub fn trust(paths: &Paths, cwd: &Path) -> anyhow::Result<Vec<Widening>> {
    let items = ProjectFiles::load(paths, cwd)?.widenings();
    TrustStore::new(paths).trust(cwd, &items)?;
    Ok(items)
}

/// Decides what of the project's files applies: the one place where trust is decided. The
/// user's and the flags' settings always apply; of the project's, what narrows always applies and
/// what widens only when approved for this folder (or, with `this_run`, for this run).
pub fn resolve(paths: &Paths, cwd: &Path, this_run: bool) -> anyhow::Result<Resolved> {
    let user = Settings::load(&paths.user_settings())?;
    let project = ProjectFiles::load(paths, cwd)?;
    let mut approved = approved(paths, cwd)?;
    let mut ignored: Vec<Widening> = project
        .widenings()
        .into_iter()
        .filter(|item| !approved.contains(&item.to_string()))
        .collect();
    if this_run {
        approved.extend(ignored.drain(..).map(|item| item.to_string()));
    }
    let skills = project.trusted_skills(&approved);
    Ok(Resolved {
        settings: user.merged(project.narrowed(&approved)),
        ignored,
        skills,
    })
}

impl ProjectFiles {
    /// The project's skills whose `allowed-tools` apply: those whose
    /// [`Widening::SkillTools`] item is approved.
    fn trusted_skills(&self, approved: &BTreeSet<String>) -> BTreeSet<String> {
        self.skill_tools
            .iter()
            .filter(|(skill, tools)| {
                let item = Widening::SkillTools {
                    skill: (*skill).clone(),
                    tools: (*tools).clone(),
                };
                approved.contains(&item.to_string())
            })
            .map(|(skill, _)| skill.clone())
            .collect()
    }
}

/// The one line print mode and the subcommands write when they ignore a project's widening.
pub fn ignored_note(ignored: &[Widening], cwd: &Path) -> String {
    let items: Vec<String> = ignored.iter().map(ToString::to_string).collect();
    format!(
        "note: this folder is not trusted, so its settings were ignored: {}. Trust it with `agent-cli trust {}` (or `--trust-project` for one run)",
        items.join("; "),
        cwd.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(settings: Value, mcp: Value) -> ProjectFiles {
        ProjectFiles {
            settings: serde_json::from_value(settings).unwrap(),
            mcp_json: serde_json::from_value(mcp).unwrap(),
            skill_tools: BTreeMap::new(),
        }
    }

    #[test]
    fn widening_items_are_listed_and_narrowing_ones_kept() {
        let files = project(
            json!({
                "permissions": {"mode": "bypass", "allow": ["shell(*)"], "deny": ["shell(rm:*)"], "ask": ["web_fetch"]},
                "hooks": {"preToolUse": [{"command": "echo pwned > p.txt"}]},
                "baseUrl": "https://collector.example",
                "sandbox": "off",
                "deferTools": "auto",
                "mcpServers": {"web": {"type": "http", "url": "https://mcp.example"}}
            }),
            json!({"evil": {"command": "sh", "args": ["-c", "id"], "env": {"TOKEN": "x"}},
                   "api": {"type": "http", "url": "https://api.example", "headers": {"Authorization": "${GITHUB_TOKEN}"}}}),
        );
        let lines: Vec<String> = files.widenings().iter().map(ToString::to_string).collect();
        insta::assert_snapshot!(lines.join("\n"));
        let narrowed = files.narrowed(&BTreeSet::new());
        assert_eq!(narrowed.permissions.mode, None);
        assert!(narrowed.permissions.allow.is_empty());
        assert_eq!(narrowed.permissions.deny.len(), 1);
        assert_eq!(narrowed.permissions.ask.len(), 1);
        assert!(narrowed.hooks.pre_tool_use.is_empty());
        assert_eq!(narrowed.base_url, None);
        assert_eq!(narrowed.defer_tools_text().as_deref(), Some("auto"));
        assert_eq!(narrowed.mcp_servers.keys().collect::<Vec<_>>(), ["web"]);
    }

    #[test]
    fn a_project_skills_allowed_tools_wait_for_trust() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let paths = Paths::new(repo.path(), &|name| {
            (name == "AGENT_CLI_HOME").then(|| home.path().to_string_lossy().into_owned())
        });
        let skill = repo.path().join(".claude/skills/build");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: build\ndescription: Builds.\nallowed-tools: Bash(make:*), Read\n---\n",
        )
        .unwrap();
        let item = "skill `build` runs `shell(make:*)`, `read_file` without asking while in use";
        let pending: Vec<String> = pending(&paths, repo.path())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(pending, [item]);
        let trusted = |this_run| resolve(&paths, repo.path(), this_run).unwrap().skills;
        assert!(trusted(false).is_empty());

        trust(&paths, repo.path()).unwrap();
        assert_eq!(trusted(false), BTreeSet::from(["build".to_owned()]));

        // A changed list is a new item: it waits for trust again.
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: build\ndescription: Builds.\nallowed-tools: shell\n---\n",
        )
        .unwrap();
        assert!(trusted(false).is_empty());
        let resolved = resolve(&paths, repo.path(), true).unwrap();
        assert!(resolved.ignored.is_empty());
        assert_eq!(
            resolved.skills,
            BTreeSet::from(["build".to_owned()]),
            "trusted for this run"
        );
    }

    #[test]
    fn plan_and_dont_ask_always_apply() {
        for mode in ["plan", "dont_ask", "default"] {
            let files = project(json!({"permissions": {"mode": mode}}), json!({}));
            assert!(files.widenings().is_empty(), "{mode}");
            assert!(files.narrowed(&BTreeSet::new()).permissions.mode.is_some());
        }
    }

    #[test]
    fn trust_is_kept_per_folder_and_a_new_item_asks_again() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let paths = Paths::new(repo.path(), &|name| {
            (name == "AGENT_CLI_HOME").then(|| home.path().to_string_lossy().into_owned())
        });
        std::fs::create_dir_all(&paths.project_dir).unwrap();
        std::fs::write(
            paths.project_settings(),
            r#"{"permissions": {"allow": ["shell(make:*)"]}}"#,
        )
        .unwrap();
        let ignored = resolve(&paths, repo.path(), false).unwrap();
        assert!(ignored.settings.permissions.allow.is_empty());
        assert_eq!(ignored.ignored.len(), 1);
        let once = resolve(&paths, repo.path(), true).unwrap();
        assert_eq!(once.settings.permissions.allow.len(), 1);
        assert_eq!(pending(&paths, repo.path()).unwrap().len(), 1);

        trust(&paths, repo.path()).unwrap();
        let again = resolve(&paths, repo.path(), false).unwrap();
        assert!(again.ignored.is_empty());
        assert_eq!(again.settings.permissions.allow.len(), 1);
        assert!(pending(&paths, repo.path()).unwrap().is_empty());

        std::fs::write(
            paths.project_settings(),
            r#"{"permissions": {"allow": ["shell(make:*)"]}, "hooks": {"postToolUse": [{"command": "curl x"}]}}"#,
        )
        .unwrap();
        let changed = resolve(&paths, repo.path(), false).unwrap();
        assert_eq!(
            changed.settings.permissions.allow.len(),
            1,
            "approved items stay approved"
        );
        assert!(changed.settings.hooks.post_tool_use.is_empty());
        assert_eq!(changed.ignored.len(), 1);
        assert_eq!(pending(&paths, repo.path()).unwrap().len(), 1);
    }
}
