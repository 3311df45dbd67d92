//! web_fetch against a local HTTP server started by each test.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tool_builtins::WebFetchConfig;

use crate::support::Env;

/// A tiny HTTP/1.1 server on `ip`: answers each path with a canned response.
async fn serve(ip: &str, other: Option<SocketAddr>) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(handle(stream, addr, other));
        }
    });
    addr
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn redirect(location: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

async fn handle(mut stream: TcpStream, me: SocketAddr, other: Option<SocketAddr>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let reply = match path.as_str() {
        "/html" => response(
            "200 OK",
            "text/html; charset=utf-8",
            "<html><head><title>T</title><style>body { color: red }</style><script>alert('x')</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul></body></html>",
        ),
        "/json" => response(
            "200 OK",
            "application/json",
            "{\"a\": [1, 2], \"b\": \"<x>\"}",
        ),
        "/text" => response("200 OK", "text/plain", "plain text\n  as it is\n"),
        "/png" => response("200 OK", "image/png", "\u{89}PNG...."),
        "/missing" => response("404 Not Found", "text/plain", "no such page"),
        "/broken" => response("500 Internal Server Error", "text/plain", "boom"),
        "/loop" => redirect("/loop"),
        "/hop" => redirect("/text"),
        "/to-other" => redirect(&format!("http://{}/text", other.unwrap_or(me))),
        "/to-localhost" => redirect(&format!("http://localhost:{}/text", me.port())),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data"),
        "/slow" => {
            // Never answer; the client's timeout must end the call.
            std::future::pending::<()>().await;
            Vec::new()
        }
        "/endless" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = vec![b'z'; 64 * 1024];
            // Streams until the client hangs up.
            while stream.write_all(&chunk).await.is_ok() {}
            return;
        }
        _ => response("404 Not Found", "text/plain", ""),
    };
    let _ = stream.write_all(&reply).await;
    let _ = stream.shutdown().await;
}

fn env_with(config: WebFetchConfig) -> Env {
    Env::with(|b| b.web_fetch_config(config))
}

fn loopback_allowed() -> WebFetchConfig {
    WebFetchConfig {
        allowed_private_hosts: vec!["127.0.0.1".to_owned()],
        timeout: Duration::from_secs(10),
        ..WebFetchConfig::default()
    }
}

fn normalise(text: &str, addr: SocketAddr) -> String {
    text.replace(&addr.to_string(), "[SERVER]")
}

#[tokio::test]
async fn html_becomes_text_without_scripts_or_styles() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(loopback_allowed());
    let out = env
        .seen("web_fetch", json!({"url": format!("http://{addr}/html")}))
        .await;
    assert!(
        !out.contains("alert") && !out.contains("color: red"),
        "{out}"
    );
    insta::assert_snapshot!(normalise(&out, addr));
}

#[tokio::test]
async fn json_and_text_come_as_they_are() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(loopback_allowed());
    let json_out = env
        .ok("web_fetch", json!({"url": format!("http://{addr}/json")}))
        .await;
    assert!(
        json_out.ends_with("{\"a\": [1, 2], \"b\": \"<x>\"}"),
        "{json_out}"
    );
    let text_out = env
        .ok("web_fetch", json!({"url": format!("http://{addr}/hop")}))
        .await;
    assert!(text_out.ends_with("plain text\n  as it is"), "{text_out}");
    assert!(text_out.starts_with(&format!("URL: http://{addr}/text\n")));
}

#[tokio::test]
async fn binary_is_refused() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(loopback_allowed());
    let err = env
        .err("web_fetch", json!({"url": format!("http://{addr}/png")}))
        .await;
    assert!(err.contains("binary content (image/png)"), "{err}");
}

#[tokio::test]
async fn client_and_server_errors_are_reported() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(loopback_allowed());
    let missing = env
        .seen(
            "web_fetch",
            json!({"url": format!("http://{addr}/missing")}),
        )
        .await;
    insta::assert_snapshot!("not_found", normalise(&missing, addr));
    let err = env
        .err("web_fetch", json!({"url": format!("http://{addr}/broken")}))
        .await;
    assert!(
        err.contains("HTTP 500 Internal Server Error") && err.contains("boom"),
        "{err}"
    );
}

#[tokio::test]
async fn the_size_cap_holds_while_streaming() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(WebFetchConfig {
        max_download_bytes: 100_000,
        max_text_chars: 1_000,
        ..loopback_allowed()
    });
    let out = env
        .ok(
            "web_fetch",
            json!({"url": format!("http://{addr}/endless")}),
        )
        .await;
    assert!(out.contains("chars truncated ...]"), "{out}");
    assert!(
        out.ends_with(
            "[... the response was cut at 100000 bytes; the rest was not downloaded ...]"
        )
    );
    assert!(out.chars().count() < 2_000);
}

#[tokio::test]
async fn slow_servers_time_out() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(WebFetchConfig {
        timeout: Duration::from_millis(300),
        ..loopback_allowed()
    });
    let err = env
        .err("web_fetch", json!({"url": format!("http://{addr}/slow")}))
        .await;
    assert!(err.contains("timed out"), "{err}");
}

#[tokio::test]
async fn redirects_are_limited() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(WebFetchConfig {
        max_redirects: 3,
        ..loopback_allowed()
    });
    let err = env
        .err("web_fetch", json!({"url": format!("http://{addr}/loop")}))
        .await;
    assert!(err.contains("redirected more than 3 times"), "{err}");
}

#[tokio::test]
async fn private_targets_are_refused_by_default() {
    let addr = serve("127.0.0.1", None).await;
    let env = env_with(WebFetchConfig::default());
    let url = format!("http://{addr}/text");
    let seen = env.seen("web_fetch", json!({"url": url})).await;
    insta::assert_snapshot!(normalise(&seen, addr));
    let err = env.err("web_fetch", json!({"url": url})).await;
    assert!(err.contains("refused"), "{err}");
    for url in [
        format!("http://localhost:{}/text", addr.port()),
        format!("http://[::1]:{}/text", addr.port()),
        format!("http://2130706433:{}/text", addr.port()),
        "http://169.254.169.254/latest/meta-data".to_owned(),
    ] {
        let err = env.err("web_fetch", json!({"url": url})).await;
        assert!(err.contains("refused"), "{url}: {err}");
    }
}

#[tokio::test]
async fn private_targets_are_refused_after_redirects() {
    let other = serve("127.0.0.2", None).await;
    let addr = serve("127.0.0.1", Some(other)).await;
    // Only 127.0.0.1 is allowed: a hop to another loopback address, to a name that resolves to
    // loopback, or to the metadata address is refused.
    let env = env_with(loopback_allowed());
    for path in ["to-other", "to-localhost", "to-metadata"] {
        let err = env
            .err("web_fetch", json!({"url": format!("http://{addr}/{path}")}))
            .await;
        assert!(err.contains("refused"), "{path}: {err}");
    }
}

#[tokio::test]
async fn allow_private_reaches_loopback_after_redirects() {
    let other = serve("127.0.0.2", None).await;
    let addr = serve("127.0.0.1", Some(other)).await;
    let env = env_with(WebFetchConfig {
        allow_private: true,
        ..WebFetchConfig::default()
    });
    let out = env
        .ok(
            "web_fetch",
            json!({"url": format!("http://{addr}/to-other")}),
        )
        .await;
    assert!(out.contains("plain text"), "{out}");
    let out = env
        .ok(
            "web_fetch",
            json!({"url": format!("http://{addr}/to-localhost")}),
        )
        .await;
    assert!(out.contains("plain text"), "{out}");
}

#[tokio::test]
async fn bad_urls() {
    let env = env_with(WebFetchConfig::default());
    let err = env.err("web_fetch", json!({"url": "not a url"})).await;
    assert!(err.contains("not a valid URL"), "{err}");
    let err = env
        .err("web_fetch", json!({"url": "file:///etc/passwd"}))
        .await;
    assert!(err.contains("only http and https"), "{err}");
}
