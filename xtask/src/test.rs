//! `cargo xtask test`: installs what the tests need when it is missing (the reference MCP servers
//! from the npm registry, the official MCP Python SDK in `.venv`), then runs
//! `cargo test --workspace` with any extra arguments and [`EXTERNAL_TESTS_VAR`] set, which
//! switches on the tests that need them (a bare `cargo test` skips those, saying so).

use std::path::Path;
use std::process::Command;

use anyhow::Context as _;

/// The variable `test-support` reads to run the tests that need node or Python; kept equal to
/// `test_support::EXTERNAL_TESTS_VAR` by a test, since xtask does not depend on that crate.
pub const EXTERNAL_TESTS_VAR: &str = "TOOLKIT_EXTERNAL_TESTS";

fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("starting {what}"))?;
    anyhow::ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

fn installed_newer(marker: &Path, source: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(marker), modified(source)) {
        (Some(m), Some(s)) => m >= s,
        _ => false,
    }
}

/// Installs the test prerequisites if needed, then runs the workspace's tests.
pub fn run_tests(root: &Path, extra: &[String]) -> anyhow::Result<()> {
    if !installed_newer(
        &root.join("node_modules/.package-lock.json"),
        &root.join("package-lock.json"),
    ) {
        eprintln!("xtask test: installing the MCP servers from package-lock.json (npm ci)");
        run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(root),
            "npm ci (Node.js and npm are needed for the MCP integration tests)",
        )?;
    }
    let venv_python = root.join(".venv/bin/python");
    let marker = root.join(".venv/.requirements-installed");
    if !venv_python.exists() || !installed_newer(&marker, &root.join("requirements-test.txt")) {
        eprintln!("xtask test: installing the MCP Python SDK into .venv");
        run(
            Command::new("python3")
                .args(["-m", "venv", ".venv"])
                .current_dir(root),
            "python3 -m venv .venv",
        )?;
        run(
            Command::new(&venv_python)
                .args(["-m", "pip", "install", "-q", "-r", "requirements-test.txt"])
                .current_dir(root),
            "pip install -r requirements-test.txt",
        )?;
        std::fs::write(&marker, b"")?;
    }
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
            .args(["test", "--workspace"])
            .args(extra)
            .env(EXTERNAL_TESTS_VAR, "1")
            .current_dir(root),
        "cargo test --workspace",
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_switch_is_the_one_the_tests_read() {
        let text = std::fs::read_to_string(
            super::super::tidy::workspace_root()
                .unwrap()
                .join("crates/test-support/src/lib.rs"),
        )
        .unwrap();
        let declaration = format!(
            "pub const EXTERNAL_TESTS_VAR: &str = \"{}\";",
            super::EXTERNAL_TESTS_VAR
        );
        assert!(
            text.contains(&declaration),
            "test-support must declare {declaration}"
        );
    }
}
