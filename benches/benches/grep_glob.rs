//! grep and glob over a generated tree of 10,000 files, side by side with the `rg` program on
//! the same tree. Every measured call checks its result against the counts known from the
//! generation, and `rg`'s against the tool's, so a fast wrong answer cannot pass.
//!
//! Run with `cargo bench -p benches --bench grep_glob`. Needs `rg` on the PATH for the
//! comparison (Debian: `apt-get install ripgrep`); without it only the tools are measured.
#![allow(
    clippy::unwrap_used,
    reason = "bench setup: a panic is a failed bench, which is what it should be"
)]

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_builtins::Builtins;
use tool_core::{AnyTool, Session, ToolContext};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
/// Files under the gitignored directory: walked by nobody, counted by nobody.
const IGNORED_FILES: usize = 200;

/// What the generated tree contains, for the assertions.
struct Expected {
    rs_files: usize,
    needle_lines: usize,
    needle_files: usize,
}

/// Writes the tree: `d000/f0000.rs` ... with a mix of `.rs`, `.ts` and `.md` files, 30 lines
/// each, a needle in some lines, plus a gitignored directory full of needles.
fn generate(root: &Path) -> Expected {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut expected = Expected {
        rs_files: 0,
        needle_lines: 0,
        needle_files: 0,
    };
    for d in 0..DIRS {
        let dir = root.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            let ext = ["rs", "ts", "md"][(d * FILES_PER_DIR + f) % 3];
            if ext == "rs" {
                expected.rs_files += 1;
            }
            let mut text = String::new();
            let mut needles = 0;
            for line in 0..30 {
                let r = next();
                if r % 97 == 0 {
                    text.push_str(&format!(
                        "    let needle_{} = compute({line});\n",
                        r % 10_000
                    ));
                    needles += 1;
                } else {
                    text.push_str(&format!(
                        "    let value_{line} = item_{} + other_{};\n",
                        r % 1000,
                        (r >> 20) % 1000
                    ));
                }
            }
            expected.needle_lines += needles;
            expected.needle_files += usize::from(needles > 0);
            std::fs::write(dir.join(format!("f{f:04}.{ext}")), text).unwrap();
        }
    }
    let ignored = root.join("ignored");
    std::fs::create_dir_all(&ignored).unwrap();
    for f in 0..IGNORED_FILES {
        std::fs::write(ignored.join(format!("g{f:04}.rs")), "let needle_1 = 1;\n").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    expected
}

fn tool(name: &str) -> AnyTool {
    Builtins::new()
        .tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap()
}

fn call(rt: &tokio::runtime::Runtime, tool: &AnyTool, ctx: &ToolContext, input: Value) -> String {
    let output = rt.block_on(tool.call(input, ctx)).unwrap();
    output.joined_text()
}

fn rg(root: &Path, args: &[&str]) -> String {
    let output = Command::new("rg")
        .arg("--no-require-git")
        .arg("--no-config")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// The total from the count mode's last line, "N matching lines in M files".
fn tool_total(count_output: &str) -> (usize, usize) {
    let last = count_output.lines().last().unwrap();
    let words: Vec<&str> = last.split_whitespace().collect();
    (words[0].parse().unwrap(), words[4].parse().unwrap())
}

fn rg_total(count_output: &str) -> (usize, usize) {
    let counts: Vec<usize> = count_output
        .lines()
        .map(|l| l.rsplit_once(':').unwrap().1.parse().unwrap())
        .collect();
    (counts.iter().sum(), counts.len())
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let expected = generate(&root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let session = Arc::new(Session::new("bench", root.join(".session"), &root));
    let has_rg = Command::new("rg").arg("--version").output().is_ok();
    if !has_rg {
        eprintln!("rg is not installed: measuring the tools only (apt-get install ripgrep)");
    }

    let grep = tool("grep");
    let grep_ctx = ToolContext::new("bench", "grep", Arc::clone(&session));
    let grep_input = json!({"pattern": "needle_\\d+", "output_mode": "count"});
    let want = (expected.needle_lines, expected.needle_files);
    let mut group = c.benchmark_group("grep_10k_files");
    group.sample_size(20);
    group.bench_function("grep_tool", |b| {
        b.iter(|| {
            let out = call(&rt, &grep, &grep_ctx, grep_input.clone());
            assert_eq!(tool_total(&out), want);
            black_box(out)
        });
    });
    if has_rg {
        group.bench_function("rg", |b| {
            b.iter(|| {
                let out = rg(&root, &["--count", "needle_\\d+"]);
                assert_eq!(rg_total(&out), want);
                black_box(out)
            });
        });
    }
    group.finish();

    let glob = tool("glob");
    let glob_ctx = ToolContext::new("bench", "glob", Arc::clone(&session));
    let glob_input = json!({"pattern": "*.rs", "limit": 100_000});
    let mut group = c.benchmark_group("glob_10k_files");
    group.sample_size(20);
    group.bench_function("glob_tool", |b| {
        b.iter(|| {
            let out = call(&rt, &glob, &glob_ctx, glob_input.clone());
            assert_eq!(out.lines().count(), expected.rs_files);
            black_box(out)
        });
    });
    if has_rg {
        group.bench_function("rg_files", |b| {
            b.iter(|| {
                let out = rg(&root, &["--files", "-g", "*.rs"]);
                assert_eq!(out.lines().count(), expected.rs_files);
                black_box(out)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
