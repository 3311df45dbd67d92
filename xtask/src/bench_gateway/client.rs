//! The gateway under test (the real `agent-cli mcp serve`, in its own process, fronting one
//! upstream server) and the two ways of speaking to it: newline-delimited JSON-RPC on its stdin
//! and stdout, and stateless streamable HTTP (protocol 2026-07-28) on loopback.

use std::path::PathBuf;
use std::process::Stdio as ChildStdio;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::upstream::{SERVER, Source};

/// The protocol generation the HTTP client speaks: no session, every request stands alone.
const PROTOCOL: &str = "2026-07-28";

/// How long a gateway may take to connect to its upstream server and start serving.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// What starting a gateway needs.
pub(crate) struct Setup {
    /// The `agent-cli` binary.
    pub(crate) gateway: PathBuf,
    /// This binary, which serves the upstream tools (`bench-upstream`).
    pub(crate) upstream: PathBuf,
    /// The benchmark sets.
    pub(crate) data: PathBuf,
    /// A scratch folder: the gateway's home and working directory, its configuration files.
    pub(crate) scratch: PathBuf,
}

/// A running gateway, killed when dropped.
pub(crate) struct Gateway {
    child: Child,
    pid: u32,
}

impl Gateway {
    /// `agent-cli mcp serve --config <a file naming the upstream> --allow mcp__bench`, with
    /// `extra` arguments, in the scratch folder with its own home.
    fn command(setup: &Setup, source: &Source, extra: &[&str]) -> anyhow::Result<Command> {
        let home = setup.scratch.join("home");
        std::fs::create_dir_all(&home)?;
        let config = setup.scratch.join("gateway.json");
        let servers = json!({"mcpServers": {SERVER: {
            "command": setup.upstream,
            "args": source.args(&setup.data),
        }}});
        std::fs::write(&config, servers.to_string())?;
        let mut command = Command::new(&setup.gateway);
        command
            .args(["mcp", "serve", "--config"])
            .arg(&config)
            .args(["--allow", &format!("mcp__{SERVER}")])
            .args(extra)
            .current_dir(&setup.scratch)
            .env("HOME", &home)
            .env("AGENT_CLI_HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .stdin(ChildStdio::null())
            .stdout(ChildStdio::null())
            .stderr(ChildStdio::piped())
            .kill_on_drop(true);
        Ok(command)
    }

    fn spawn(
        mut command: Command,
    ) -> anyhow::Result<(Self, Lines<BufReader<tokio::process::ChildStderr>>)> {
        let mut child = command.spawn().context("starting agent-cli mcp serve")?;
        let pid = child.id().context("the gateway has no process id")?;
        let stderr = child.stderr.take().context("the gateway's stderr")?;
        Ok((Self { child, pid }, BufReader::new(stderr).lines()))
    }

    /// A gateway over loopback HTTP with `extra` arguments, and its URL once it serves.
    pub(crate) async fn http(
        setup: &Setup,
        source: &Source,
        extra: &[&str],
    ) -> anyhow::Result<(Self, String)> {
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend(extra);
        let command = Self::command(setup, source, &args)?;
        let (gateway, mut lines) = Self::spawn(command)?;
        let url = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.strip_prefix("serving MCP on ") {
                    return Ok(url.to_owned());
                }
                eprintln!("gateway: {line}");
            }
            anyhow::bail!("the gateway ended without serving")
        })
        .await
        .context("the gateway did not start serving in time")??;
        drain(lines);
        Ok((gateway, url))
    }

    /// A gateway over stdio, and a client that has initialized it.
    pub(crate) async fn stdio(
        setup: &Setup,
        source: &Source,
    ) -> anyhow::Result<(Self, StdioClient)> {
        let mut command = Self::command(setup, source, &[])?;
        command
            .stdin(ChildStdio::piped())
            .stdout(ChildStdio::piped());
        let (mut gateway, lines) = Self::spawn(command)?;
        drain(lines);
        let stdin = gateway.child.stdin.take().context("the gateway's stdin")?;
        let stdout = gateway
            .child
            .stdout
            .take()
            .context("the gateway's stdout")?;
        let mut client = StdioClient {
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 0,
        };
        tokio::time::timeout(START_TIMEOUT, client.initialize())
            .await
            .context("the gateway did not answer initialize in time")??;
        Ok((gateway, client))
    }

    /// The gateway process's resident memory (VmRSS), in KiB.
    pub(crate) fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("reading the gateway's /proc status")?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS in the gateway's /proc status")
    }
}

/// Keeps reading the gateway's stderr so that it never blocks on a full pipe; prints what it
/// says about errors.
fn drain(mut lines: Lines<BufReader<tokio::process::ChildStderr>>) {
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.to_lowercase().contains("error") {
                eprintln!("gateway: {line}");
            }
        }
    });
}

/// A JSON-RPC answer's `result`, or an error with its `error`.
fn result_of(answer: Value) -> anyhow::Result<Value> {
    match answer.get("error") {
        Some(error) => anyhow::bail!("the gateway answered an error: {error}"),
        None => answer
            .get("result")
            .cloned()
            .with_context(|| format!("an answer without a result: {answer}")),
    }
}

/// One stdio session with the gateway (requests one at a time).
pub(crate) struct StdioClient {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl StdioClient {
    /// `initialize` (an earlier protocol, as most stdio clients speak) and `initialized`.
    async fn initialize(&mut self) -> anyhow::Result<()> {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-gateway", "version": "0"},
        });
        self.request("initialize", params).await?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
    }

    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// One request and its result (notifications in between are skipped).
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        while let Some(line) = self.lines.next_line().await? {
            let answer: Value = serde_json::from_str(&line)
                .with_context(|| format!("the gateway wrote something not JSON: {line}"))?;
            if answer.get("id") == Some(&json!(id)) {
                return result_of(answer);
            }
        }
        anyhow::bail!("the gateway closed its stdout")
    }
}

/// A client of the gateway over stateless HTTP.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    url: String,
}

impl HttpClient {
    /// A client with its own connection pool.
    pub(crate) fn new(url: &str) -> anyhow::Result<Self> {
        tool_core::net::install_crypto_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .context("building the HTTP client")?;
        Ok(Self {
            client,
            url: url.to_owned(),
        })
    }

    /// One request on protocol 2026-07-28 (its headers and `_meta` say everything): its result
    /// and the size of the answer's body in bytes.
    pub(crate) async fn request(
        &self,
        id: u64,
        method: &str,
        mut params: Value,
    ) -> anyhow::Result<(Value, usize)> {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL)
            .header("Mcp-Method", method);
        if let Some(name) = params["name"].as_str() {
            request = request.header("Mcp-Name", name);
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = request.body(body.to_string()).send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        anyhow::ensure!(
            status.is_success(),
            "HTTP {status}: {}",
            String::from_utf8_lossy(&bytes)
        );
        let answer: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("not JSON: {}", String::from_utf8_lossy(&bytes)))?;
        Ok((result_of(answer)?, bytes.len()))
    }
}

/// Either client, for what both transports measure.
pub(crate) enum Client {
    Stdio(StdioClient),
    Http(HttpClient, u64),
}

impl Client {
    /// One request's result.
    pub(crate) async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        match self {
            Self::Stdio(client) => client.request(method, params).await,
            Self::Http(client, id) => {
                *id += 1;
                Ok(client.request(*id, method, params).await?.0)
            }
        }
    }
}

/// The text of a `tools/call` result, and whether it is an error result.
pub(crate) fn call_text(result: &Value) -> (String, bool) {
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (text, result["isError"] == json!(true))
}

/// The tools a `tool_search` answer names, in its order (each is a `## name` heading).
pub(crate) fn ranked(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter(|name| tool_core::is_valid_tool_name(name))
        .map(str::to_owned)
        .collect()
}

/// `tool_search` through the gateway: the tools it names, in order (none for an error result,
/// as for a query it refuses).
pub(crate) async fn search(
    client: &mut Client,
    query: &str,
    limit: usize,
) -> anyhow::Result<Vec<String>> {
    let params =
        json!({"name": "tool_search", "arguments": {"query": query, "max_results": limit}});
    let result = client.request("tools/call", params).await?;
    Ok(ranked(&call_text(&result).0))
}
