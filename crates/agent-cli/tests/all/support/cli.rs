//! The real `agent-cli` binary run in a temporary project against the scripted server.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use agent_cli::provider::ProviderKind;
use serde_json::Value;
use tempfile::TempDir;
use tokio::process::Command;

use super::scripted::ScriptedServer;

pub use test_support::{External, external_tests, fixture, npm_server, venv_python};

/// Both providers, for tests that run once per wire format.
pub const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::OpenAi];

/// A temporary project directory and a user directory of its own (settings and sessions), so no
/// test sees the developer's settings or another test's sessions.
pub struct Project {
    dir: TempDir,
    home: TempDir,
}

impl Project {
    /// An empty project.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    /// The project's directory (the agent's working directory).
    pub fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// The user directory (`AGENT_CLI_HOME`): settings and sessions.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Writes a file in the project, creating its directories.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Reads a file of the project.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path().join(relative)).unwrap()
    }

    /// Writes the project's `.mcp.json`.
    pub fn mcp_json(&self, servers: &Value) {
        self.write(
            ".mcp.json",
            &serde_json::to_string_pretty(&serde_json::json!({ "mcpServers": servers })).unwrap(),
        );
    }

    /// `agent-cli` in the project, with no provider chosen (for subcommands that need none).
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agent-cli"));
        command
            .current_dir(self.path())
            .env("AGENT_CLI_HOME", self.home())
            .env("HOME", self.home())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// `agent-cli` in the project, talking to `server` in `kind`'s wire format.
    pub fn agent(&self, server: &ScriptedServer, kind: ProviderKind) -> Command {
        let mut command = self.command();
        match kind {
            ProviderKind::Anthropic => command
                .args(["--provider", "anthropic", "--base-url", &server.url()])
                .env("ANTHROPIC_API_KEY", "test-key"),
            ProviderKind::OpenAi => {
                command.args(["--provider", "openai", "--base-url", &server.openai_url()])
            }
            ProviderKind::OpenAiResponses => command
                .args([
                    "--provider",
                    "openai-responses",
                    "--base-url",
                    &server.openai_url(),
                ])
                .env("OPENAI_API_KEY", "test-key"),
        };
        command.args(["--model", "test-model"]);
        command
    }

    /// Replaces this project's paths in `text` with stable placeholders, for snapshots.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.path().display().to_string(), "[PROJECT]")
            .replace(&self.home().display().to_string(), "[HOME]")
    }
}

/// Runs a command to its end with a generous deadline.
pub async fn run(command: &mut Command) -> Output {
    finish(command.spawn().unwrap()).await
}

/// Runs a command that prints one JSON object (a client fixture's report) to its end, asserts it
/// succeeded, and parses what it printed.
pub async fn run_json(command: &mut Command) -> Value {
    let output = run(command.stdout(Stdio::piped()).stderr(Stdio::piped())).await;
    assert_success(&output);
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// Runs a command to its end with `input` piped to its standard input (an interactive session
/// fed line by line), with the same deadline as [`run`].
pub async fn run_with_input(command: &mut Command, input: &str) -> Output {
    use tokio::io::AsyncWriteExt as _;
    let mut child = command.stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    finish(child).await
}

/// Waits for a started command, two minutes at most.
async fn finish(child: tokio::process::Child) -> Output {
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .expect("agent-cli did not finish within two minutes")
    .unwrap()
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts that the run succeeded, showing its standard error when it did not.
pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "agent-cli failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
}

/// The messages of a recorded request body, in either wire format.
pub fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap()
}

/// The tools array of a recorded request body.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            tool.get("name")
                .or_else(|| tool.pointer("/function/name"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The tool results of a recorded request, as (is_error, text), in either wire format.
pub fn tool_results(body: &Value) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for message in messages(body) {
        match message["role"].as_str() {
            // OpenAI: one `tool` message per result; an error is marked by its text.
            Some("tool") => {
                let text = text_of(&message["content"]);
                out.push((text.starts_with("Error: "), text));
            }
            Some("user") => {
                if let Some(blocks) = message["content"].as_array() {
                    for block in blocks {
                        if block["type"] == "tool_result" {
                            out.push((
                                block["is_error"].as_bool().unwrap_or(false),
                                text_of(&block["content"]),
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
