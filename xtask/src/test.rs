//! `cargo xtask test`: installs what the tests need when it is missing (the reference MCP servers
//! from the npm registry, the official MCP Python SDK in `.venv`), then runs
//! `cargo test --workspace` with any extra arguments.

use std::path::Path;
use std::process::Command;

use anyhow::Context as _;

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
            .current_dir(root),
        "cargo test --workspace",
    )
}
