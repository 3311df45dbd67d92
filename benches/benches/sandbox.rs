//! What the shell's sandbox costs: one shell call of `true` through the whole tool, unconfined
//! (`sandbox: off`), approved under `workspace-write` (the launcher, user and mount namespaces,
//! the read-only git files, Landlock), approved with `network: deny` (also a network namespace),
//! and without asking (the read-only sandbox: Landlock on reads, writes and executions, the
//! namespaces, and the git guard on `PATH`).
//!
//! Run with `cargo bench -p benches --bench sandbox`. This bench's own executable is the
//! sandbox launcher (it calls `run_if_launcher` first, as the agent does).
#![allow(
    clippy::unwrap_used,
    reason = "bench setup: a panic is a failed bench, which is what it should be"
)]

use std::sync::Arc;

use criterion::Criterion;
use serde_json::json;
use tool_builtins::{Builtins, NetworkPolicy, SandboxMode, ShellConfig};
use tool_core::{AnyTool, PermissionCheck, Session, ToolContext};

fn shell(mode: SandboxMode, network: NetworkPolicy) -> AnyTool {
    let config = ShellConfig {
        program: Some("/bin/sh".into()),
        sandbox: mode,
        network,
        launcher: Some(std::env::current_exe().unwrap()),
        ..ShellConfig::default()
    };
    Builtins::new()
        .shell_config(config)
        .tools()
        .into_iter()
        .find(|tool| tool.spec().name == "shell")
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let support = tool_builtins::sandbox_support();
    let dir = tempfile::tempdir().unwrap();
    let session = Arc::new(Session::new(
        "bench",
        dir.path().join("session"),
        dir.path(),
    ));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("shell_true");
    group.sample_size(50);
    let cases = [
        (
            "unconfined",
            SandboxMode::Off,
            NetworkPolicy::Allow,
            "true > /dev/null; exit 0",
        ),
        (
            "workspace-write",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Allow,
            "true > /dev/null; exit 0",
        ),
        (
            "workspace-write, network deny",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Deny,
            "true > /dev/null; exit 0",
        ),
        (
            "without asking (read-only sandbox)",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Allow,
            "true",
        ),
    ];
    for (name, mode, network, command) in cases {
        if mode != SandboxMode::Off && !support.enforceable() {
            eprintln!("skipped {name}: {support}");
            continue;
        }
        let tool = shell(mode, network);
        let input = json!({"command": command});
        let ctx = ToolContext::new("toolu_bench", "shell", Arc::clone(&session));
        let prepared = tool.prepare(input.clone()).unwrap();
        let unasked = runtime.block_on(prepared.check_permissions(&ctx)) == PermissionCheck::Allow;
        assert_eq!(unasked, command == "true", "{name}");
        group.bench_function(name, |b| {
            b.iter(|| {
                let out = runtime.block_on(tool.call(input.clone(), &ctx)).unwrap();
                assert!(!out.is_error, "{}", out.joined_text());
            });
        });
    }
    group.finish();
}

fn main() {
    tool_builtins::run_if_launcher();
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
