//! The sandbox launcher: a fresh, single-threaded process that builds the sandbox around itself
//! and then becomes the command.
//!
//! A process with threads (the agent runs tokio) cannot enter a new user namespace, and the
//! workspace allows no `unsafe` code for a `pre_exec` hook, so every sandboxed command is started
//! through a small program instead: the agent's own executable run with [`LAUNCH_FLAG`] (any
//! binary that calls [`run_if_launcher`] first thing in `main`, such as `agent-cli` or this
//! crate's `tool-sandbox`). The launcher reads its [`Plan`], then
//!
//! 1. enters new user and mount namespaces (and a network namespace with nothing in it when the
//!    plan allows no network), mounts the repository's git hooks and config read-only over
//!    themselves and hides the paths a read deny rule names;
//! 2. restricts itself with Landlock: where it may read, execute and write, and (ABI 6) no
//!    signals or abstract sockets beyond the sandbox. Landlock also forbids undoing the mounts;
//! 3. executes the command, which inherits all of it.
//!
//! The same executable, started under the name `git` from the directory the read-only tier puts
//! first on `PATH`, adds one more Landlock layer that lets git execute nothing but git itself,
//! so no configuration (external diff, textconv, filters, pager, fsmonitor, hooks, helpers) can
//! start another program, whichever repository git reads.

use std::convert::Infallible;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use super::plan::Plan;

/// The first argument that makes an executable act as the sandbox launcher.
pub const LAUNCH_FLAG: &str = "--tool-sandbox-launch";

/// The variable that names the real git for the git guard.
pub(crate) const GIT_ENV: &str = "TOOL_SANDBOX_GIT";

/// The exit code of a launcher that could not build the sandbox; its stderr says why.
pub(crate) const SETUP_FAILED: i32 = 125;

/// How the launcher's stderr starts when it could not build the sandbox.
pub(crate) const SETUP_FAILED_PREFIX: &str = "sandbox setup failed: ";

/// Call this first thing in `main`, before any thread starts: when the process was started as
/// the sandbox launcher (or as its git guard), it builds the sandbox and becomes the command,
/// and this never returns. Otherwise it returns at once.
pub fn run_if_launcher() {
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    let first = args.next();
    if first.as_deref() == Some(std::ffi::OsStr::new(LAUNCH_FLAG)) {
        let rest: Vec<OsString> = args.collect();
        fail(launch(rest));
    }
    let called_git = Path::new(&arg0).file_name() == Some(std::ffi::OsStr::new("git"));
    if called_git && let Some(git) = std::env::var_os(GIT_ENV) {
        let rest: Vec<OsString> = first.into_iter().chain(args).collect();
        fail(guard_git(PathBuf::from(git), rest));
    }
}

fn fail(result: Result<Infallible, String>) -> ! {
    let Err(why) = result;
    eprintln!("{SETUP_FAILED_PREFIX}{why}");
    std::process::exit(SETUP_FAILED)
}

/// `--tool-sandbox-launch PLAN-JSON PROGRAM ARGS...`
fn launch(args: Vec<OsString>) -> Result<Infallible, String> {
    let mut args = args.into_iter();
    let plan = args
        .next()
        .and_then(|plan| plan.into_string().ok())
        .ok_or("the launcher was started without a plan")?;
    let plan: Plan =
        serde_json::from_str(&plan).map_err(|err| format!("the plan is not valid: {err}"))?;
    let program = args
        .next()
        .ok_or("the launcher was started without a command")?;
    if plan.needs_namespaces() && plan.namespaces {
        namespaces::enter(&plan)?;
    }
    crate::shell::confine::restrict_process(&plan)?;
    let err = std::process::Command::new(&program).args(args).exec();
    Err(format!(
        "could not start {}: {err}",
        program.to_string_lossy()
    ))
}

/// The variable that lists what else git may execute (its own programs and the loaders).
pub(crate) const GIT_EXEC_ENV: &str = "TOOL_SANDBOX_GIT_EXEC";

/// The git guard: lets git execute only git, then becomes it.
fn guard_git(git: PathBuf, args: Vec<OsString>) -> Result<Infallible, String> {
    let mut allowed = vec![git.clone()];
    match std::env::var_os(GIT_EXEC_ENV) {
        Some(paths) => allowed.extend(std::env::split_paths(&paths)),
        None => {
            allowed.extend(git_exec_path(&git));
            allowed.extend(crate::shell::confine::loaders());
        }
    }
    crate::shell::confine::restrict_exec(&allowed)?;
    let err = std::process::Command::new(&git).args(args).exec();
    Err(format!("could not start {}: {err}", git.display()))
}

/// Where git keeps the programs it runs itself (`git --exec-path`), from the variable the
/// launcher's parent set, else the usual places next to the binary.
fn git_exec_path(git: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GIT_EXEC_PATH") {
        return Some(PathBuf::from(path));
    }
    let prefix = git.parent()?.parent()?;
    ["lib/git-core", "libexec/git-core"]
        .iter()
        .map(|dir| prefix.join(dir))
        .find(|dir| dir.is_dir())
}

#[cfg(target_os = "linux")]
mod namespaces {
    //! Entering the namespaces: user (to be allowed the rest), mount, and network when the plan
    //! allows none.

    use std::path::Path;

    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use nix::sys::statvfs::{FsFlags, statvfs};
    use nix::unistd::{getgid, getuid};

    use super::Plan;

    pub(super) fn enter(plan: &Plan) -> Result<(), String> {
        let (uid, gid) = (getuid(), getgid());
        let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS;
        if !plan.network {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        unshare(flags).map_err(|err| format!("creating the namespaces failed: {err}"))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|err| format!("writing {file} failed: {err}"))
        };
        write("/proc/self/setgroups", "deny".to_owned())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(|err| format!("making the mounts private failed: {err}"))?;
        for path in &plan.read_only {
            bind(path, path)?;
        }
        if let Some((file, dir)) = &plan.cover {
            for path in &plan.hidden {
                let cover = if path.is_dir() { dir } else { file };
                bind(cover, path)?;
            }
        }
        Ok(())
    }

    /// Mounts `source` read-only at `target`, keeping the flags the mount it sits on has (a
    /// user namespace may not drop them).
    fn bind(source: &Path, target: &Path) -> Result<(), String> {
        let failed = |err| format!("mounting {} read-only failed: {err}", target.display());
        mount(
            Some(source),
            target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(failed)?;
        let current = statvfs(target).map_err(failed)?.flags();
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        for (have, keep) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if current.contains(have) {
                flags |= keep;
            }
        }
        mount(None::<&str>, target, None::<&str>, flags, None::<&str>).map_err(failed)
    }
}

#[cfg(not(target_os = "linux"))]
mod namespaces {
    use super::Plan;

    pub(super) fn enter(_: &Plan) -> Result<(), String> {
        Err("namespaces are Linux only".to_owned())
    }
}
