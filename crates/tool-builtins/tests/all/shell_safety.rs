//! shell: which commands run without a prompt. One line per command; `Safe` means read-only,
//! concurrency-safe and allowed without asking, `Ask` means none of these, and `Outside` means
//! read-only and concurrency-safe but asking, because it reads outside the allowed roots.

use serde_json::json;
use tool_core::PermissionCheck;

use crate::support::Env;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Safe,
    Ask,
    Outside,
}

use Expect::{Ask, Outside, Safe};

const CASES: &[(&str, Expect)] = &[
    // Known read-only programs, plain.
    ("ls", Safe),
    ("ls -la src", Safe),
    ("ls *.rs", Safe),
    ("cat Cargo.toml", Safe),
    ("head -n 20 src/main.rs", Safe),
    ("wc -l src/*.rs", Safe),
    ("grep -rn 'fn main' src", Safe),
    ("rg -n TODO crates", Safe),
    ("find . -name '*.rs' -type f", Safe),
    ("tree -L 2", Safe),
    ("pwd", Safe),
    ("echo hello", Safe),
    ("stat -c %s Cargo.toml", Safe),
    ("du -sh target", Safe),
    ("diff a.txt b.txt", Safe),
    ("sort -u names.txt", Safe),
    ("sed -n '10,20p' src/lib.rs", Safe),
    ("date +%Y-%m-%d", Safe),
    ("jq .name package.json", Safe),
    ("ps aux", Safe),
    ("ps -ef", Safe),
    ("cat /dev/null", Safe),
    // git, reading.
    ("git status", Safe),
    ("git status --short", Safe),
    ("git log --oneline -10", Safe),
    ("git diff HEAD~1 -- src", Safe),
    ("git show HEAD:README.md", Safe),
    ("git -C crates/tool-core log -3", Safe),
    ("git --no-pager diff --stat", Safe),
    ("git branch -a", Safe),
    ("git blame -L 1,10 src/lib.rs", Safe),
    ("git stash list", Safe),
    // Quoting as the shell reads it: operators inside quotes are text.
    ("grep ';' src/lib.rs", Safe),
    ("echo 'a && b' \"c | d\"", Safe),
    ("grep -n \"x > y\" notes.txt", Safe),
    // Lists and pipelines of safe commands, and harmless redirections.
    ("cat a.txt | grep x | wc -l", Safe),
    ("pwd && ls", Safe),
    ("cd src && ls", Safe),
    ("git status; git log -1", Safe),
    ("ls missing || echo none", Safe),
    ("ls -la 2>/dev/null", Safe),
    ("git log 2>&1 | head -5", Safe),
    ("wc -l < Cargo.toml", Safe),
    ("LC_ALL=C sort names.txt", Safe),
    // Reading outside the roots asks, as read_file would refuse it.
    ("cat /etc/passwd", Outside),
    ("ls ~", Outside),
    ("cat ~/.ssh/id_rsa", Outside),
    ("cat ../secret.txt", Outside),
    ("cd / && ls", Outside),
    ("grep -r key /home", Outside),
    ("grep -f/etc/patterns notes.txt", Outside),
    ("grep --file=/etc/patterns notes.txt", Outside),
    ("wc -l < /etc/passwd", Outside),
    ("git -C / log", Outside),
    ("cat out-link/secret.txt", Outside),
    // Programs that change things, or unknown ones.
    ("rm -rf target", Ask),
    ("cargo build", Ask),
    ("npm test", Ask),
    ("mkdir out", Ask),
    ("touch x", Ask),
    ("./script.sh", Ask),
    ("/bin/ls", Ask),
    ("python3 -c 'print(1)'", Ask),
    // Risky options of otherwise read-only programs.
    ("find . -name '*.tmp' -delete", Ask),
    ("find . -exec rm {} \\;", Ask),
    ("find . -fprintf out.txt %p", Ask),
    ("sed -i s/a/b/ file.txt", Ask),
    ("sed -n '1w out.txt' file.txt", Ask),
    ("sed 's/a/b/e' file.txt", Ask),
    ("sort -o out.txt names.txt", Ask),
    ("sort --out=out.txt names.txt", Ask),
    ("sort -uo out.txt names.txt", Ask),
    ("rg --pre ./evil pattern", Ask),
    ("rg -z pattern", Ask),
    ("fd -x rm", Ask),
    ("tree -o out.txt", Ask),
    ("printf -v PATH /tmp/evil", Ask),
    ("date -s 2020-01-01", Ask),
    ("hostname evil", Ask),
    ("uniq in.txt out.txt", Ask),
    ("env rm -rf x", Ask),
    ("env", Ask),
    ("printenv", Ask),
    ("jq -n env", Ask),
    ("jq -n '$ENV.HOME'", Ask),
    ("ps auxe", Ask),
    ("cd", Ask),
    ("cd -", Ask),
    ("find . -name x*", Ask),
    // git, writing or running programs.
    ("git commit -m x", Ask),
    ("git push", Ask),
    ("git checkout main", Ask),
    ("git branch -D main", Ask),
    ("git branch new-feature", Ask),
    ("git stash", Ask),
    ("git reflog expire --all", Ask),
    ("git diff --ext-diff", Ask),
    ("git diff --ext", Ask),
    ("git diff --output=patch.txt", Ask),
    ("git log --textconv -p", Ask),
    ("git -c core.pager=evil log", Ask),
    ("git -p log", Ask),
    ("git grep -O foo", Ask),
    ("git", Ask),
    // Chains with anything unsafe.
    ("ls; rm -rf x", Ask),
    ("git status && git push", Ask),
    ("cat x | sh", Ask),
    ("ls | xargs rm", Ask),
    ("grep -l x * | xargs sed -i s/a/b/", Ask),
    // Substitution, expansion and syntax the classifier does not model.
    ("echo $(rm x)", Ask),
    ("echo `rm x`", Ask),
    ("cat <(ls)", Ask),
    ("ls $HOME", Ask),
    ("echo \"$PATH\"", Ask),
    ("eval ls", Ask),
    ("exec ls", Ask),
    ("(ls)", Ask),
    ("{ ls; }", Ask),
    ("ls &", Ask),
    ("ls # comment", Ask),
    ("cat <<EOF", Ask),
    ("echo 'unterminated", Ask),
    // Redirections that write.
    ("ls > out.txt", Ask),
    ("echo x >> log.txt", Ask),
    ("ls &> out.txt", Ask),
    ("ls >& out.txt", Ask),
    ("> out.txt", Ask),
    // Assignments that matter.
    ("FOO=1 ls", Ask),
    ("PATH=/tmp/evil ls", Ask),
    ("LD_PRELOAD=/tmp/x.so ls", Ask),
    ("GIT_EXTERNAL_DIFF=evil git diff", Ask),
    ("PATH=/tmp/evil; ls", Ask),
    ("cargo_output=x; ls", Ask),
    // Empty and malformed lists.
    ("", Ask),
    ("   ", Ask),
    ("&& ls", Ask),
    ("ls &&", Ask),
    ("ls | ", Ask),
];

#[tokio::test]
async fn the_safe_command_rule() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let env = Env::new();
    std::os::unix::fs::symlink(env.outside(), env.path("out-link")).unwrap();
    let tool = env.tool("shell");
    let mut wrong = Vec::new();
    for &(command, expected) in CASES {
        let input = json!({"command": command});
        let read_only = tool.is_read_only(&input);
        let concurrent = tool.is_concurrency_safe(&input);
        let allowed = matches!(env.check("shell", input).await, PermissionCheck::Allow);
        let got = match (read_only, concurrent, allowed) {
            (true, true, true) => Safe,
            (false, false, false) => Ask,
            (true, true, false) => Outside,
            mixed => panic!("{command:?}: inconsistent {mixed:?}"),
        };
        if got != expected {
            wrong.push(format!("{command:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn prefix_rules_never_match_chained_or_redirected_commands() {
    let env = Env::new();
    let tool = env.tool("shell");
    let rules = tool_core::PermissionRules::parse(&["shell(git status:*)"], &[], &[]).unwrap();
    let rule = &rules.allow[0];
    for command in [
        "git status; rm -rf x",
        "git status && git push",
        "git status > out.txt",
        "git status | sh",
        "git status $(rm x)",
    ] {
        let input = json!({"command": command});
        assert!(!rule.matches(&tool.0, &input, &env.root), "{command}");
    }
    assert!(rule.matches(
        &tool.0,
        &json!({"command": "git status --short"}),
        &env.root
    ));
}
