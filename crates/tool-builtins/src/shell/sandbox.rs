//! The shell's sandbox: Landlock rules that confine where a command and everything it starts
//! may write, and a report of what the machine supports.
//!
//! Landlock restricts the thread that asks for it and every process that thread starts
//! afterwards. The workspace allows no `unsafe` code, so there is no `pre_exec` hook to restrict
//! the child between fork and exec; instead each sandboxed command is spawned from a short-lived
//! thread of its own that first restricts itself and then spawns. The restriction ends with that
//! thread: no other thread of the process is affected.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::config::ShellConfig;
use super::confine::{self, Landlock};
use super::launcher::LAUNCH_FLAG;
use super::mode::{NetworkPolicy, SandboxMode};
use super::plan::Plan;

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

/// One thing the sandbox enforces, as `agent-cli doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    /// What is enforced.
    pub name: &'static str,
    /// Whether it is enforced here.
    pub on: bool,
    /// How, or why not.
    pub detail: String,
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.on { "on" } else { "off" };
        write!(f, "{}: {state} ({})", self.name, self.detail)
    }
}

/// What the shell's sandbox enforces with this configuration on this machine: commands that
/// run without asking, the file system and the network of approved commands, read deny rules
/// and the environment.
pub fn enforcement(config: &ShellConfig, denies: &crate::ReadDenies) -> Vec<Enforcement> {
    let support = sandbox_support();
    let namespaces = config.launcher.is_some() && namespaces_available();
    let unasked = unasked_launcher(config);
    let mut out = vec![Enforcement {
        name: "commands that run without asking",
        on: unasked.is_ok(),
        detail: match &unasked {
            Ok(_) => "a read-only sandbox: they read only the roots and the system's folders, write nothing, use no network and start only the known read-only programs; git starts nothing from its configuration".to_owned(),
            Err(why) => format!("none is allowed without asking: {why}"),
        },
    }];
    let mode = config.sandbox;
    let filesystem = match mode {
        SandboxMode::Off => (false, "the sandbox is off (`sandbox: off`)".to_owned()),
        _ if !support.enforceable() => (false, format!("{mode} cannot be enforced: {}", support.to_string().lines().next().unwrap_or_default())),
        SandboxMode::ReadOnly => (true, "read-only: approved commands write nothing (Landlock)".to_owned()),
        SandboxMode::WorkspaceWrite if namespaces => (true, "workspace-write: approved commands write only in the roots and temporary directories, and not the repository's .git/config or .git/hooks (Landlock, a mount namespace)".to_owned()),
        SandboxMode::WorkspaceWrite => (true, "workspace-write: approved commands write only in the roots and temporary directories (Landlock); the repository's .git/config and .git/hooks stay writable, for want of user namespaces".to_owned()),
    };
    out.push(Enforcement {
        name: "file system",
        on: filesystem.0,
        detail: filesystem.1,
    });
    let network = match config.network {
        NetworkPolicy::Allow => (false, "approved commands may connect (`sandbox.network: allow`, the default); commands that run without asking never may".to_owned()),
        NetworkPolicy::Deny if mode == SandboxMode::Off || !support.enforceable() => (false, "`sandbox.network: deny` cannot be enforced without the sandbox".to_owned()),
        NetworkPolicy::Deny if namespaces => (true, "approved commands run in a network namespace with nothing in it".to_owned()),
        NetworkPolicy::Deny => (true, "partly: Landlock refuses TCP where the kernel has ABI 4, for want of user namespaces; UDP stays open".to_owned()),
    };
    out.push(Enforcement {
        name: "network",
        on: network.0,
        detail: network.1,
    });
    let hidden =
        unasked.is_ok() || (namespaces && mode != SandboxMode::Off && support.enforceable());
    out.push(Enforcement {
        name: "read deny rules",
        on: !denies.is_empty(),
        detail: if denies.is_empty() {
            "no `read_file(...)` deny rule is set".to_owned()
        } else if hidden {
            "kept from read_file, grep, glob and @path, and hidden from shell commands by the sandbox (a mount namespace)".to_owned()
        } else {
            "kept from read_file, grep, glob and @path; the sandbox cannot hide them here, so a shell command that names one (or a glob or variable that could) is refused".to_owned()
        },
    });
    let withheld = tool_core::child_env::withheld();
    let mut detail = format!(
        "removed from commands: names like {}",
        super::environment::SECRET_PATTERNS.join(", ")
    );
    if !withheld.is_empty() {
        detail.push_str(&format!(", and always {}", withheld.join(", ")));
    }
    if !config.environment.include.is_empty() {
        detail.push_str(&format!(
            "; passed: {}",
            config.environment.include.join(", ")
        ));
    }
    if !config.environment.exclude.is_empty() {
        detail.push_str(&format!(
            "; also removed: {}",
            config.environment.exclude.join(", ")
        ));
    }
    out.push(Enforcement {
        name: "environment",
        on: true,
        detail,
    });
    out
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

/// System folders every sandboxed command may read: programs, libraries, configuration, and
/// the kernel's views of processes and devices.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/proc",
    "/sys",
];

/// Which sandbox a command runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    /// A command the read-only rule let run without asking: it reads only the roots and the
    /// system, writes nothing, uses no network and executes only the known read-only programs.
    Unasked,
    /// A command the user (or a rule) approved: confined by the configured [`SandboxMode`].
    Approved(SandboxMode),
}

/// The sandbox for one command.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) tier: Tier,
    plan: Plan,
    launcher: Option<PathBuf>,
    /// The git guard: the folder put first on `PATH` and the real git.
    git: Option<(PathBuf, PathBuf)>,
}

impl Policy {
    /// The read-only sandbox of commands that run without asking, or why it cannot be built
    /// here (then such commands ask).
    pub(crate) fn unasked(
        config: &ShellConfig,
        roots: &[PathBuf],
        hidden: Vec<PathBuf>,
    ) -> Result<Self, String> {
        let launcher = unasked_launcher(config)?;
        let shell = resolve_program(&config.shell_program().to_string_lossy(), roots)
            .ok_or("the shell program was not found")?;
        let mut exec: Vec<PathBuf> = vec![shell, launcher.clone()];
        exec.extend(
            super::programs::known_programs().filter_map(|name| resolve_program(name, roots)),
        );
        exec.extend(confine::loaders());
        let git = resolve_program("git", roots);
        let guard = match &git {
            Some(git) => {
                // The guard is a link to the launcher, which may run; nothing else in its folder.
                let dir = git_guard_dir(&launcher)?;
                exec.extend(git_exec_path(git));
                Some((dir, git.clone()))
            }
            None => None,
        };
        let mut read: Vec<PathBuf> = roots.to_vec();
        read.extend(SYSTEM_READ.iter().map(PathBuf::from));
        read.extend(user_git_config());
        let cover = cover_paths(&launcher)?;
        let plan = Plan {
            read: Some(read),
            exec: Some(exec),
            write: Vec::new(),
            network: false,
            read_only: Vec::new(),
            hidden,
            cover: Some(cover),
            namespaces: true,
        };
        Ok(Self {
            tier: Tier::Unasked,
            plan,
            launcher: Some(launcher),
            git: guard,
        })
    }

    /// The sandbox of approved commands; `None` when the mode is off or the machine cannot
    /// enforce it (they then run unconfined).
    pub(crate) fn approved(
        config: &ShellConfig,
        roots: &[PathBuf],
        hidden: Vec<PathBuf>,
    ) -> Option<Self> {
        let mode = config.sandbox;
        if mode == SandboxMode::Off || !sandbox_support().enforceable() {
            return None;
        }
        let mut write: Vec<PathBuf> = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            // The roots first: they are what the model should be pointed at.
            for dir in roots.iter().cloned().chain(config.temp_dirs()) {
                if !write.contains(&dir) {
                    write.push(dir);
                }
            }
        }
        let namespaces = config.launcher.is_some() && namespaces_available();
        let mut read_only = Vec::new();
        if mode == SandboxMode::WorkspaceWrite
            && namespaces
            && let Some(launcher) = &config.launcher
        {
            read_only = git_protected(roots);
            // The git guard and the covers live in a temporary folder: an approved command
            // must not swap them for its own.
            if let Ok(files) = sandbox_files(launcher) {
                read_only.push(files.to_path_buf());
            }
        }
        let cover = match &config.launcher {
            Some(launcher) if namespaces && !hidden.is_empty() => cover_paths(launcher).ok(),
            _ => None,
        };
        let plan = Plan {
            read: None,
            exec: None,
            write,
            network: config.network == NetworkPolicy::Allow,
            read_only,
            hidden: if cover.is_some() { hidden } else { Vec::new() },
            cover,
            namespaces,
        };
        Some(Self {
            tier: Tier::Approved(mode),
            plan,
            launcher: config.launcher.clone(),
            git: None,
        })
    }

    /// Whether the paths a read deny rule names are hidden from this command.
    pub(crate) fn hides_denied_paths(&self) -> bool {
        self.plan.cover.is_some() && self.plan.namespaces
    }

    /// The writable directories, for messages.
    pub(crate) fn describe_writable(&self) -> String {
        let dirs: Vec<String> = self
            .plan
            .write
            .iter()
            .map(|dir| dir.display().to_string())
            .collect();
        dirs.join(", ")
    }

    /// What to tell the model when a sandboxed command failed on a refused write, read or
    /// connection.
    pub(crate) fn refusal_note(&self) -> String {
        match self.tier {
            Tier::Unasked => "Note: this command ran without asking, so it ran in the read-only sandbox: it may read only the session's roots and the system's folders, write nothing, use no network and start only the known read-only programs (git starts nothing from its configuration). A \"Permission denied\" or a failed connection above most likely comes from that. If the command needs more, write the path it reads plainly (absolute or with ~) or the command in full, so that it asks the user; once approved it runs in the normal sandbox.".to_owned(),
            Tier::Approved(SandboxMode::ReadOnly) => "Note: the shell runs in a read-only sandbox, which refuses every write to a file; a \"Permission denied\" above most likely means the command tried to write. Use the file tools to change files, or ask the user to run the command outside the sandbox.".to_owned(),
            Tier::Approved(_) => {
                let network = if self.plan.network {
                    String::new()
                } else {
                    " The network is off for commands (`sandbox.network: deny`), so a failed connection comes from the sandbox too.".to_owned()
                };
                format!(
                    "Note: the sandbox (workspace-write) refuses writes outside the session's roots and temporary directories ({}), and to the repository's .git/config and .git/hooks; a \"Permission denied\" above most likely means the command wrote elsewhere. Write inside those directories instead, or ask the user to run the command outside the sandbox.{network}",
                    self.describe_writable()
                )
            }
        }
    }

    /// The process to spawn for `program -c command` under this policy.
    pub(crate) fn command(&self, program: &Path, command: &str) -> tokio::process::Command {
        let Some(launcher) = &self.launcher else {
            let mut process = tokio::process::Command::new(program);
            process.arg("-c").arg(command);
            return process;
        };
        let plan = serde_json::to_string(&self.plan).unwrap_or_default();
        let mut process = tokio::process::Command::new(launcher);
        process
            .arg(LAUNCH_FLAG)
            .arg(plan)
            .arg(program)
            .arg("-c")
            .arg(command);
        if self.tier == Tier::Unasked {
            quiet_git(&mut process, self.git.as_ref());
        }
        process
    }

    /// Whether the command starts through the launcher (else from a confined thread).
    pub(crate) fn is_launched(&self) -> bool {
        self.launcher.is_some()
    }
}

/// The launcher, for the read-only sandbox, or why that sandbox cannot be built.
fn unasked_launcher(config: &ShellConfig) -> Result<PathBuf, String> {
    let support = sandbox_support();
    if !support.enforceable() {
        let why = support.to_string();
        return Err(why.lines().next().unwrap_or_default().to_owned());
    }
    if !namespaces_available() {
        return Err(
            "unprivileged user namespaces are not available, so the network cannot be cut off"
                .to_owned(),
        );
    }
    config
        .launcher
        .clone()
        .ok_or_else(|| "no sandbox launcher is configured (ShellConfig::launcher)".to_owned())
}

fn namespaces_available() -> bool {
    sandbox_support().user_namespaces == Some(true)
}

/// Git's own configuration for commands that run without asking: nothing it reads from a
/// repository may start a program (the guard enforces it; these keep git quiet about it), no
/// pager, no optional locks (the sandbox refuses writes).
fn quiet_git(process: &mut tokio::process::Command, guard: Option<&(PathBuf, PathBuf)>) {
    let overrides = [
        ("core.fsmonitor", "false"),
        ("core.pager", "cat"),
        ("log.showSignature", "false"),
        ("core.hooksPath", "/dev/null"),
        ("credential.helper", ""),
    ];
    let start = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|count| count.parse::<usize>().ok())
        .unwrap_or(0);
    for (offset, (key, value)) in overrides.iter().enumerate() {
        process.env(format!("GIT_CONFIG_KEY_{}", start + offset), key);
        process.env(format!("GIT_CONFIG_VALUE_{}", start + offset), value);
    }
    process.env("GIT_CONFIG_COUNT", (start + overrides.len()).to_string());
    process.env("GIT_PAGER", "cat");
    process.env("GIT_OPTIONAL_LOCKS", "0");
    process.env_remove("GIT_EXTERNAL_DIFF");
    if let Some((dir, git)) = guard {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![dir.clone()];
        dirs.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(dirs) {
            process.env("PATH", joined);
        }
        process.env(super::launcher::GIT_ENV, git);
        let others = git_exec_path(git).into_iter().chain(confine::loaders());
        if let Ok(joined) = std::env::join_paths(others) {
            process.env(super::launcher::GIT_EXEC_ENV, joined);
        }
    }
}

/// The first executable named `name` on `PATH` (or `name` itself when it is a path), skipping
/// relative entries and folders inside the roots, which a repository could fill.
fn resolve_program(name: &str, roots: &[PathBuf]) -> Option<PathBuf> {
    if name.contains('/') {
        return std::fs::canonicalize(name).ok();
    }
    let candidates = match known_candidates().iter().find(|(known, _)| *known == name) {
        Some((_, candidates)) => candidates.clone(),
        None => candidates(name),
    };
    candidates
        .into_iter()
        .find(|candidate| !roots.iter().any(|root| candidate.starts_with(root)))
}

/// The executables named `name` in the absolute folders of `PATH`, in order, each folder
/// resolved.
fn candidates(name: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.canonicalize().unwrap_or(dir).join(name))
        .filter(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .collect()
}

/// The candidates of the known read-only programs and git, looked for once per process.
fn known_candidates() -> &'static [(&'static str, Vec<PathBuf>)] {
    static KNOWN: OnceLock<Vec<(&'static str, Vec<PathBuf>)>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        super::programs::known_programs()
            .chain(["git"])
            .map(|name| (name, candidates(name)))
            .collect()
    })
}

/// Where git keeps the programs it runs itself.
fn git_exec_path(git: &Path) -> Option<PathBuf> {
    static EXEC_PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXEC_PATH
        .get_or_init(|| {
            let out = std::process::Command::new(git)
                .arg("--exec-path")
                .stdin(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8(out.stdout).ok()?;
            let dir = PathBuf::from(text.trim());
            dir.is_dir().then_some(dir)
        })
        .clone()
}

/// The user's own git configuration, which git reads whatever the repository.
fn user_git_config() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        files.push(home.join(".gitconfig"));
        files.push(home.join(".config/git"));
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        files.push(xdg.join("git"));
    }
    files
}

/// The hooks and configuration of the repositories at the roots, which approved commands may
/// not change (a hook or a configured program would run on the user's next git command).
fn git_protected(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for root in roots {
        let Some(git_dir) = git_dir_of(root) else {
            continue;
        };
        let hooks = git_dir.join("hooks");
        // A missing hooks folder could be created and filled; an empty one is what git makes.
        if !hooks.exists() {
            let _ = std::fs::create_dir(&hooks);
        }
        for path in [git_dir.join("config"), hooks] {
            if path.exists() && !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The repository folder of a working tree at `root`: `root/.git`, or where a `.git` file
/// (`gitdir: ...`) points, then its common folder for a linked worktree.
fn git_dir_of(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    let dir = if meta.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    };
    let common = std::fs::read_to_string(dir.join("commondir"))
        .ok()
        .map(|text| dir.join(text.trim()));
    common.or(Some(dir)).and_then(|dir| dir.canonicalize().ok())
}

/// The folder of this process's sandbox files: the git guard (`git`, a link to the launcher)
/// and the covers of hidden paths. Made once per process and launcher.
fn sandbox_files(launcher: &Path) -> Result<&'static Path, String> {
    static FILES: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    let dir = FILES.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("tool-sandbox-")
            .tempdir()
            .map_err(|err| format!("creating the sandbox's folder failed: {err}"))?;
        let make = || -> std::io::Result<()> {
            std::fs::create_dir(dir.path().join("bin"))?;
            std::os::unix::fs::symlink(launcher, dir.path().join("bin/git"))?;
            std::fs::write(
                dir.path().join("hidden"),
                "[this file is hidden from commands: a read deny rule names it]\n",
            )?;
            std::fs::create_dir(dir.path().join("hidden-folder"))
        };
        make().map_err(|err| format!("preparing the sandbox's folder failed: {err}"))?;
        Ok(dir)
    });
    dir.as_ref()
        .map(tempfile::TempDir::path)
        .map_err(Clone::clone)
}

fn git_guard_dir(launcher: &Path) -> Result<PathBuf, String> {
    Ok(sandbox_files(launcher)?.join("bin"))
}

fn cover_paths(launcher: &Path) -> Result<(PathBuf, PathBuf), String> {
    let dir = sandbox_files(launcher)?;
    Ok((dir.join("hidden"), dir.join("hidden-folder")))
}

/// Spawns `process` confined by `policy`: through the launcher, or from a thread of its own
/// that restricts itself first (see the module doc).
pub(crate) async fn spawn(
    mut process: tokio::process::Command,
    policy: &Policy,
) -> Result<tokio::process::Child, SpawnError> {
    if policy.is_launched() {
        return process.spawn().map_err(SpawnError::Spawn);
    }
    let writable = policy.plan.write.clone();
    let runtime = tokio::runtime::Handle::current();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("shell-sandbox".to_owned())
        .spawn(move || {
            let result = confine::restrict_current_thread(&writable)
                .map_err(SpawnError::Sandbox)
                .and_then(|()| {
                    let _runtime = runtime.enter();
                    process.spawn().map_err(SpawnError::Spawn)
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
