//! The Landlock calls behind the sandbox: asking the kernel what it supports, and restricting
//! the calling thread. Linux only; elsewhere the probe says so and restricting fails.

use std::path::PathBuf;

#[cfg(target_os = "linux")]
use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, RestrictSelf, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use super::plan::Plan;

/// Whether the kernel offers Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landlock {
    /// Landlock works, with this ABI version.
    Available {
        /// The kernel's Landlock ABI version.
        abi: u32,
    },
    /// The kernel has Landlock but it is not enabled (missing from the `lsm=` boot parameter).
    NotEnabled,
    /// The kernel is built without Landlock.
    NotImplemented,
    /// Not Linux.
    NotLinux,
}

#[cfg(target_os = "linux")]
/// Devices every sandboxed command may write: discarding output, terminals, randomness.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

#[cfg(target_os = "linux")]
/// The Landlock ABI whose access rights the sandbox handles: V5 covers writes, truncation,
/// renames across directories and device ioctls. Later ABIs add rights (such as connecting
/// to UNIX sockets) that would break ordinary tools if handled with these rules.
const TARGET_ABI: ABI = ABI::V5;

#[cfg(target_os = "linux")]
/// Asks the kernel for its Landlock status without restricting anything: no flags and no
/// `no_new_privs` make `apply` return before any change.
pub(crate) fn probe() -> Landlock {
    let status = match RestrictSelf::default().no_new_privs(false).apply() {
        Ok(status) => status.landlock,
        Err(_) => return Landlock::NotImplemented,
    };
    match status {
        LandlockStatus::NotEnabled => Landlock::NotEnabled,
        LandlockStatus::NotImplemented => Landlock::NotImplemented,
        LandlockStatus::Available {
            kernel_abi: Some(abi),
            ..
        } => Landlock::Available {
            abi: u32::try_from(abi).unwrap_or(0),
        },
        LandlockStatus::Available { effective_abi, .. } => Landlock::Available {
            abi: abi_number(effective_abi),
        },
    }
}

#[cfg(target_os = "linux")]
fn abi_number(abi: ABI) -> u32 {
    const KNOWN: [ABI; 10] = [
        ABI::V1,
        ABI::V2,
        ABI::V3,
        ABI::V4,
        ABI::V5,
        ABI::V6,
        ABI::V7,
        ABI::V8,
        ABI::V9,
        ABI::V10,
    ];
    (1..)
        .zip(KNOWN)
        .find(|(_, known)| *known == abi)
        .map_or(0, |(n, _)| n)
}

#[cfg(target_os = "linux")]
/// Restricts the calling thread (and what it spawns): reading everywhere, writing only to the
/// devices and under `writable`. The fallback when no launcher is configured.
pub(crate) fn restrict_current_thread(writable: &[PathBuf]) -> Result<(), String> {
    let plan = Plan {
        write: writable.to_vec(),
        network: true,
        ..Plan::default()
    };
    restrict_process(&plan)
}

#[cfg(target_os = "linux")]
/// Restricts the calling process (the launcher, before it executes the command) as `plan` says:
/// reads, executions and writes only where it lists them, TCP refused when the plan allows no
/// network and no network namespace was made, and no signals or abstract UNIX sockets reaching
/// outside the sandbox where the kernel offers those scopes (ABI 6).
pub(crate) fn restrict_process(plan: &Plan) -> Result<(), String> {
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let read_and_exec = if plan.exec.is_some() {
        read
    } else {
        read | AccessFs::Execute
    };
    let everywhere = [PathBuf::from("/")];
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(landlock_failed)?;
    let tcp_only = !plan.network && !(plan.namespaces);
    if tcp_only {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(landlock_failed)?;
    }
    let ruleset = ruleset
        .scope(Scope::from_all(ABI::V6))
        .map_err(landlock_failed)?
        .create()
        .map_err(landlock_failed)?;
    let readable = plan.read.as_deref().unwrap_or(&everywhere);
    let status = ruleset
        .add_rules(path_beneath_rules(readable, read_and_exec))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                plan.exec.as_deref().unwrap_or_default(),
                AccessFs::Execute | AccessFs::ReadFile | AccessFs::ReadDir,
            ))
        })
        .and_then(|r| r.add_rules(path_beneath_rules(DEVICES, all)))
        .and_then(|r| r.add_rules(path_beneath_rules(&plan.write, all)))
        .and_then(|r| r.restrict_self())
        .map_err(landlock_failed)?;
    enforced(&status)
}

#[cfg(target_os = "linux")]
/// One more layer on the calling process: it may execute only `allowed` (files or folders).
pub(crate) fn restrict_exec(allowed: &[PathBuf]) -> Result<(), String> {
    let status = Ruleset::default()
        .handle_access(AccessFs::Execute)
        .and_then(Ruleset::create)
        .and_then(|r| r.add_rules(path_beneath_rules(allowed, AccessFs::Execute)))
        .and_then(|r| r.restrict_self())
        .map_err(landlock_failed)?;
    enforced(&status)
}

#[cfg(target_os = "linux")]
/// An error when the kernel accepted the rules but enforces none of them.
fn enforced(status: &landlock::RestrictionStatus) -> Result<(), String> {
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel did not enforce the Landlock rules".to_owned());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn landlock_failed(err: landlock::RulesetError) -> String {
    format!("setting up the Landlock rules failed: {err}")
}

/// The dynamic loaders a program may need to start (the kernel opens them for execution),
/// looked for once per process.
pub(crate) fn loaders() -> Vec<PathBuf> {
    static LOADERS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    LOADERS.get_or_init(find_loaders).clone()
}

fn find_loaders() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in [
        "/lib",
        "/lib64",
        "/lib32",
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib32",
    ] {
        let dirs = std::iter::once(PathBuf::from(dir)).chain(
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.to_string_lossy().contains("-linux-")),
        );
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("ld-linux")
                    || name.starts_with("ld-musl")
                    || name.starts_with("ld64.so")
                {
                    found.push(entry.path());
                }
            }
        }
    }
    found
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn probe() -> Landlock {
    Landlock::NotLinux
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn restrict_current_thread(_: &[PathBuf]) -> Result<(), String> {
    Err("Landlock is Linux only".to_owned())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn restrict_process(_: &Plan) -> Result<(), String> {
    Err("Landlock is Linux only".to_owned())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn restrict_exec(_: &[PathBuf]) -> Result<(), String> {
    Err("Landlock is Linux only".to_owned())
}
