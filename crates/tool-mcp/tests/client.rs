//! Listing and calling tools of the reference servers.

use serde_json::json;
use tool_core::{Content, ExecutionEvent, Loading, Origin};

use crate::support::*;

#[tokio::test]
async fn filesystem_reads_a_file_in_its_allowed_directory() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let file = root.join("hello.txt");
    std::fs::write(&file, "hello from a temp file\n").unwrap();
    let (manager, registry) = start(
        vec![("fs", node("server-filesystem", &[root.to_str().unwrap()]))],
        options(),
    );
    let states = settled(&manager).await;
    assert!(connected(&states, "fs") > 5, "{states:?}");
    let tool = registry.get("mcp__fs__read_text_file").unwrap();
    let spec = tool.tool().spec();
    assert_eq!(
        spec.origin,
        Origin::Mcp {
            server: "fs".into(),
            tool: "read_text_file".into()
        }
    );
    assert_eq!(spec.loading, Loading::Defer);
    assert!(spec.input_schema["properties"]["path"].is_object());
    assert!(tool.tool().info(&json!({})).unwrap().is_read_only());
    assert!(tool.tool().info(&json!({})).unwrap().is_concurrency_safe());
    let write = registry.get("mcp__fs__write_file").unwrap();
    assert!(!write.tool().info(&json!({})).unwrap().is_read_only());

    let output = call(
        &registry,
        "mcp__fs__read_text_file",
        json!({"path": file.to_str().unwrap()}),
    )
    .await
    .unwrap();
    assert!(!output.is_error);
    assert!(output.joined_text().contains("hello from a temp file"));

    let outside = call(
        &registry,
        "mcp__fs__read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await
    .unwrap();
    assert!(outside.is_error, "{outside:?}");
}

#[tokio::test]
async fn memory_creates_entities_and_reads_the_graph() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let mut server = node("server-memory", &[]);
    if let tool_mcp::ServerConfig::Stdio { env, .. } = &mut server {
        env.insert(
            "MEMORY_FILE_PATH".into(),
            memory_file.to_string_lossy().into_owned(),
        );
    }
    let (manager, registry) = start(vec![("memory", server)], options());
    let states = settled(&manager).await;
    assert!(connected(&states, "memory") >= 9, "{states:?}");
    let created = call(
        &registry,
        "mcp__memory__create_entities",
        json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}),
    )
    .await
    .unwrap();
    assert!(!created.is_error, "{created:?}");
    let graph = call(&registry, "mcp__memory__read_graph", json!({}))
        .await
        .unwrap();
    assert!(!graph.is_error);
    let text = graph.joined_text();
    assert!(
        text.contains("Ada") && text.contains("wrote the first program"),
        "{text}"
    );
}

#[tokio::test]
async fn everything_echoes_adds_and_reports_progress() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let (manager, registry) = start(
        vec![("everything", node("server-everything", &["stdio"]))],
        options(),
    );
    let states = settled(&manager).await;
    assert!(connected(&states, "everything") > 5, "{states:?}");

    let echoed = call(&registry, "mcp__everything__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(echoed.joined_text(), "Echo: hi");

    let sum = call(
        &registry,
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 40}),
    )
    .await
    .unwrap();
    assert!(sum.joined_text().contains("42"), "{sum:?}");

    let image = call(&registry, "mcp__everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, Content::Image { media_type, .. } if media_type == "image/png")),
        "{image:?}"
    );

    let name = "mcp__everything__trigger-long-running-operation";
    let tool = registry.get(name).unwrap().tool().clone();
    let (ctx, mut events) = context(name);
    let output = tool
        .call(json!({"duration": 0.3, "steps": 3}), &ctx)
        .await
        .unwrap();
    assert!(
        output
            .joined_text()
            .contains("Long running operation completed")
    );
    drop(ctx);
    let mut progress = Vec::new();
    while let Some(event) = events.recv().await {
        if let ExecutionEvent::Progress {
            progress: p, total, ..
        } = event
        {
            progress.push((p, total));
        }
    }
    assert_eq!(
        progress,
        vec![
            (Some(1.0), Some(3.0)),
            (Some(2.0), Some(3.0)),
            (Some(3.0), Some(3.0))
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_returns_promptly() {
    if !external_tests(&[External::NpmServers]) {
        return;
    }
    let (manager, registry) = start(
        vec![("everything", node("server-everything", &["stdio"]))],
        options(),
    );
    settled(&manager).await;
    let name = "mcp__everything__trigger-long-running-operation";
    let tool = registry.get(name).unwrap().tool().clone();
    let (ctx, mut events) = context(name);
    let cancel = ctx.cancellation().clone();
    let call =
        tokio::spawn(async move { tool.call(json!({"duration": 30, "steps": 30}), &ctx).await });
    // Cancel once the server has shown it is working.
    while let Some(event) = events.recv().await {
        if matches!(event, ExecutionEvent::Progress { .. }) {
            break;
        }
    }
    cancel.cancel();
    let result = tokio::time::timeout(std::time::Duration::from_secs(5), call)
        .await
        .expect("the cancelled call did not return")
        .unwrap();
    assert_eq!(result, Err(tool_core::ToolError::Cancelled));
    // The connection is still usable afterwards.
    let echoed = call_echo(&registry).await;
    assert_eq!(echoed, "Echo: still here");
}

async fn call_echo(registry: &tool_core::ToolRegistry) -> String {
    call(
        registry,
        "mcp__everything__echo",
        json!({"message": "still here"}),
    )
    .await
    .unwrap()
    .joined_text()
}

#[tokio::test]
async fn list_changed_updates_the_registry_in_place() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let (manager, registry) = start(
        vec![(
            "grow",
            stdio(&venv_python(), &[&fixture!("list_changed_server.py")]),
        )],
        options(),
    );
    let states = settled(&manager).await;
    assert_eq!(connected(&states, "grow"), 1, "{states:?}");
    assert_eq!(
        manager.instructions().get("grow").map(String::as_str),
        Some("Grows a tool on demand: call grow, then grown."),
        "the instructions the server returned at initialize"
    );
    let mut changes = manager.subscribe();
    let grew = call(&registry, "mcp__grow__grow", json!({})).await.unwrap();
    assert_eq!(grew.joined_text(), "grew");
    let change = tokio::time::timeout(DEADLINE, changes.recv())
        .await
        .expect("no registry change after list_changed")
        .unwrap();
    assert_eq!(change.server, "grow");
    assert_eq!(change.added, vec!["mcp__grow__grown".to_owned()]);
    assert!(change.removed.is_empty());
    assert_eq!(
        registry.names(),
        vec!["mcp__grow__grow".to_owned(), "mcp__grow__grown".to_owned()]
    );
    let grown = call(&registry, "mcp__grow__grown", json!({}))
        .await
        .unwrap();
    assert_eq!(grown.joined_text(), "grown");
    assert_eq!(
        manager.states()["grow"],
        tool_mcp::ServerState::Connected { tools: 2 }
    );
}
