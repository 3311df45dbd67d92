//! What this workspace's integration tests share: the workspace root, fixture paths, and the
//! switch for the suites that need programs outside Rust.
//!
//! Some tests run real MCP servers from npm (`node_modules/@modelcontextprotocol/*`, installed
//! with `npm ci`) or the official MCP Python SDK (`.venv`, installed with pip). `cargo xtask test`
//! installs both and sets [`EXTERNAL_TESTS_VAR`]; a bare `cargo test` leaves it unset, and those
//! tests then print one `skipped:` line and pass, so a machine with only Rust runs the rest:
//!
//! ```no_run
//! use test_support::{External, external_tests};
//!
//! # fn a_test() {
//! if !external_tests(&[External::NpmServers]) {
//!     return;
//! }
//! let script = test_support::npm_server("server-memory");
//! # }
//! ```
//!
//! When the variable is set and something is missing, the check panics instead: a run that asked
//! for these tests (CI does, through `cargo xtask test`) can never skip them silently.
//!
//! This crate depends on no crate of the workspace, so a crate's tests never see a second copy of
//! its own types; helpers that need `tool-core` live in each crate's own test support module.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The environment variable that switches on the tests needing node or Python: set to `1` by
/// `cargo xtask test`; unset, empty or `0` means those tests are skipped.
pub const EXTERNAL_TESTS_VAR: &str = "TOOLKIT_EXTERNAL_TESTS";

/// What a skipped or failing external test tells the reader to run.
const INSTALL_HINT: &str = "run `cargo xtask test`, which installs the npm MCP servers (npm ci) and the MCP Python SDK (.venv) at the workspace root and runs the tests with them";

/// Something outside Rust that a test needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum External {
    /// The reference MCP servers from npm, and `node` to run them.
    NpmServers,
    /// The official MCP Python SDK in the workspace's `.venv`.
    PythonSdk,
}

impl External {
    /// How a skip line names this prerequisite.
    fn describe(self) -> &'static str {
        match self {
            Self::NpmServers => "the npm MCP servers",
            Self::PythonSdk => "the MCP Python SDK",
        }
    }

    /// Why this prerequisite is not usable, if it is not.
    fn missing(self) -> Option<String> {
        match self {
            Self::NpmServers => {
                let dir = npm_servers_dir();
                if !dir.is_dir() {
                    return Some(format!("{} is missing", dir.display()));
                }
                let node = Command::new("node")
                    .arg("--version")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                match node {
                    Ok(status) if status.success() => None,
                    Ok(status) => Some(format!("`node --version` failed ({status})")),
                    Err(err) => Some(format!("`node` cannot be started ({err})")),
                }
            }
            Self::PythonSdk => {
                let python = venv_python_path();
                (!python.is_file()).then(|| format!("{} is missing", python.display()))
            }
        }
    }
}

/// Whether the tests needing node or Python were asked for (see [`EXTERNAL_TESTS_VAR`]).
pub(crate) fn external_tests_enabled() -> bool {
    std::env::var(EXTERNAL_TESTS_VAR).is_ok_and(|value| !value.is_empty() && value != "0")
}

/// Whether a test that needs `needs` should run.
///
/// Unless [`EXTERNAL_TESTS_VAR`] is set, prints one `skipped:` line naming the test and what it
/// needs, and returns `false`; the test should then return at once. When the variable is set,
/// returns `true` if everything is installed and panics with what is missing otherwise.
pub fn external_tests(needs: &[External]) -> bool {
    if external_tests_enabled() {
        let missing: Vec<String> = needs.iter().filter_map(|need| need.missing()).collect();
        assert!(
            missing.is_empty(),
            "{EXTERNAL_TESTS_VAR} is set, but {}: {INSTALL_HINT}",
            missing.join("; ")
        );
        return true;
    }
    let described: Vec<&str> = needs.iter().map(|need| need.describe()).collect();
    // Written to the process's stderr rather than through `eprintln!`, which the test harness
    // captures and hides for passing tests: a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {}: needs {}; run `cargo xtask test`",
        current_test(),
        described.join(" and ")
    );
    false
}

/// The running test's name, which the harness gives to the thread it runs the test on.
fn current_test() -> String {
    std::thread::current().name().unwrap_or("a test").to_owned()
}

/// The workspace's root, where the external prerequisites are installed.
///
/// Found from the running test's package (Cargo sets `CARGO_MANIFEST_DIR` when it runs a test),
/// not from where this crate was compiled, so a checkout moved beside a shared `target/` finds
/// its own root: the nearest folder up with a `Cargo.lock`. Canonicalised so paths compare and
/// print well.
pub fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let root = manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map_or_else(|| manifest.join("../.."), Path::to_path_buf);
    root.canonicalize().unwrap_or(root)
}

fn npm_servers_dir() -> PathBuf {
    workspace_root().join("node_modules/@modelcontextprotocol")
}

fn venv_python_path() -> PathBuf {
    workspace_root().join(".venv/bin/python")
}

/// The entry script of an npm-installed reference MCP server (`server-memory`, ...), to run with
/// `node`. Panics with how to install it when it is missing.
pub fn npm_server(package: &str) -> String {
    let path = npm_servers_dir().join(package).join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: {INSTALL_HINT}",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The Python interpreter of the workspace's `.venv`, which has the MCP SDK. Panics with how to
/// install it when it is missing.
pub fn venv_python() -> String {
    let path = venv_python_path();
    assert!(
        path.is_file(),
        "{} is missing: {INSTALL_HINT}",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The path of `name` in `tests/fixtures` of the crate whose manifest directory is
/// `manifest_dir`; the [`fixture!`] macro passes the calling crate's.
#[doc(hidden)]
pub fn fixture_in(manifest_dir: &str, name: &str) -> String {
    Path::new(manifest_dir)
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The path of a file in the calling crate's `tests/fixtures`, as a string.
#[macro_export]
macro_rules! fixture {
    ($name:expr) => {
        $crate::fixture_in(env!("CARGO_MANIFEST_DIR"), $name)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"));
        assert!(manifest.is_ok_and(|text| text.contains("[workspace]")));
    }

    #[test]
    fn fixtures_are_found_in_the_calling_crate() {
        let path = fixture!("x.py");
        assert!(
            path.ends_with("crates/test-support/tests/fixtures/x.py"),
            "{path}"
        );
    }
}
