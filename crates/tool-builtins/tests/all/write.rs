//! write_file and the session read state.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use tool_core::PermissionCheck;

use crate::support::Env;

#[tokio::test]
async fn creates_new_files_and_parent_directories_without_a_read() {
    let env = Env::new();
    let seen = env
        .seen(
            "write_file",
            json!({"path": "a/b/new.txt", "content": "one\ntwo\n"}),
        )
        .await;
    insta::assert_snapshot!(seen);
    assert_eq!(env.read("a/b/new.txt"), "one\ntwo\n");
}

#[tokio::test]
async fn an_existing_file_must_be_read_first() {
    let env = Env::new();
    env.write("old.txt", "old\n");
    let seen = env
        .seen("write_file", json!({"path": "old.txt", "content": "new\n"}))
        .await;
    insta::assert_snapshot!(seen);
    assert_eq!(env.read("old.txt"), "old\n");
    env.ok("read_file", json!({"path": "old.txt"})).await;
    env.ok("write_file", json!({"path": "old.txt", "content": "new\n"}))
        .await;
    assert_eq!(env.read("old.txt"), "new\n");
    // The write updated the read state: a second write needs no re-read.
    env.ok(
        "write_file",
        json!({"path": "old.txt", "content": "newer\n"}),
    )
    .await;
    assert_eq!(env.read("old.txt"), "newer\n");
}

#[tokio::test]
async fn an_external_change_since_the_read_is_refused() {
    let env = Env::new();
    env.write("shared.txt", "v1\n");
    env.ok("read_file", json!({"path": "shared.txt"})).await;
    env.write("shared.txt", "v2 from someone else\n");
    let err = env
        .err(
            "write_file",
            json!({"path": "shared.txt", "content": "mine\n"}),
        )
        .await;
    assert!(
        err.contains("changed on disk since it was last read"),
        "{err}"
    );
    assert_eq!(env.read("shared.txt"), "v2 from someone else\n");
}

#[tokio::test]
async fn permissions_are_kept() {
    let env = Env::new();
    let path = env.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.ok("read_file", json!({"path": "run.sh"})).await;
    env.ok(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
}

#[tokio::test]
async fn writes_outside_the_roots_are_refused() {
    let env = Env::new();
    std::os::unix::fs::symlink(env.outside(), env.path("escape")).unwrap();
    for path in [
        "../outside/x.txt",
        "escape/x.txt",
        "sub/../../outside/x.txt",
    ] {
        let err = env
            .err("write_file", json!({"path": path, "content": "x"}))
            .await;
        assert!(
            err.contains("outside the allowed directories"),
            "{path}: {err}"
        );
        assert!(matches!(
            env.check("write_file", json!({"path": path, "content": "x"}))
                .await,
            PermissionCheck::Deny { .. }
        ));
    }
    assert!(!env.outside().join("x.txt").exists());
    assert!(matches!(
        env.check("write_file", json!({"path": "in.txt", "content": "x"}))
            .await,
        PermissionCheck::Ask { .. }
    ));
}

#[tokio::test]
async fn a_directory_is_not_a_file() {
    let env = Env::new();
    std::fs::create_dir_all(env.path("d")).unwrap();
    let err = env
        .err("write_file", json!({"path": "d", "content": "x"}))
        .await;
    assert!(err.contains("is a directory"), "{err}");
}
