//! The Landlock calls behind the sandbox: asking the kernel what it supports, and restricting
//! the calling thread. Linux only; elsewhere the probe says so and restricting fails.

use std::path::PathBuf;

#[cfg(target_os = "linux")]
use landlock::{
    ABI, Access, AccessFs, LandlockStatus, RestrictSelf, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};

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
/// devices and under `writable`.
pub(crate) fn restrict_current_thread(writable: &[PathBuf]) -> Result<(), String> {
    let all = AccessFs::from_all(TARGET_ABI);
    let status = Ruleset::default()
        .handle_access(all)
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| {
            ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET_ABI)))
        })
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(DEVICES, all)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(writable, all)))
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|err| format!("setting up the Landlock rules failed: {err}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel did not enforce the Landlock rules".to_owned());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn probe() -> Landlock {
    Landlock::NotLinux
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn restrict_current_thread(_: &[PathBuf]) -> Result<(), String> {
    Err("Landlock is Linux only".to_owned())
}
