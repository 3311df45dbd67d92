//! glob.

use serde_json::json;

use crate::support::{Env, set_age};

fn tree(env: &Env) {
    for (path, age) in [
        ("src/main.rs", 30),
        ("src/lib.rs", 20),
        ("src/deep/mod.rs", 10),
        ("README.md", 40),
        ("target/debug/build.rs", 5),
        (".github/ci.yml", 50),
    ] {
        let file = env.write(path, "x\n");
        set_age(&file, age);
    }
    env.write(".gitignore", "target/\n");
}

#[tokio::test]
async fn matches_names_at_any_depth_newest_first_and_respects_gitignore() {
    let env = Env::new();
    tree(&env);
    insta::assert_snapshot!(env.seen("glob", json!({"pattern": "*.rs"})).await);
}

#[tokio::test]
async fn path_patterns_and_subdirectories() {
    let env = Env::new();
    tree(&env);
    let out = env.ok("glob", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(out, "src/lib.rs\nsrc/main.rs");
    let out = env
        .ok("glob", json!({"pattern": "**/*.rs", "path": "src/deep"}))
        .await;
    assert_eq!(out, "src/deep/mod.rs");
    let out = env.ok("glob", json!({"pattern": "*.yml"})).await;
    assert_eq!(out, ".github/ci.yml");
    let out = env.ok("glob", json!({"pattern": "*.py"})).await;
    assert_eq!(out, "No files match *.py in the working directory.");
}

#[tokio::test]
async fn caps_with_and_n_more() {
    let env = Env::new();
    for n in 0..120 {
        env.write(&format!("many/f{n:03}.txt"), "x");
    }
    let out = env.ok("glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(out.lines().count(), 101);
    assert!(out.ends_with("[... and 20 more files; narrow the pattern or path to see them]"));
    let out = env
        .ok("glob", json!({"pattern": "*.txt", "limit": 5}))
        .await;
    assert!(out.contains("and 115 more files"));
}

#[tokio::test]
async fn bad_patterns_and_paths() {
    let env = Env::new();
    let err = env.err("glob", json!({"pattern": "src/[a"})).await;
    assert!(err.contains("not a valid glob"), "{err}");
    let err = env
        .err("glob", json!({"pattern": "*", "path": "../outside"}))
        .await;
    assert!(err.contains("outside the allowed directories"), "{err}");
    let err = env
        .err("glob", json!({"pattern": "*", "path": "missing"}))
        .await;
    assert!(err.contains("does not exist"), "{err}");
}
