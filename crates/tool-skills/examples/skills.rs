//! Skills from a folder: the listing for the system prompt, a suggestion for a user's message,
//! and the `skill` tool loading one through the executor, which grants the skill's
//! `allowed-tools` until the turn ends.
//!
//! Run with `cargo run -p tool-skills --example skills`.

use std::sync::Arc;

use serde_json::json;
use tool_core::{
    CancellationToken, Executor, PermissionRules, Permissions, Session, ToolCall, ToolRegistry,
};
use tool_skills::{SkillRoot, SkillSession, SkillSet, SkillTool, discover};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    for (name, description, allowed, body) in [
        (
            "release",
            "Cut a release: bump the version, tag it and publish the crates.",
            "allowed-tools: shell(cargo publish:*)\n",
            "1. Bump the version in Cargo.toml.\n2. Tag it.\n3. Run `cargo publish`.\n",
        ),
        (
            "changelog",
            "Write the changelog entry for the commits since the last tag.",
            "",
            "Read `git log` since the last tag and group the commits by kind.\n",
        ),
    ] {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir)?;
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: \"{description}\"\n{allowed}---\n{body}"),
        )?;
    }

    let found = discover(&[SkillRoot::project(root.path())]);
    for warning in &found.warnings {
        eprintln!("warning: {warning}");
    }
    let set = Arc::new(SkillSet::new(found.skills));
    println!(
        "listing for the system prompt:\n{}",
        set.listing(2_000).unwrap_or_default()
    );

    let permissions = Arc::new(Permissions::new(PermissionRules::default()));
    let session = Arc::new(
        SkillSession::new(Arc::clone(&set)).granting_in(
            Arc::clone(&permissions),
            // Every skill here is trusted to grant its tools.
            set.iter()
                .map(|skill| skill.name.clone())
                .collect::<Vec<_>>(),
        ),
    );
    let suggested = session.suggest("please publish a new release of the crates");
    println!(
        "suggested: {:?}",
        suggested.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    let registry = Arc::new(ToolRegistry::new());
    registry.register(SkillTool::new(Arc::clone(&session)))?;
    let tool_session = Arc::new(Session::new(
        "example",
        root.path().join("session"),
        root.path(),
    ));
    let executor = Executor::builder(registry, tool_session)
        .permissions(Arc::clone(&permissions))
        .build();
    let loaded = executor
        .execute(
            ToolCall::new("call_1", "skill", json!({"name": "release"})),
            CancellationToken::new(),
            None,
        )
        .await;
    println!("\nskill release:\n{}", loaded.text());
    let grants = || -> Vec<String> {
        permissions
            .grants()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    println!("granted until the turn ends: {:?}", grants());
    session.end_turn();
    println!("after the turn: {:?}", grants());
    assert!(loaded.text().contains("cargo publish"));
    Ok(())
}
