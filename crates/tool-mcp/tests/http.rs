//! A streamable HTTP server on loopback.

use std::time::{Duration, Instant};

use serde_json::json;
use tool_mcp::ServerConfig;

use crate::support::*;

#[tokio::test]
async fn everything_over_streamable_http() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .arg(npm_server("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Poll until the server listens.
    let deadline = Instant::now() + DEADLINE;
    let mut interval = tokio::time::interval(Duration::from_millis(20));
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the http server never listened");
        interval.tick().await;
    }
    let (manager, registry) = start(
        vec![(
            "web",
            ServerConfig::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                headers: [("X-Test".to_owned(), "1".to_owned())].into(),
            },
        )],
        options(),
    );
    let states = settled(&manager).await;
    assert!(connected(&states, "web") > 5, "{states:?}");
    let echoed = call(&registry, "mcp__web__echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(echoed.joined_text(), "Echo: over http");
    drop(manager);
    child.kill().await.unwrap();
}
