//! read_file.

use base64::Engine;
use serde_json::json;
use tool_core::{Content, PermissionCheck};

use crate::support::Env;

#[tokio::test]
async fn numbers_lines_like_cat_n() {
    let env = Env::new();
    env.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    insta::assert_snapshot!(env.seen("read_file", json!({"path": "src/main.rs"})).await);
}

#[tokio::test]
async fn offset_and_limit_pick_a_window() {
    let env = Env::new();
    let text: String = (1..=50).map(|n| format!("line {n}\n")).collect();
    env.write("long.txt", text);
    let out = env
        .ok(
            "read_file",
            json!({"path": "long.txt", "offset": 10, "limit": 3}),
        )
        .await;
    insta::assert_snapshot!(out);
    let err = env
        .err("read_file", json!({"path": "long.txt", "offset": 51}))
        .await;
    assert!(
        err.contains("past the end") && err.contains("50 lines"),
        "{err}"
    );
    let err = env
        .err("read_file", json!({"path": "long.txt", "offset": 0}))
        .await;
    assert!(err.contains("1-based"), "{err}");
}

#[tokio::test]
async fn defaults_to_2000_lines() {
    let env = Env::new();
    let text: String = (1..=2500).map(|n| format!("{n}\n")).collect();
    env.write("big.txt", text);
    let out = env.ok("read_file", json!({"path": "big.txt"})).await;
    assert!(out.contains("  2000\t2000\n"));
    assert!(!out.contains("  2001\t"));
    assert!(out.contains("Showing lines 1-2000 of 2500. Pass offset 2001"));
}

#[tokio::test]
async fn long_lines_are_cut() {
    let env = Env::new();
    env.write("wide.txt", format!("{}\nshort\n", "x".repeat(2500)));
    let out = env.ok("read_file", json!({"path": "wide.txt"})).await;
    assert!(out.contains("... [line cut: 500 more characters]"), "{out}");
    assert!(out.contains("     2\tshort"));
}

#[tokio::test]
async fn binary_files_are_refused() {
    let env = Env::new();
    env.write("blob.bin", b"\x7fELF\x02\x01\x00\x00\x00binary");
    let err = env.err("read_file", json!({"path": "blob.bin"})).await;
    assert!(err.contains("binary file"), "{err}");
}

#[tokio::test]
async fn invalid_utf8_is_read_without_panic() {
    let env = Env::new();
    env.write("latin1.txt", b"caf\xe9 au lait\nna\xefve\n");
    let out = env.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert!(out.contains("     1\tcaf\u{FFFD} au lait"), "{out}");
    assert!(out.contains("not valid UTF-8"));
}

#[tokio::test]
async fn images_come_back_as_image_blocks() {
    let env = Env::new();
    let png = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pixel.png"
    ))
    .unwrap();
    env.write("pixel.png", &png);
    let out = env
        .call("read_file", json!({"path": "pixel.png"}))
        .await
        .unwrap();
    assert_eq!(out.content.len(), 2);
    match &out.content[1] {
        Content::Image { media_type, data } => {
            assert_eq!(media_type, "image/png");
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap();
            assert_eq!(decoded, png);
        }
        other => panic!("expected an image, got {other:?}"),
    }
}

#[tokio::test]
async fn missing_files_directories_and_empty_files() {
    let env = Env::new();
    env.write("dir/a.txt", "a");
    env.write("empty.txt", "");
    insta::assert_snapshot!(env.seen("read_file", json!({"path": "nope.txt"})).await);
    let err = env.err("read_file", json!({"path": "dir"})).await;
    assert!(err.contains("is a directory"), "{err}");
    let out = env.ok("read_file", json!({"path": "empty.txt"})).await;
    assert_eq!(out, "empty.txt is empty.");
}

#[tokio::test]
async fn outside_the_roots_is_refused_and_inside_is_allowed() {
    let env = Env::new();
    env.write("in.txt", "in");
    std::fs::write(env.outside().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(env.outside().join("secret.txt"), env.path("link.txt")).unwrap();
    assert_eq!(
        env.check("read_file", json!({"path": "in.txt"})).await,
        PermissionCheck::Allow
    );
    for path in [
        "../outside/secret.txt",
        "link.txt",
        "./sub/../../outside/secret.txt",
    ] {
        let err = env.err("read_file", json!({"path": path})).await;
        assert!(
            err.contains("outside the allowed directories"),
            "{path}: {err}"
        );
        assert!(matches!(
            env.check("read_file", json!({"path": path})).await,
            PermissionCheck::Deny { .. }
        ));
    }
    let absolute = env.outside().join("secret.txt");
    let seen = env
        .seen("read_file", json!({"path": absolute.to_string_lossy()}))
        .await;
    insta::assert_snapshot!(seen);
}

#[tokio::test]
async fn extra_roots_are_allowed() {
    let env = Env::with(|b| b);
    std::fs::write(env.outside().join("shared.txt"), "shared").unwrap();
    let builtins = tool_builtins::Builtins::new().allowed_root(env.outside());
    let registry = tool_core::ToolRegistry::new();
    builtins.register_all(&registry).unwrap();
    let tool = crate::support::Probe(registry.get("read_file").unwrap().tool().clone());
    let ctx = env.ctx("read_file");
    let path = env.outside().join("shared.txt");
    let out = tool
        .call(json!({"path": path.to_string_lossy()}), &ctx)
        .await
        .unwrap();
    assert!(out.joined_text().contains("     1\tshared"));
}

#[tokio::test]
async fn results_over_50000_chars_keep_head_and_tail() {
    let env = Env::new();
    let text: String = (1..=1500)
        .map(|n| format!("{n:04} {}\n", "y".repeat(60)))
        .collect();
    env.write("huge.txt", text);
    let out = env.ok("read_file", json!({"path": "huge.txt"})).await;
    assert!(out.chars().count() <= tool_builtins::MAX_OUTPUT_CHARS);
    assert!(out.contains("chars truncated ...]"));
    assert!(out.starts_with("     1\t0001"));
    assert!(out.contains("  1500\t1500"));
}

/// An oversized result saved under the session's directory is readable by the file tools (its
/// preview tells the model to read it), but nothing may be written there.
#[tokio::test]
async fn saved_tool_results_are_readable_not_writable() {
    let env = Env::new();
    let saved = tool_core::result_path(env.session.dir(), "toolu_big");
    std::fs::create_dir_all(saved.parent().unwrap()).unwrap();
    std::fs::write(&saved, "first\nmiddle\nlast\n").unwrap();
    let path = saved.to_string_lossy().into_owned();
    assert_eq!(
        env.check("read_file", json!({"path": path})).await,
        PermissionCheck::Allow
    );
    let text = env
        .ok("read_file", json!({"path": path, "offset": 2, "limit": 1}))
        .await;
    assert!(text.contains("middle") && !text.contains("first"), "{text}");
    let found = env
        .ok("grep", json!({"pattern": "middle", "path": path}))
        .await;
    assert!(found.contains("middle"), "{found}");
    assert!(matches!(
        env.check("write_file", json!({"path": path, "content": "x"}))
            .await,
        PermissionCheck::Deny { .. }
    ));
    assert!(matches!(
        env.check(
            "edit_file",
            json!({"path": path, "old_string": "middle", "new_string": "x"})
        )
        .await,
        PermissionCheck::Deny { .. }
    ));
}
