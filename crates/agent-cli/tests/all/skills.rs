//! Skills through the real binary: the listing in the system prompt, the `skill` tool, search for
//! skills the listing leaves out, suggestions once per session, and `allowed-tools` that apply
//! only in a trusted folder.

use agent_cli::provider::ProviderKind;
use serde_json::{Value, json};

use crate::support::cli::*;
use crate::support::scripted::{ScriptedServer, Turn};

/// Writes a skill `SKILL.md` under `root` (relative to the project, or absolute).
fn skill(root: &std::path::Path, folder: &str, frontmatter: &str, body: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{frontmatter}\n---\n{body}"),
    )
    .unwrap();
}

/// A project with skills in both project roots and the user's, one name in two of them, and a
/// broken one.
fn project_with_skills() -> Project {
    let project = Project::new();
    let ours = project.path().join(".agent-cli/skills");
    let claude = project.path().join(".claude/skills");
    let user = project.home().join("skills");
    skill(
        &ours,
        "release",
        "name: release\ndescription: \"Cut a release of the crates: bump the version, tag and publish.\"",
        "# Releasing\n\n1. Run `scripts/bump.sh` in this folder.\n2. Tag and publish.\n",
    );
    std::fs::write(ours.join("release/scripts.txt"), "bump.sh\n").unwrap();
    skill(
        &claude,
        "pdf",
        "name: pdf\ndescription: Fill PDF forms and extract their text.\nallowed-tools: Read, Bash(pdftotext:*)",
        "Use pdftotext.\n",
    );
    skill(
        &user,
        "release",
        "name: release\ndescription: The user's own release steps, shadowed by the project's.",
        "Never seen.\n",
    );
    skill(
        &user,
        "meeting-notes",
        "name: meeting-notes\ndescription: 整理会议记录,列出决定和待办事项。",
        "Write the notes.\n",
    );
    skill(&user, "broken", "name: broken\ndescription: [unclosed", "");
    project
}

/// The system prompt of a request, in either wire format.
fn system_text(body: &Value) -> String {
    let text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    };
    match &body["system"] {
        Value::Null => messages(body)
            .iter()
            .filter(|m| m["role"] == "system")
            .map(|m| text(&m["content"]))
            .collect(),
        system => text(system),
    }
}

/// The `<available-skills>` section of a system prompt.
fn listing(system: &str) -> &str {
    let start = system
        .find("<available-skills>")
        .unwrap_or_else(|| panic!("no skill listing in:\n{system}"));
    let end = system.find("</available-skills>").unwrap() + "</available-skills>".len();
    &system[start..end]
}

#[tokio::test]
async fn the_skills_are_listed_in_the_system_prompt_and_a_broken_one_is_a_warning() {
    let project = project_with_skills();
    for kind in KINDS {
        let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
        let output = run(project.agent(&server, kind).args(["-p", "hello"])).await;
        assert_success(&output);
        let body = &server.bodies()[0];
        assert!(tool_names(body).contains(&"skill".to_owned()), "{kind:?}");
        insta::assert_snapshot!("system_listing", listing(&system_text(body)));
        let err = project.redact(&stderr(&output));
        assert!(
            err.contains(
                "warning: skill: [HOME]/skills/broken/SKILL.md: invalid frontmatter at line 3"
            ),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_folder_without_skills_has_no_skill_tool_and_no_listing() {
    let project = Project::new();
    let server = ScriptedServer::start(vec![Turn::text("Hi.")]).await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "hello"]))
    .await;
    assert_success(&output);
    let body = &server.bodies()[0];
    assert!(!tool_names(body).contains(&"skill".to_owned()));
    assert!(!system_text(body).contains("<available-skills>"));
}

#[tokio::test]
async fn the_skill_tool_returns_the_body_and_the_folder() {
    let project = project_with_skills();
    for kind in KINDS {
        let server = ScriptedServer::start(vec![
            Turn::tool_use("call_skill", "skill", json!({"name": "release"})),
            Turn::tool_use("call_missing", "skill", json!({"name": "relase"})),
            Turn::text("Released."),
        ])
        .await;
        let output = run(project.agent(&server, kind).args(["-p", "cut a release"])).await;
        assert_success(&output);
        let bodies = server.bodies();
        let results = tool_results(&bodies[1]);
        let (is_error, text) = &results[0];
        assert!(!is_error, "{text}");
        assert!(
            text.contains("1. Run `scripts/bump.sh` in this folder."),
            "{text}"
        );
        let folder = project.path().join(".agent-cli/skills/release");
        assert!(
            text.contains(&format!("Folder: {}", folder.display())),
            "{text}"
        );
        assert!(
            !text.contains("Never seen"),
            "the project's skill wins: {text}"
        );

        let results = tool_results(&bodies[2]);
        let (is_error, text) = results.last().unwrap();
        assert!(is_error, "{text}");
        assert!(text.contains("did you mean `release`?"), "{text}");
    }
}

/// Eighty skills with long descriptions, more than the listing's 2% of the window holds, and
/// `zz-translate`, which sorts last and so is left out of the listing.
fn project_with_many_skills() -> Project {
    let project = Project::new();
    let root = project.path().join(".agent-cli/skills");
    let filler =
        "Handles one narrow chore of the build with care and reports what it changed. ".repeat(3);
    for i in 0..80 {
        skill(
            &root,
            &format!("chore-{i:02}"),
            &format!("name: chore-{i:02}\ndescription: {filler}"),
            "Do the chore.\n",
        );
    }
    skill(
        &root,
        "zz-translate",
        "name: zz-translate\ndescription: Translate Chinese documentation into English, keeping the terms consistent.",
        "Translate carefully.\n",
    );
    project
}

#[tokio::test]
async fn a_skill_beyond_the_listing_budget_is_found_by_search() {
    let project = project_with_many_skills();
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "call_find",
            "skill",
            json!({"query": "translate the chinese docs"}),
        ),
        Turn::text("Found it."),
    ])
    .await;
    let output = run(project
        .agent(&server, ProviderKind::Anthropic)
        .args(["-p", "hello"]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    let system = system_text(&bodies[0]);
    let listed = listing(&system);
    assert!(!listed.contains("zz-translate"), "{listed}");
    assert!(
        listed.contains("more skills are not listed here; find them with the skill tool"),
        "{listed}"
    );
    assert!(listed.chars().count() <= 16_000);
    let results = tool_results(&bodies[1]);
    assert!(
        results[0]
            .1
            .contains("- zz-translate: Translate Chinese documentation"),
        "{results:?}"
    );
}

/// A model that looks for a capability with `tool_search` finds the skills for it too, beside
/// the deferred tools (or instead of them); a query no skill matches lists none.
#[tokio::test]
async fn tool_search_finds_skills_beside_deferred_tools() {
    let project = project_with_many_skills();
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "call_ts",
            "tool_search",
            json!({"query": "translate the chinese docs"}),
        ),
        Turn::tool_use(
            "call_web",
            "tool_search",
            json!({"query": "switch to plan mode"}),
        ),
        Turn::text("Found them."),
    ])
    .await;
    let output = run(project.agent(&server, ProviderKind::Anthropic).args([
        "--defer-tools",
        "true",
        "--activation",
        "proxy",
        "-p",
        "hello",
    ]))
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert!(tool_names(&bodies[0]).contains(&"tool_search".to_owned()));
    let results = tool_results(&bodies[2]);
    insta::assert_snapshot!("tool_search_skill", results[0].1);
    assert!(results[1].1.contains("## enter_plan_mode"), "{results:?}");
    assert!(!results[1].1.contains("Skills that match"), "{results:?}");
}

/// A resumed session keeps what it had found: a deferred tool it called through `execute_tool`
/// is callable again without a new search, and a skill it was suggested is not suggested again.
#[tokio::test]
async fn a_resumed_session_keeps_its_discovered_tools_and_suggested_skills() {
    let project = project_with_skills();
    let plan = |id: &str| {
        Turn::tool_use(
            id,
            "execute_tool",
            json!({"tool_name": "enter_plan_mode", "input": {}}),
        )
    };
    let server = ScriptedServer::start(vec![
        Turn::tool_use(
            "call_sel",
            "tool_search",
            json!({"query": "select:enter_plan_mode"}),
        ),
        plan("call_plan_1"),
        Turn::text("Planning."),
        plan("call_plan_2"),
        Turn::text("Still planning."),
        Turn::text("Done."),
    ])
    .await;
    let args = |prompt: &'static str, resume: bool| {
        let mut command = project.agent(&server, ProviderKind::Anthropic);
        if resume {
            command.arg("--continue");
        }
        command.args(["--defer-tools", "true", "-p", prompt]);
        command
    };
    let first = run(&mut args("hello", false)).await;
    assert_success(&first);
    let second = run(&mut args(
        "please cut a release and publish the crates",
        true,
    ))
    .await;
    assert_success(&second);
    let third = run(&mut args(
        "again: cut a release and publish the crates",
        true,
    ))
    .await;
    assert_success(&third);

    let bodies = server.bodies();
    let results = tool_results(&bodies[4]);
    let again = &results.last().unwrap().1;
    assert!(!again.contains("has not been discovered"), "{again}");
    let notes = |body: &Value| {
        let last = messages(body).last().unwrap().to_string();
        last.contains("<skill-discovery>")
    };
    assert!(notes(&bodies[3]), "the release skill is suggested once");
    assert!(!notes(&bodies[5]), "and not again after a resume");
}

/// The user's message carries a `<skill-discovery>` note for a relevant skill the first time
/// only, and unrelated text carries none.
#[tokio::test]
async fn a_skill_is_suggested_once_per_session() {
    let project = project_with_skills();
    let server = ScriptedServer::start(vec![
        Turn::text("One."),
        Turn::text("Two."),
        Turn::text("Three."),
    ])
    .await;
    // The first line answers the trust prompt (the `pdf` skill lists tools): not now.
    let output = run_with_input(
        &mut project.agent(&server, ProviderKind::Anthropic),
        "n\nwhat is the weather like\nplease cut a release and publish the crates\n\
         again: cut a release and publish the crates\n",
    )
    .await;
    assert_success(&output);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3, "{}", stderr(&output));
    let user_text = |i: usize| messages(&bodies[i]).last().unwrap()["content"].to_string();
    assert!(
        !user_text(0).contains("skill-discovery"),
        "{}",
        user_text(0)
    );
    let suggested = user_text(1);
    assert!(
        suggested.contains("<skill-discovery>") && suggested.contains("- release: Cut a release"),
        "{suggested}"
    );
    assert!(
        !user_text(2).contains("skill-discovery"),
        "{}",
        user_text(2)
    );
}

/// A project's skill lets `shell(touch:*)` run without asking in print mode (which otherwise
/// denies), but only once the folder is trusted, and never past the user's deny rule.
#[tokio::test]
async fn allowed_tools_run_without_asking_only_in_a_trusted_folder() {
    let project = Project::new();
    skill(
        &project.path().join(".agent-cli/skills"),
        "build",
        "name: build\ndescription: Build the project.\nallowed-tools: shell(touch:*)",
        "Touch built.txt.\n",
    );
    std::fs::write(
        project.home().join("settings.json"),
        json!({"permissions": {"deny": ["shell(touch forbidden.txt)"]}}).to_string(),
    )
    .unwrap();
    let go = async |extra: &[&str]| {
        let server = ScriptedServer::start(vec![
            Turn::tool_use("call_skill", "skill", json!({"name": "build"})),
            Turn::tool_use("call_touch", "shell", json!({"command": "touch built.txt"})),
            Turn::tool_use(
                "call_forbidden",
                "shell",
                json!({"command": "touch forbidden.txt"}),
            ),
            Turn::text("Built."),
        ])
        .await;
        let output = run(project
            .agent(&server, ProviderKind::Anthropic)
            .args(extra)
            .args(["-p", "build it"]))
        .await;
        assert_success(&output);
        let bodies = server.bodies();
        (tool_results(&bodies[1]), stderr(&output))
    };

    let (skill_result, err) = go(&[]).await;
    assert!(
        skill_result[0].1.contains("not in effect here"),
        "{skill_result:?}"
    );
    assert!(!project.path().join("built.txt").exists(), "ran untrusted");
    assert!(
        err.contains("skill `build` runs `shell(touch:*)` without asking while in use"),
        "{err}"
    );

    // Trusted for one run: the grant applies to that run only.
    let (skill_result, _) = go(&["--trust-project"]).await;
    assert!(
        skill_result[0].1.contains("run without asking"),
        "{skill_result:?}"
    );
    assert!(
        project.path().join("built.txt").exists(),
        "--trust-project did not apply"
    );
    std::fs::remove_file(project.path().join("built.txt")).unwrap();

    let trusted = run(project.command().arg("trust")).await;
    assert_success(&trusted);
    assert!(stdout(&trusted).contains("skill `build` runs `shell(touch:*)`"));
    let (skill_result, _) = go(&[]).await;
    assert!(
        skill_result[0]
            .1
            .contains("Until the user's next message these run without asking: `shell(touch:*)`"),
        "{skill_result:?}"
    );
    assert!(
        project.path().join("built.txt").exists(),
        "the granted call did not run"
    );
    assert!(
        !project.path().join("forbidden.txt").exists(),
        "the deny rule was passed over"
    );
}

#[tokio::test]
async fn skills_list_and_search() {
    let project = project_with_skills();
    let listed = run(project.command().args(["skills", "list"])).await;
    assert_success(&listed);
    insta::assert_snapshot!("skills_list", project.redact(&stdout(&listed)));
    let found = run(project.command().args(["skills", "search", "会议记录"])).await;
    assert_success(&found);
    assert_eq!(
        stdout(&found).lines().next(),
        Some("meeting-notes: 整理会议记录,列出决定和待办事项。")
    );
    let none = run(project.command().args(["skills", "search", "kubernetes"])).await;
    assert_eq!(stdout(&none).trim(), "no skill matches `kubernetes`");
}
