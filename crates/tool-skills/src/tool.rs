//! The `skill` tool: load a skill by name, or find skills by what they do.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{
    CallInfo, Loading, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use crate::session::{Allowances, SkillSession};
use crate::skill::Skill;

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";

/// How many skills a query returns.
const QUERY_LIMIT: usize = 5;

/// How many close names an unknown name is answered with.
const CLOSE_NAMES: usize = 3;

/// The `skill` tool over a session's skills. Read-only and concurrency-safe: it reads skills
/// already loaded in memory (using one may allow its `allowed-tools` for the rest of the turn).
#[derive(Debug, Clone)]
pub struct SkillTool {
    session: Arc<SkillSession>,
}

impl SkillTool {
    /// The tool over `session`.
    pub fn new(session: Arc<SkillSession>) -> Self {
        Self { session }
    }
}

/// Either a skill's name or a query.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillInput {
    /// The skill to use, by its exact name: returns its instructions and its folder.
    #[serde(default)]
    pub name: Option<String>,
    /// Words describing the task, to find skills that are not listed (returns their names).
    #[serde(default)]
    pub query: Option<String>,
}

/// A field's text, when it has any.
fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// What one call asks for, once the input is checked.
enum Request<'a> {
    Name(&'a str),
    Query(&'a str),
}

impl SkillInput {
    fn request(&self) -> Result<Request<'_>, ToolError> {
        match (given(&self.name), given(&self.query)) {
            (Some(name), None) => Ok(Request::Name(name)),
            (None, Some(query)) => Ok(Request::Query(query)),
            (Some(_), Some(_)) => Err(ToolError::invalid(
                "give either `name` (to use a skill) or `query` (to find skills), not both",
            )),
            (None, None) => Err(ToolError::invalid(
                "give `name` with a skill's name to use it, or `query` with a few words to find skills",
            )),
        }
    }
}

#[async_trait]
impl Tool for SkillTool {
    type Input = SkillInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            SKILL_TOOL,
            "Use a skill: instructions for a particular kind of task, kept in a folder with files \
             it may refer to. Call with {\"name\": \"...\"} to load a skill listed in the system \
             prompt (its instructions and its folder come back; follow them), or with \
             {\"query\": \"...\"} to find skills that are not listed.",
            input_schema,
        )
        .with_search_hint("load a skill's instructions or find skills for a task")
        .with_loading(Loading::AlwaysLoad)
    }

    /// Read-only. A skill that lists `allowed-tools` changes what later calls may do, so it runs
    /// alone and the calls after it in the same message see its grant; any other use runs beside
    /// others.
    fn info(&self, input: &SkillInput) -> CallInfo {
        let grants = given(&input.name)
            .and_then(|name| self.session.set().get(name))
            .is_some_and(|skill| !skill.allowed_tools.is_empty());
        let activity = match input.request() {
            Ok(Request::Name(name)) => Some(format!("Using skill {name}")),
            Ok(Request::Query(query)) => Some(format!("Finding skills for {query}")),
            Err(_) => None,
        };
        CallInfo::reads()
            .with_concurrency_safe(!grants)
            .with_activity(activity)
    }

    async fn validate_input(
        &self,
        input: &SkillInput,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        input.request().map(|_| ())
    }

    async fn check_permissions(&self, _input: &SkillInput, _ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, input: SkillInput, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match input.request()? {
            Request::Name(name) => self.load(name),
            Request::Query(query) => self.find(query),
        }
    }
}

impl SkillTool {
    fn load(&self, name: &str) -> Result<ToolOutput, ToolError> {
        match self.session.invoke(name) {
            Some((skill, allowances)) => Ok(ToolOutput::text(loaded(skill, &allowances))),
            None => Err(ToolError::invalid(self.unknown(name))),
        }
    }

    fn unknown(&self, name: &str) -> String {
        let close = self.session.set().close_names(name, CLOSE_NAMES);
        if close.is_empty() {
            format!(
                "there is no skill named `{name}`; use a name from the skills listed in the system prompt, or find one with {{\"query\": \"...\"}}"
            )
        } else {
            format!(
                "there is no skill named `{name}`; did you mean {}? Or find one with {{\"query\": \"...\"}}",
                close
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }

    fn find(&self, query: &str) -> Result<ToolOutput, ToolError> {
        let found = self
            .session
            .set()
            .search(query, QUERY_LIMIT)
            .map_err(|e| ToolError::invalid(e.to_string()))?;
        if found.is_empty() {
            return Ok(ToolOutput::text(format!(
                "No skill matches `{query}`. Try other words, or go on without a skill."
            )));
        }
        Ok(ToolOutput::text(format!(
            "Skills matching `{query}` (load one with {{\"name\": \"...\"}}):\n{}",
            found_lines(&found)
        )))
    }
}

/// Skills a search found, as the model reads them: `- name: description`, a line each.
pub fn found_lines(skills: &[&Skill]) -> String {
    skills
        .iter()
        .map(|skill| format!("- {}: {}\n", skill.name, skill.description.trim()))
        .collect()
}

/// What the model reads when it loads a skill: where the skill lives, what it allows, and its
/// instructions.
fn loaded(skill: &Skill, allowances: &Allowances) -> String {
    let mut text = format!(
        "<skill name=\"{}\">\nFolder: {}\n(Paths in these instructions are relative to this folder; read its files with read_file.)\n",
        skill.name,
        skill.dir.display()
    );
    let list = |rules: &[tool_core::PermissionRule]| {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match allowances {
        Allowances::None => {}
        Allowances::Granted(rules) => text.push_str(&format!(
            "Until the user's next message these run without asking: {}.\n",
            list(rules)
        )),
        Allowances::Withheld(rules) => text.push_str(&format!(
            "The skill lists {} to run without asking; that is not in effect here (its folder is not trusted), so those calls follow the usual permission rules.\n",
            list(rules)
        )),
    }
    text.push('\n');
    text.push_str(skill.body.trim_end());
    text.push_str("\n</skill>");
    text
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;
    use tool_core::{
        AnyTool, CancellationToken, Executor, PermissionRules, Permissions, Session, ToolCall,
        ToolRegistry,
    };

    use super::*;
    use crate::set::SkillSet;
    use crate::skill::SkillSource;

    fn skill(name: &str, description: &str, allowed: &[&str]) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            allowed_tools: allowed.iter().map(|r| r.parse().unwrap()).collect(),
            body: format!("# {name}\n\nRun `scripts/{name}.sh`.\n"),
            dir: PathBuf::from("/skills").join(name),
            source: SkillSource::Project,
        }
    }

    async fn call(input: serde_json::Value) -> tool_core::ToolResult {
        let set = Arc::new(SkillSet::new(vec![
            skill(
                "release",
                "Cut a release and publish the crates.",
                &["shell(make release:*)"],
            ),
            skill("changelog", "Write the changelog entry.", &[]),
            skill("review", "Review a pull request.", &["read_file"]),
        ]));
        let permissions = Arc::new(Permissions::new(PermissionRules::default()));
        let session = Arc::new(
            SkillSession::new(set).granting_in(Arc::clone(&permissions), ["release".to_owned()]),
        );
        let registry = Arc::new(ToolRegistry::new());
        registry.register(SkillTool::new(session)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let executor = Executor::builder(
            registry,
            Arc::new(Session::new("s", dir.path(), dir.path())),
        )
        .permissions(permissions)
        .build();
        executor
            .execute(
                ToolCall::new("toolu_1", SKILL_TOOL, input),
                CancellationToken::new(),
                None,
            )
            .await
    }

    #[tokio::test]
    async fn what_the_model_reads() {
        let cases = [
            json!({"name": "release"}),
            json!({"name": "review"}),
            json!({"name": "changelog"}),
            json!({"query": "publish crates"}),
            json!({"query": "weather"}),
            json!({"name": "relase"}),
            json!({"name": "zzzz"}),
            json!({"name": "release", "query": "x"}),
            json!({}),
            json!({"query": "???"}),
        ];
        let mut out = String::new();
        for input in cases {
            let result = call(input.clone()).await;
            out.push_str(&format!(
                "## {input} (error: {})\n{}\n\n",
                result.is_error,
                result.text()
            ));
        }
        insta::assert_snapshot!(out);
    }

    #[test]
    fn read_only_concurrency_safe_and_always_loaded() {
        let tool = AnyTool::new(SkillTool::new(Arc::new(SkillSession::new(Arc::default()))));
        let info = tool.info(&json!({"name": "x"})).unwrap();
        assert!(info.is_read_only());
        assert!(info.is_concurrency_safe());
        assert_eq!(tool.spec().loading, Loading::AlwaysLoad);
        insta::assert_json_snapshot!(tool.spec().input_schema);
    }

    #[test]
    fn a_skill_that_grants_tools_runs_alone() {
        let set = Arc::new(SkillSet::new(vec![
            skill("release", "Cut a release.", &["shell(make release:*)"]),
            skill("changelog", "Write the changelog entry.", &[]),
        ]));
        let tool = AnyTool::new(SkillTool::new(Arc::new(SkillSession::new(set))));
        let concurrent = |input| tool.info(&input).unwrap().is_concurrency_safe();
        assert!(!concurrent(json!({"name": "release"})));
        assert!(concurrent(json!({"name": "changelog"})));
        assert!(concurrent(json!({"query": "release"})));
    }
}
