//! shell's Landlock sandbox, with real processes and the files they leave on disk.
//!
//! The session's root, the "elsewhere" directory and the only temporary directory the sandbox
//! lets commands write all live in one fresh folder, wherever the checkout is (under /tmp too).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tempfile::TempDir;
use tool_builtins::{Builtins, SandboxMode, ShellConfig, sandbox_support, sandbox_warning};
use tool_core::{Session, ToolContext, ToolOutput};

use crate::support::Probe;

/// A root and a directory beside it that is not a root, with a shell tool in `mode`.
struct Sandboxed {
    _dir: TempDir,
    root: PathBuf,
    elsewhere: PathBuf,
    session: Arc<Session>,
    shell: Probe,
}

impl Sandboxed {
    fn new(mode: SandboxMode) -> Self {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let elsewhere = base.join("elsewhere");
        let temp = base.join("tmp");
        for dir in [&root, &elsewhere, &temp] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let session = Arc::new(Session::new("sandbox", base.join("session"), &root));
        let config = ShellConfig {
            temp_dirs: Some(vec![temp]),
            ..crate::support::shell_config()
        };
        let shell = Probe::of(&Builtins::new().shell_config(config).sandbox(mode), "shell");
        Self {
            _dir: dir,
            root,
            elsewhere,
            session,
            shell,
        }
    }

    async fn run(&self, command: &str) -> ToolOutput {
        let ctx = ToolContext::new("toolu_sandbox", "shell", Arc::clone(&self.session));
        self.shell
            .call(json!({"command": command}), &ctx)
            .await
            .unwrap()
    }

    /// Runs `echo` into `path`; returns the output and whether the file exists afterwards.
    async fn write(&self, path: &Path) -> (ToolOutput, bool) {
        let out = self.run(&format!("echo x > '{}'", path.display())).await;
        (out, path.exists())
    }
}

/// Whether the sandbox can be tested here; prints why not when it cannot.
pub(crate) fn landlock_available() -> bool {
    let support = sandbox_support();
    if !support.enforceable() {
        eprintln!("skipped: the shell sandbox cannot be enforced here:\n{support}");
    }
    support.enforceable()
}

#[tokio::test]
async fn workspace_write_allows_the_roots_and_temp_dirs_only() {
    if !landlock_available() {
        return;
    }
    let env = Sandboxed::new(SandboxMode::WorkspaceWrite);
    let (out, written) = env.write(&env.root.join("inside.txt")).await;
    assert!(!out.is_error && written, "{}", out.joined_text());

    let (out, written) = env.write(&env.elsewhere.join("outside.txt")).await;
    assert!(out.is_error && !written, "{}", out.joined_text());
    let text = out.joined_text();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(
        text.contains("the sandbox (workspace-write) refuses writes outside the session's roots"),
        "{text}"
    );
    assert!(text.contains(&env.root.display().to_string()), "{text}");

    // Grandchildren are confined too.
    let nested = env.elsewhere.join("nested.txt");
    let out = env
        .run(&format!("sh -c 'touch \"{}\"'", nested.display()))
        .await;
    assert!(out.is_error && !nested.exists(), "{}", out.joined_text());

    let temp = tempfile::NamedTempFile::new_in(env.root.parent().unwrap().join("tmp")).unwrap();
    let (out, _) = env.write(temp.path()).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert_eq!(std::fs::read_to_string(temp.path()).unwrap(), "x\n");
    let out = env.run("echo x > /dev/null && ls").await;
    assert!(!out.is_error, "{}", out.joined_text());
}

#[tokio::test]
async fn read_only_refuses_every_write() {
    if !landlock_available() {
        return;
    }
    let env = Sandboxed::new(SandboxMode::ReadOnly);
    std::fs::write(env.root.join("kept.txt"), "kept\n").unwrap();
    let (out, written) = env.write(&env.root.join("inside.txt")).await;
    assert!(out.is_error && !written, "{}", out.joined_text());
    assert!(
        out.joined_text().contains("read-only sandbox"),
        "{}",
        out.joined_text()
    );
    let (out, written) = env.write(&env.elsewhere.join("outside.txt")).await;
    assert!(out.is_error && !written, "{}", out.joined_text());
    let out = env.run("rm kept.txt").await;
    assert!(out.is_error, "{}", out.joined_text());
    assert!(env.root.join("kept.txt").exists());

    let out = env
        .run("cat kept.txt; echo x > /dev/null; echo err >&2")
        .await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(out.joined_text().contains("kept"), "{}", out.joined_text());
}

#[tokio::test]
async fn off_writes_anywhere_the_user_may() {
    let env = Sandboxed::new(SandboxMode::Off);
    let (out, written) = env.write(&env.root.join("inside.txt")).await;
    assert!(!out.is_error && written, "{}", out.joined_text());
    let (out, written) = env.write(&env.elsewhere.join("outside.txt")).await;
    assert!(!out.is_error && written, "{}", out.joined_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_restriction_does_not_leak_to_other_threads() {
    if !landlock_available() {
        return;
    }
    let confined = Sandboxed::new(SandboxMode::ReadOnly);
    for _ in 0..4 {
        let (out, _) = confined.write(&confined.elsewhere.join("no.txt")).await;
        assert!(out.is_error, "{}", out.joined_text());
    }
    // The runtime's threads, a new thread and an unsandboxed shell can all still write.
    std::fs::write(confined.elsewhere.join("test-thread.txt"), "x").unwrap();
    let elsewhere = confined.elsewhere.clone();
    tokio::task::spawn_blocking(move || std::fs::write(elsewhere.join("blocking.txt"), "x"))
        .await
        .unwrap()
        .unwrap();
    let elsewhere = confined.elsewhere.clone();
    std::thread::spawn(move || std::fs::write(elsewhere.join("thread.txt"), "x"))
        .join()
        .unwrap()
        .unwrap();
    let free = Sandboxed::new(SandboxMode::Off);
    let (out, written) = free.write(&confined.elsewhere.join("free.txt")).await;
    assert!(!out.is_error && written, "{}", out.joined_text());
}

#[test]
fn the_support_report_and_warning() {
    let support = sandbox_support();
    let report = support.to_string();
    assert!(report.starts_with("landlock: "), "{report}");
    assert!(report.contains("\nuser namespaces: "), "{report}");
    assert_eq!(sandbox_warning(SandboxMode::Off), None);
    if support.enforceable() {
        assert!(report.contains("ABI"), "{report}");
        assert_eq!(sandbox_warning(SandboxMode::WorkspaceWrite), None);
    } else {
        let warning = sandbox_warning(SandboxMode::WorkspaceWrite).unwrap();
        assert!(warning.contains("cannot be enforced"), "{warning}");
    }
}
