//! The interactive mode in a pseudo-terminal, as a person uses it: the line editor (history
//! across sessions, Ctrl-R, several lines in one prompt), answers rendered as markdown, the
//! spinner while the model streams, the permission menu answered with the keyboard, a failed
//! call's reason; and plain text when the output is piped or `NO_COLOR` is set.

use agent_cli::provider::ProviderKind;
use serde_json::json;

use crate::support::cli::{Project, assert_success, messages, run_with_input, stderr, stdout};
use crate::support::pty::Terminal;
use crate::support::scripted::{ScriptedServer, Turn};

const UP: &str = "\x1b[A";
const DOWN: &str = "\x1b[B";
const CTRL_R: &str = "\x12";

/// The text of the last user message of request `n`.
fn last_prompt(server: &ScriptedServer, n: usize) -> String {
    let body = &server.bodies()[n];
    let last = messages(body).last().unwrap();
    match &last["content"] {
        serde_json::Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// An answer with the markdown a model writes: a heading, emphasis, a code span, a code block
/// and a table.
const MARKDOWN: &str = "# Plan\n\nSome **bold** and `code` here.\n\n```rust\nfn main() {\n    let answer = 42;\n}\n```\n\n| file | lines |\n|------|------:|\n| a.rs | 12 |\n\nDone.";

#[tokio::test]
async fn history_is_kept_across_sessions_and_a_prompt_can_span_lines() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::text("First answer."),
        Turn::text("Second answer."),
    ])
    .await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("hello there\r");
    term.wait_for("First answer.").await;
    term.wait_for_prompt().await;
    // A trailing backslash breaks the line; Alt-Enter does too.
    term.send("line one\\\rline two\x1b\rline three\r");
    term.wait_for("Second answer.").await;
    assert_eq!(last_prompt(&server, 1), "line one\nline two\nline three");
    assert!(term.exit().await.success());

    // The next session recalls both prompts: the last with the up arrow, the first with Ctrl-R.
    let server = ScriptedServer::start(vec![Turn::text("Third answer.")]).await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send(UP);
    term.wait_for("line three").await;
    term.send("\x15\x15\x15"); // Ctrl-U: the recalled prompt is not sent.
    term.send(CTRL_R);
    term.send("hello");
    term.wait_for("hello there").await;
    term.send("\r");
    term.wait_for("Third answer.").await;
    assert_eq!(last_prompt(&server, 0), "hello there");
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn answers_are_rendered_as_markdown_with_highlighted_code() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text(MARKDOWN)]).await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("show me\r");
    term.wait_for("Done.").await;
    let screen = term.text();
    assert!(screen.contains("Some bold and code here."), "{screen}");
    assert!(!screen.contains("**"), "{screen}");
    assert!(!screen.contains("```"), "{screen}");
    assert!(!screen.contains("# Plan"), "{screen}");
    assert!(screen.contains("│ a.rs │    12 │"), "{screen}");
    let bold = term.cell_of("bold").unwrap();
    assert!(bold.bold(), "{bold:?}");
    let keyword = term.cell_of("fn main").unwrap();
    assert!(
        matches!(keyword.fgcolor(), vt100::Color::Rgb(..)),
        "the code block is not highlighted: {keyword:?}"
    );
    // The status line names the model, the mode and the context used.
    assert!(
        screen.contains("test-model · default mode · context"),
        "{screen}"
    );
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn no_color_on_a_terminal_prints_the_answer_as_it_came() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text(MARKDOWN)]).await;
    let term = Terminal::start(&project, &server, &[("NO_COLOR", "1")]);
    term.wait_for_prompt().await;
    term.send("show me\r");
    term.wait_for("Done.").await;
    let screen = term.text();
    assert!(
        screen.contains("Some **bold** and `code` here."),
        "{screen}"
    );
    assert!(screen.contains("```rust"), "{screen}");
    let keyword = term.cell_of("fn main").unwrap();
    assert_eq!(keyword.fgcolor(), vt100::Color::Default);
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn piped_output_is_plain_text() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text(MARKDOWN)]).await;
    let output = run_with_input(
        &mut project.agent(&server, ProviderKind::Anthropic),
        "show me\n",
    )
    .await;
    assert_success(&output);
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(out.contains("Some **bold** and `code` here."), "{out}");
    assert!(out.contains("```rust\nfn main() {"), "{out}");
    assert!(
        !out.contains('\x1b') && !err.contains('\x1b'),
        "{out}\n{err}"
    );
}

#[tokio::test]
async fn a_spinner_shows_time_and_tokens_while_the_answer_streams() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::stall("Partial answer so far")]).await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("take your time\r");
    term.wait_for("Ctrl-C to interrupt").await;
    term.wait_for("tokens").await;
    // The time moves while nothing else does.
    term.wait_for_screen("the spinner's time passing one second", |screen| {
        let text = screen.contents();
        text.contains("Working…") && (1..10).any(|s| text.contains(&format!("({s}s")))
    })
    .await;
    // Ctrl-C cancels the turn, as before; the spinner goes, the text so far stays.
    term.send("\x03");
    term.wait_for("(turn cancelled)").await;
    term.wait_for("Partial").await;
    term.wait_for_screen("no spinner", |screen| {
        !screen.contents().contains("Ctrl-C to interrupt")
    })
    .await;
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn a_permission_menu_is_answered_with_the_arrow_keys() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::tool_use("call_1", "shell", json!({"command": "touch made.txt"})),
        Turn::text("Made it."),
    ])
    .await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("make a file\r");
    term.wait_for("Permission needed").await;
    term.wait_for("❯ 1. Yes, this once").await;
    let screen = term.text();
    assert!(screen.contains("│  $ touch made.txt"), "{screen}");
    assert!(
        screen.contains("Yes, and allow `shell(touch made.txt)` for this session"),
        "{screen}"
    );
    term.send(DOWN);
    term.wait_for("❯ 2. Yes, and allow").await;
    // Moving the choice redraws the menu alone.
    let screen = term.text();
    assert_eq!(screen.matches("1. Yes, this once").count(), 1, "{screen}");
    assert!(
        screen.contains("│  shell wants to run `touch made.txt`"),
        "{screen}"
    );
    term.send("\r");
    term.wait_for("Made it.").await;
    assert!(project.path().join("made.txt").exists(), "{}", term.text());
    term.wait_for("╰─ Yes, and allow `shell(touch made.txt)` for this session")
        .await;
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn a_failed_call_shows_its_reason() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::tool_use("call_1", "read_file", json!({"path": 42})),
        Turn::text("Sorry."),
    ])
    .await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("read it\r");
    term.wait_for("Sorry.").await;
    let screen = term.text();
    assert!(screen.contains("read_file failed"), "{screen}");
    assert!(screen.contains("42 is not of type"), "{screen}");
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn resume_without_an_id_offers_the_recent_sessions_of_this_folder() {
    let project = Project::new();
    for (prompt, answer) in [("first task", "One."), ("second task", "Two.")] {
        let server = ScriptedServer::start(vec![Turn::text(answer)]).await;
        let mut command = project.agent(&server, ProviderKind::Anthropic);
        assert_success(&run_with_input(&mut command, &format!("{prompt}\n")).await);
    }
    // The first was two hours ago, the second a minute ago.
    let now = std::time::SystemTime::now();
    for entry in std::fs::read_dir(project.home().join("sessions")).unwrap() {
        let path = entry.unwrap().path();
        let seconds = if std::fs::read_to_string(&path)
            .unwrap()
            .contains("first task")
        {
            7_200
        } else {
            60
        };
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        file.set_modified(now - std::time::Duration::from_secs(seconds))
            .unwrap();
    }
    // Without a terminal to pick on, the error lists them.
    let server = ScriptedServer::start(vec![]).await;
    let mut command = project.agent(&server, ProviderKind::Anthropic);
    let output = run_with_input(command.arg("--resume"), "").await;
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("--resume needs a session id"), "{err}");
    let second = err.find("second task").unwrap();
    assert!(
        second < err.find("first task").unwrap(),
        "newest first: {err}"
    );

    let server = ScriptedServer::start(vec![Turn::text("Back to it.")]).await;
    let term = Terminal::start_with_args(&project, &server, &[], &["--resume"]);
    term.wait_for("Resume which session").await;
    term.wait_for("❯ 1. 1 minute ago").await;
    term.wait_for("2. 2 hours ago").await;
    term.send(DOWN);
    term.send("\r");
    term.wait_for("the conversation so far").await;
    term.wait_for_prompt().await;
    let screen = term.text();
    assert!(screen.contains("One."), "{screen}");
    term.send("go on\r");
    term.wait_for("Back to it.").await;
    let body = &server.bodies()[0];
    assert!(body.to_string().contains("first task"), "{body}");
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn pasted_lines_are_one_prompt_and_tab_completes_commands() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text("Got the paste.")]).await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    // A terminal marks pasted text (bracketed paste): its line breaks do not send it.
    term.send("\x1b[200~pasted one\npasted two\x1b[201~");
    term.wait_for("pasted two").await;
    term.send("\r");
    term.wait_for("Got the paste.").await;
    assert_eq!(last_prompt(&server, 0), "pasted one\npasted two");
    term.wait_for_prompt().await;
    term.send("/cont\t");
    term.wait_for("> /context ").await;
    term.send("\r");
    term.wait_for("next request").await;
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn a_long_command_shows_its_latest_output_while_it_runs() {
    let project = Project::new();
    // The command waits for the test to say go: it runs as long as the test needs.
    let script = "echo compiling the crate; while [ ! -f go ]; do sleep 0.05; done; echo finished";
    let server = ScriptedServer::start(vec![
        Turn::tool_use("call_1", "shell", json!({"command": script})),
        Turn::text("Built."),
    ])
    .await;
    let term = Terminal::start_with_args(&project, &server, &[], &["--allow", "shell"]);
    term.wait_for_prompt().await;
    term.send("build it\r");
    term.wait_for("⎿ compiling the crate").await;
    std::fs::write(project.path().join("go"), "").unwrap();
    term.wait_for("Built.").await;
    // The live line became the call's result line.
    let screen = term.text();
    assert!(!screen.contains("⎿ compiling the crate"), "{screen}");
    assert!(term.exit().await.success());
}

#[tokio::test]
async fn a_skill_is_asked_for_by_its_name_after_a_slash() {
    let project = Project::new();
    project.write(
        ".agent-cli/skills/review/SKILL.md",
        "---\nname: review\ndescription: Reviews a diff\n---\nRead the diff, then comment.",
    );
    let server = ScriptedServer::start(vec![Turn::text("Reviewed.")]).await;
    let output = run_with_input(
        &mut project.agent(&server, ProviderKind::Anthropic),
        "/review the last commit\n/nosuchthing\n",
    )
    .await;
    assert_success(&output);
    assert!(
        last_prompt(&server, 0).starts_with("Use the `review` skill. the last commit"),
        "{}",
        last_prompt(&server, 0)
    );
    assert!(stderr(&output).contains("unknown command /nosuchthing"));
}

#[tokio::test]
async fn declining_in_the_menu_can_say_what_to_do_instead() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![
        Turn::tool_use("call_1", "shell", json!({"command": "rm -rf build"})),
        Turn::text("Understood."),
    ])
    .await;
    let term = Terminal::start(&project, &server, &[]);
    term.wait_for_prompt().await;
    term.send("clean up\r");
    term.wait_for("❯ 1. Yes, this once").await;
    term.send("n");
    term.wait_for("What should it do instead?").await;
    term.send("use cargo clean\r");
    term.wait_for("Understood.").await;
    let results = crate::support::cli::tool_results(&server.bodies()[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].0, "{results:?}");
    assert!(results[0].1.contains("use cargo clean"), "{results:?}");
    assert!(term.exit().await.success());
}
