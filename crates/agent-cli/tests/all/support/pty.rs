//! The real binary in a pseudo-terminal, its screen kept by a VT parser: what a person sees,
//! typed at as a person types.

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::cli::Project;
use super::scripted::ScriptedServer;

/// How long a test waits for the screen to show something before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

pub const ROWS: u16 = 40;
pub const COLS: u16 = 100;

/// A running `agent-cli` in a terminal of [`ROWS`] × [`COLS`].
pub struct Terminal {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn std::io::Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Everything the program wrote, for failure messages.
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Terminal {
    /// `agent-cli` (interactive) in `project`, talking to `server` as Anthropic, with `env` added.
    pub fn start(project: &Project, server: &ScriptedServer, env: &[(&str, &str)]) -> Self {
        Self::start_with_args(project, server, env, &[])
    }

    /// [`Terminal::start`] with more arguments.
    pub fn start_with_args(
        project: &Project,
        server: &ScriptedServer,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Self {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_agent-cli"));
        command.cwd(project.path());
        command.args([
            "--provider",
            "anthropic",
            "--base-url",
            &server.url(),
            "--model",
            "test-model",
        ]);
        command.args(args);
        for name in [
            "XDG_CONFIG_HOME",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
            "NO_COLOR",
        ] {
            command.env_remove(name);
        }
        command.env("AGENT_CLI_HOME", project.home());
        command.env("HOME", project.home());
        command.env("ANTHROPIC_API_KEY", "test-key");
        command.env("TERM", "xterm-256color");
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pair.slave.spawn_command(command).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).unwrap(),
            std::num::NonZeroU16::new(COLS).unwrap(),
            1000,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (screen, answer, log) = (Arc::clone(&parser), Arc::clone(&writer), Arc::clone(&raw));
        std::thread::spawn(move || {
            // Keeps the master open as long as the program may write.
            let _master = pair.master;
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                log.lock().unwrap().extend_from_slice(bytes);
                let mut parser = screen.lock().unwrap();
                parser.process(bytes);
                // A line editor asks where the cursor is; a terminal answers.
                if bytes.windows(4).any(|w| w == b"\x1b[6n") {
                    let (row, col) = parser.screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = answer.lock().unwrap().write_all(reply.as_bytes());
                }
            }
        });
        Self {
            parser,
            writer,
            child,
            raw,
        }
    }

    /// Types `text` (escape sequences and control characters as they are).
    pub fn send(&self, text: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(text.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// The screen's text.
    pub fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Runs `check` on the screen until it says yes; fails after a minute, showing the screen.
    pub async fn wait_for_screen(&self, what: &str, check: impl Fn(&vt100::Screen) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if check(self.parser.lock().unwrap().screen()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what}:\n{}\n--- raw ---\n{:?}",
                self.text(),
                String::from_utf8_lossy(&self.raw.lock().unwrap())
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the screen shows `text`.
    pub async fn wait_for(&self, text: &str) {
        self.wait_for_screen(&format!("{text:?}"), |screen| {
            screen.contents().contains(text)
        })
        .await;
    }

    /// Waits until the screen shows `text` `n` times.
    pub async fn wait_for_count(&self, text: &str, n: usize) {
        self.wait_for_screen(&format!("{text:?} {n} times"), |screen| {
            screen.contents().matches(text).count() >= n
        })
        .await;
    }

    /// The cell where `text` first starts on the screen.
    pub fn cell_of(&self, text: &str) -> Option<vt100::Cell> {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        for (row, line) in screen.rows(0, COLS).enumerate() {
            if let Some(at) = line.find(text) {
                let col = line[..at].chars().count();
                return screen.cell(row as u16, col as u16).cloned();
            }
        }
        None
    }

    /// Waits until the line editor waits for a prompt: the last line is `> ` and nothing else.
    /// Keys typed before then would reach a terminal that is not yet in raw mode.
    pub async fn wait_for_prompt(&self) {
        self.wait_for_screen("the prompt", |screen| {
            let text = screen.contents();
            let last = text.trim_end().lines().last().unwrap_or("");
            last.trim_end() == ">" && screen.cursor_position().1 == 2
        })
        .await;
    }

    /// Ends the session with Ctrl-D at the prompt and waits for the program to exit.
    pub async fn exit(mut self) -> portable_pty::ExitStatus {
        self.wait_for_prompt().await;
        self.send("\x04");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "agent-cli did not exit:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}
