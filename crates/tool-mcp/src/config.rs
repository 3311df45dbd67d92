//! The `.mcp.json` format: `{"mcpServers": {"name": {...}}}`, with `${VAR}` expansion.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::McpError;

/// How to reach one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables, added to the inherited environment.
        env: BTreeMap<String, String>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Extra request headers (such as `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// A parsed `.mcp.json`: servers by name, in name order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct McpConfig {
    /// The servers, by their configured name.
    pub servers: BTreeMap<String, ServerConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl McpConfig {
    /// Reads and parses a `.mcp.json` file, expanding `${VAR}` from the process environment.
    pub fn load(path: &Path) -> Result<Self, McpError> {
        let text = std::fs::read_to_string(path).map_err(|source| McpError::ReadConfig {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, |name| std::env::var(name).ok()).map_err(|err| match err {
            McpError::InvalidConfig {
                location: None,
                reason,
            } => McpError::InvalidConfig {
                location: Some(path.display().to_string()),
                reason,
            },
            other => other,
        })
    }

    /// Parses `.mcp.json` text; `lookup` resolves `${VAR}` references.
    pub fn parse(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, McpError> {
        let raw: RawFile = serde_json::from_str(text).map_err(|err| McpError::InvalidConfig {
            location: None,
            reason: err.to_string(),
        })?;
        let servers = raw
            .mcp_servers
            .into_iter()
            .map(|(name, server)| {
                let config = server.into_config(&name, &lookup)?;
                Ok((name, config))
            })
            .collect::<Result<_, McpError>>()?;
        Ok(Self { servers })
    }
}

impl RawServer {
    /// The server's entry as a [`ServerConfig`], its `${VAR}` references expanded.
    fn into_config(
        self,
        name: &str,
        lookup: &impl Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, McpError> {
        let invalid = |reason: &str| McpError::InvalidConfig {
            location: None,
            reason: format!("server {name}: {reason}"),
        };
        let expand = |value: &str| expand_vars(value, lookup, name);
        let expand_map = |map: &BTreeMap<String, String>| {
            map.iter()
                .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                .collect::<Result<BTreeMap<_, _>, McpError>>()
        };
        let kind =
            self.kind
                .as_deref()
                .unwrap_or(if self.url.is_some() { "http" } else { "stdio" });
        match kind {
            "stdio" => {
                let command = self
                    .command
                    .as_deref()
                    .ok_or_else(|| invalid("a stdio server needs a \"command\""))?;
                if self.url.is_some() {
                    return Err(invalid("a stdio server takes no \"url\""));
                }
                Ok(ServerConfig::Stdio {
                    command: expand(command)?,
                    args: self
                        .args
                        .iter()
                        .map(|a| expand(a))
                        .collect::<Result<_, _>>()?,
                    env: expand_map(&self.env)?,
                })
            }
            "http" | "streamable-http" | "streamable_http" => {
                let url = self
                    .url
                    .as_deref()
                    .ok_or_else(|| invalid("an http server needs a \"url\""))?;
                if self.command.is_some() {
                    return Err(invalid("an http server takes no \"command\""));
                }
                Ok(ServerConfig::Http {
                    url: expand(url)?,
                    headers: expand_map(&self.headers)?,
                })
            }
            other => Err(invalid(&format!(
                "unsupported type \"{other}\" (use \"stdio\" or \"http\")"
            ))),
        }
    }
}

/// Expands `${VAR}` and `${VAR:-default}` in `value`. A `$` not followed by `{` is kept as is.
fn expand_vars(
    value: &str,
    lookup: &impl Fn(&str) -> Option<String>,
    server: &str,
) -> Result<String, McpError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(McpError::InvalidConfig {
                location: None,
                reason: format!("server {server}: unclosed \"${{\" in {value:?}"),
            });
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (lookup(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(McpError::MissingVariable {
                    server: server.to_owned(),
                    variable: name.to_owned(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "TOKEN" => Some("s3cret".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn parses_stdio_and_http_servers_with_expansion() {
        let text = r#"{"mcpServers": {
            "zeta": {"type": "http", "url": "https://x.invalid/${PATH_PART:-mcp}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "fs": {"command": "npx", "args": ["-y", "server", "${HOME}/src"], "env": {"A": "${UNSET:-d}"}}
        }}"#;
        let config = McpConfig::parse(text, env).unwrap();
        let names: Vec<_> = config.servers.keys().cloned().collect();
        assert_eq!(names, ["fs", "zeta"]);
        assert_eq!(
            config.servers["fs"],
            ServerConfig::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server".into(), "/home/u/src".into()],
                env: BTreeMap::from([("A".into(), "d".into())]),
            }
        );
        assert_eq!(
            config.servers["zeta"],
            ServerConfig::Http {
                url: "https://x.invalid/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer s3cret".into())]),
            }
        );
    }

    #[test]
    fn bad_files_give_clear_errors() {
        let cases = [
            ("not json", "invalid mcp config: expected"),
            (
                r#"{"mcpServers": {"a": {}}}"#,
                "server a: a stdio server needs a \"command\"",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "http"}}}"#,
                "server a: an http server needs a \"url\"",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "u"}}}"#,
                "unsupported type \"sse\"",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "bogus": 1}}}"#,
                "unknown field `bogus`",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "${NOPE}"}}}"#,
                "environment variable NOPE is not set",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "${NOPE"}}}"#,
                "unclosed",
            ),
        ];
        for (text, wanted) in cases {
            let err = McpConfig::parse(text, env).unwrap_err().to_string();
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        std::fs::write(&path, "{").unwrap();
        let err = McpConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains(".mcp.json"), "{err}");
        let err = McpConfig::load(&dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read mcp config"), "{err}");
    }
}
