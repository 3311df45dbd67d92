//! grep.

use serde_json::json;

use crate::support::Env;

fn tree(env: &Env) {
    env.write(
        "src/main.rs",
        "fn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n",
    );
    env.write(
        "src/lib.rs",
        "/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    );
    env.write("notes.md", "TODO: add tests\n-v is a flag\n");
    env.write("target/gen.rs", "fn add() {}\n");
    env.write(".gitignore", "target/\n");
    env.write("data.bin", b"fn add\x00\x01\x02");
}

#[tokio::test]
async fn content_mode_shows_lines_with_numbers() {
    let env = Env::new();
    tree(&env);
    insta::assert_snapshot!(env.seen("grep", json!({"pattern": "fn \\w+"})).await);
}

#[tokio::test]
async fn files_and_count_modes() {
    let env = Env::new();
    tree(&env);
    let files = env
        .ok(
            "grep",
            json!({"pattern": "add", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(files, "notes.md\nsrc/lib.rs\nsrc/main.rs");
    let counts = env
        .seen("grep", json!({"pattern": "a", "output_mode": "count"}))
        .await;
    insta::assert_snapshot!(counts);
}

#[tokio::test]
async fn context_lines() {
    let env = Env::new();
    tree(&env);
    let out = env
        .seen(
            "grep",
            json!({"pattern": "a [+-] b", "context": 1, "include": "*.rs"}),
        )
        .await;
    insta::assert_snapshot!(out);
}

#[tokio::test]
async fn include_globs_and_case() {
    let env = Env::new();
    tree(&env);
    let out = env
        .ok("grep", json!({"pattern": "todo", "include": "*.rs"}))
        .await;
    assert_eq!(out, "No matches for todo in the working directory.");
    let out = env
        .ok(
            "grep",
            json!({"pattern": "todo", "case_insensitive": true, "include": "*.{md,txt}"}),
        )
        .await;
    assert_eq!(out, "notes.md:1:TODO: add tests");
    let out = env
        .ok(
            "grep",
            json!({"pattern": "add", "include": "src/**/*.rs", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(out, "src/lib.rs\nsrc/main.rs");
}

#[tokio::test]
async fn patterns_starting_with_a_dash_are_patterns() {
    let env = Env::new();
    tree(&env);
    let out = env.ok("grep", json!({"pattern": "-v"})).await;
    assert_eq!(out, "notes.md:2:-v is a flag");
}

#[tokio::test]
async fn invalid_regexes_are_errors() {
    let env = Env::new();
    tree(&env);
    insta::assert_snapshot!(env.seen("grep", json!({"pattern": "fn (main"})).await);
    let err = env.err("grep", json!({"pattern": ""})).await;
    assert!(err.contains("empty"), "{err}");
}

#[tokio::test]
async fn gitignored_and_binary_files_are_skipped() {
    let env = Env::new();
    tree(&env);
    let out = env
        .ok(
            "grep",
            json!({"pattern": "fn add", "output_mode": "files_with_matches"}),
        )
        .await;
    assert_eq!(out, "src/lib.rs");
}

#[tokio::test]
async fn a_cap_with_and_n_more() {
    let env = Env::new();
    let text: String = (0..250).map(|n| format!("match {n}\n")).collect();
    env.write("many.txt", text);
    let out = env.ok("grep", json!({"pattern": "match"})).await;
    assert_eq!(out.lines().count(), 101);
    assert!(out.ends_with(
        "[... and 150 more lines; narrow the search with path, include or a more specific pattern, or raise limit]"
    ), "{out}");
    let out = env
        .ok("grep", json!({"pattern": "match", "limit": 10}))
        .await;
    assert!(out.contains("and 240 more lines"));
}

#[tokio::test]
async fn a_single_file_and_paths_outside() {
    let env = Env::new();
    tree(&env);
    let out = env
        .ok("grep", json!({"pattern": "sub", "path": "src/lib.rs"}))
        .await;
    assert_eq!(out, "src/lib.rs:6:pub fn sub(a: i32, b: i32) -> i32 {");
    let err = env
        .err("grep", json!({"pattern": "x", "path": "/etc"}))
        .await;
    assert!(err.contains("outside the allowed directories"), "{err}");
}
