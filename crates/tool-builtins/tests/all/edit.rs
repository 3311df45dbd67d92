//! edit_file.

use serde_json::json;

use crate::support::Env;

async fn read_then(env: &Env, path: &str) {
    env.ok("read_file", json!({"path": path})).await;
}

#[tokio::test]
async fn replaces_a_unique_match_and_shows_a_diff() {
    let env = Env::new();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    env.write("f.txt", text);
    read_then(&env, "f.txt").await;
    let seen = env
        .seen(
            "edit_file",
            json!({"path": "f.txt", "old_string": "line 5\n", "new_string": "line five\nline 5b\n"}),
        )
        .await;
    insta::assert_snapshot!(seen);
    assert!(
        env.read("f.txt")
            .contains("line 4\nline five\nline 5b\nline 6\n")
    );
}

#[tokio::test]
async fn no_match_and_several_matches_are_distinct_errors() {
    let env = Env::new();
    env.write("f.txt", "a = 1\nb = 1\na = 1\n");
    read_then(&env, "f.txt").await;
    let none = env
        .seen(
            "edit_file",
            json!({"path": "f.txt", "old_string": "c = 1", "new_string": "c = 2"}),
        )
        .await;
    let several = env
        .seen(
            "edit_file",
            json!({"path": "f.txt", "old_string": "a = 1", "new_string": "a = 2"}),
        )
        .await;
    insta::assert_snapshot!("no_match", none);
    insta::assert_snapshot!("several_matches", several);
    assert_eq!(env.read("f.txt"), "a = 1\nb = 1\na = 1\n");
}

#[tokio::test]
async fn replace_all_changes_every_occurrence() {
    let env = Env::new();
    env.write("f.txt", "a = 1\nb = 1\na = 1\n");
    read_then(&env, "f.txt").await;
    let out = env
        .ok(
            "edit_file",
            json!({"path": "f.txt", "old_string": "a = 1", "new_string": "a = 2", "replace_all": true}),
        )
        .await;
    assert!(out.starts_with("Edited f.txt (2 replacements)."), "{out}");
    assert_eq!(env.read("f.txt"), "a = 2\nb = 1\na = 2\n");
}

#[tokio::test]
async fn curly_and_straight_quotes_match_alike() {
    let env = Env::new();
    env.write(
        "doc.md",
        "He said \u{201C}don\u{2019}t\u{201D}.\nKeep 'this'.\n",
    );
    read_then(&env, "doc.md").await;
    env.ok(
        "edit_file",
        json!({"path": "doc.md", "old_string": "\"don't\"", "new_string": "\"do it\""}),
    )
    .await;
    env.ok(
        "edit_file",
        json!({"path": "doc.md", "old_string": "\u{2018}this\u{2019}", "new_string": "'that'"}),
    )
    .await;
    assert_eq!(
        env.read("doc.md"),
        "He said \u{201C}do it\u{201D}.\nKeep 'that'.\n"
    );
}

#[tokio::test]
async fn crlf_files_stay_crlf() {
    let env = Env::new();
    env.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    read_then(&env, "win.txt").await;
    let out = env
        .ok(
            "edit_file",
            json!({"path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3"}),
        )
        .await;
    assert!(!out.contains('\r'));
    assert_eq!(env.read("win.txt"), "one\r\n2\r\n3\r\n");
}

#[tokio::test]
async fn edits_need_a_fresh_read_but_not_a_second_one() {
    let env = Env::new();
    env.write("f.txt", "x = 1\ny = 2\n");
    let err = env
        .err(
            "edit_file",
            json!({"path": "f.txt", "old_string": "x = 1", "new_string": "x = 10"}),
        )
        .await;
    assert!(err.contains("has not been read in this session"), "{err}");
    read_then(&env, "f.txt").await;
    env.ok(
        "edit_file",
        json!({"path": "f.txt", "old_string": "x = 1", "new_string": "x = 10"}),
    )
    .await;
    env.ok(
        "edit_file",
        json!({"path": "f.txt", "old_string": "y = 2", "new_string": "y = 20"}),
    )
    .await;
    assert_eq!(env.read("f.txt"), "x = 10\ny = 20\n");
    env.write("f.txt", "x = 10\ny = 20\nz = 3\n");
    let err = env
        .err(
            "edit_file",
            json!({"path": "f.txt", "old_string": "z = 3", "new_string": "z = 30"}),
        )
        .await;
    assert!(err.contains("changed on disk"), "{err}");
}

#[tokio::test]
async fn input_mistakes() {
    let env = Env::new();
    env.write("f.txt", "x\n");
    read_then(&env, "f.txt").await;
    let err = env
        .err(
            "edit_file",
            json!({"path": "f.txt", "old_string": "x", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("the same"), "{err}");
    let err = env
        .err(
            "edit_file",
            json!({"path": "f.txt", "old_string": "", "new_string": "y"}),
        )
        .await;
    assert!(err.contains("old_string is empty"), "{err}");
    let err = env
        .err(
            "edit_file",
            json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("does not exist"), "{err}");
    let err = env
        .err(
            "edit_file",
            json!({"path": "../outside/f.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("outside the allowed directories"), "{err}");
}

#[tokio::test]
async fn an_empty_old_string_creates_a_new_file() {
    let env = Env::new();
    let out = env
        .ok(
            "edit_file",
            json!({"path": "new/file.txt", "old_string": "", "new_string": "hello\n"}),
        )
        .await;
    assert!(out.starts_with("Created new/file.txt."), "{out}");
    assert_eq!(env.read("new/file.txt"), "hello\n");
}

#[tokio::test]
async fn non_utf8_files_are_refused() {
    let env = Env::new();
    env.write("latin1.txt", b"caf\xe9\n");
    read_then(&env, "latin1.txt").await;
    let err = env
        .err(
            "edit_file",
            json!({"path": "latin1.txt", "old_string": "caf", "new_string": "tea"}),
        )
        .await;
    assert!(err.contains("not valid UTF-8"), "{err}");
}
