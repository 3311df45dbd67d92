//! One session's use of its skills: which were suggested (each at most once), and the tools a
//! skill in use allows.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tool_core::{PermissionRule, Permissions};
use tool_search::Field;

use crate::set::SkillSet;
use crate::skill::Skill;

/// The most skills one message suggests.
pub(crate) const MAX_SUGGESTIONS: usize = 3;

/// The most characters of a message searched for suggestions: the start of a message says what
/// it is about, and a long paste would only add noise.
const MAX_SUGGESTION_QUERY_CHARS: usize = 500;

/// The fewest distinct query terms a skill must share with a message to be suggested, unless one
/// of them is in its name. One shared word ("file", "test") is too weak a sign on its own.
const MIN_SHARED_TERMS: usize = 2;

/// What a skill's use did to permissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowances {
    /// The skill lists no tools.
    None,
    /// These rules allow calls until the turn ends.
    Granted(Vec<PermissionRule>),
    /// The skill lists tools, but they do not apply (an untrusted project's skill, or no
    /// permissions to grant them in).
    Withheld(Vec<PermissionRule>),
}

/// The skills of one session: the set, the session's own set of skills already suggested
/// (separate from tool discovery's, so neither can swallow the other's suggestions), and where a
/// skill's `allowed-tools` are granted.
pub struct SkillSession {
    set: Arc<SkillSet>,
    suggested: Mutex<BTreeSet<String>>,
    grants: Option<Grants>,
}

struct Grants {
    permissions: Arc<Permissions>,
    /// The skills whose `allowed-tools` may be granted.
    trusted: BTreeSet<String>,
}

impl std::fmt::Debug for SkillSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSession")
            .field("set", &self.set)
            .field("grants", &self.grants.as_ref().map(|g| &g.trusted))
            .finish()
    }
}

impl SkillSession {
    /// A session over `set` that grants no `allowed-tools`.
    pub fn new(set: Arc<SkillSet>) -> Self {
        Self {
            set,
            suggested: Mutex::new(BTreeSet::new()),
            grants: None,
        }
    }

    /// Grants the `allowed-tools` of the skills named in `trusted` in `permissions` while such a
    /// skill is in use. The caller decides what is trusted (a project's skills only once the user
    /// trusts the folder); the others' allowances are withheld.
    #[must_use]
    pub fn granting_in(
        mut self,
        permissions: Arc<Permissions>,
        trusted: impl IntoIterator<Item = String>,
    ) -> Self {
        self.grants = Some(Grants {
            permissions,
            trusted: trusted.into_iter().collect(),
        });
        self
    }

    /// The skills.
    pub fn set(&self) -> &Arc<SkillSet> {
        &self.set
    }

    /// Puts `name` in use: its `allowed-tools` (where trusted) allow calls until
    /// [`SkillSession::end_turn`]. `None` when there is no such skill.
    pub fn invoke(&self, name: &str) -> Option<(&Skill, Allowances)> {
        let skill = self.set.get(name)?;
        if skill.allowed_tools.is_empty() {
            return Some((skill, Allowances::None));
        }
        let rules = skill.allowed_tools.clone();
        let allowances = match &self.grants {
            Some(grants) if grants.trusted.contains(&skill.name) => {
                grants.permissions.grant(rules.clone());
                Allowances::Granted(rules)
            }
            _ => Allowances::Withheld(rules),
        };
        Some((skill, allowances))
    }

    /// The user's turn is over: what skills allowed ends with it.
    pub fn end_turn(&self) {
        if let Some(grants) = &self.grants {
            grants.permissions.revoke_grants();
        }
    }

    /// Up to [`MAX_SUGGESTIONS`] skills relevant to `user_text` that this session has not
    /// suggested before, best first. Text that shares too little with any skill suggests none.
    pub fn suggest(&self, user_text: &str) -> Vec<&Skill> {
        let query: String = user_text.chars().take(MAX_SUGGESTION_QUERY_CHARS).collect();
        let mut suggested = self.suggested.lock().unwrap_or_else(|e| e.into_inner());
        let limit = MAX_SUGGESTIONS + suggested.len();
        let Ok(hits) = self.set.search(&query, limit) else {
            return Vec::new();
        };
        let fresh: Vec<&Skill> = hits
            .into_iter()
            .filter(|skill| !suggested.contains(&skill.name))
            .filter(|skill| self.relevant(&query, &skill.name))
            .take(MAX_SUGGESTIONS)
            .collect();
        suggested.extend(fresh.iter().map(|s| s.name.clone()));
        fresh
    }

    /// Counts `names` as suggested already (a resumed conversation still carries their
    /// suggestion), so [`SkillSession::suggest`] does not suggest them again.
    pub fn mark_suggested(&self, names: impl IntoIterator<Item = String>) {
        self.suggested
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(names);
    }

    /// Whether a hit shares enough with the query: [`MIN_SHARED_TERMS`] distinct terms, or a
    /// term of the skill's name.
    fn relevant(&self, query: &str, name: &str) -> bool {
        let Ok(Some(explanation)) = self.set.index().explain(query, name) else {
            return false;
        };
        let shared = explanation.terms.iter().filter(|t| t.score > 0.0);
        let mut count = 0;
        for term in shared {
            if term.fields.iter().any(|(field, ..)| *field == Field::Name) {
                return true;
            }
            count += 1;
        }
        count >= MIN_SHARED_TERMS || explanation.exact_name_bonus > 0.0
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;
    use tool_core::{
        PermissionDecision, PermissionRules, Session, ToolContext, ToolError, ToolOutput, ToolSpec,
    };

    use super::*;
    use crate::skill::SkillSource;

    fn skill(name: &str, description: &str, allowed: &[&str], source: SkillSource) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            allowed_tools: allowed.iter().map(|r| r.parse().unwrap()).collect(),
            body: String::new(),
            dir: PathBuf::from("/skills").join(name),
            source,
        }
    }

    fn session() -> SkillSession {
        SkillSession::new(Arc::new(SkillSet::new(vec![
            skill(
                "release",
                "Cut a release: bump the version, tag it and publish the crates.",
                &[],
                SkillSource::Project,
            ),
            skill(
                "changelog",
                "Write the changelog entry for the changes since the last tag.",
                &[],
                SkillSource::Project,
            ),
            skill(
                "pdf",
                "Extract text and tables from PDF documents, fill PDF forms.",
                &[],
                SkillSource::User,
            ),
            skill(
                "翻译",
                "把中文文档翻译成英文,保持术语一致。",
                &[],
                SkillSource::User,
            ),
        ])))
    }

    fn names(skills: &[&Skill]) -> Vec<String> {
        skills.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn a_skill_is_suggested_once_per_session() {
        let session = session();
        let first = session.suggest("Please publish a new release with a version bump");
        assert_eq!(names(&first)[0], "release");
        let again = session.suggest("Please publish a new release with a version bump");
        assert!(!names(&again).contains(&"release".to_owned()), "{again:?}");
    }

    #[test]
    fn unrelated_text_suggests_nothing() {
        let session = session();
        assert!(session.suggest("what is the weather like today").is_empty());
        assert!(
            session
                .suggest("fix the typo in the README file")
                .is_empty()
        );
        assert!(session.suggest("???").is_empty());
        assert!(session.suggest("").is_empty());
    }

    #[test]
    fn chinese_text_suggests_the_chinese_skill() {
        let session = session();
        assert_eq!(
            names(&session.suggest("帮我把这份文档翻译成英文")),
            ["翻译"]
        );
        assert!(session.suggest("今天天气怎么样").is_empty());
    }

    #[test]
    fn at_most_three_suggestions() {
        let many: Vec<Skill> = (0..6)
            .map(|i| {
                skill(
                    &format!("deploy-{i}"),
                    "Deploy the service to the cluster.",
                    &[],
                    SkillSource::User,
                )
            })
            .collect();
        let session = SkillSession::new(Arc::new(SkillSet::new(many)));
        assert_eq!(session.suggest("deploy the service").len(), MAX_SUGGESTIONS);
        assert_eq!(session.suggest("deploy the service").len(), MAX_SUGGESTIONS);
        assert!(session.suggest("deploy the service").is_empty());
    }

    /// A shell stand-in whose permission subject is its command.
    struct Shell(ToolSpec);

    #[async_trait::async_trait]
    impl tool_core::Tool for Shell {
        type Input = serde_json::Value;
        fn spec(&self, _: serde_json::Value) -> ToolSpec {
            self.0.clone()
        }
        fn info(&self, input: &serde_json::Value) -> tool_core::CallInfo {
            let command = input["command"].as_str().map(str::to_owned);
            tool_core::CallInfo::writes().with_subject(command)
        }
        async fn call(
            &self,
            _: serde_json::Value,
            _: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ran"))
        }
    }

    #[tokio::test]
    async fn allowed_tools_apply_while_the_skill_is_in_use_and_within_deny_rules() {
        let shell = tool_core::AnyTool::new(Shell(ToolSpec::new(
            "shell",
            "Runs a command.",
            json!({"type": "object"}),
        )));
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(
            "t",
            "shell",
            Arc::new(Session::new("s", dir.path(), dir.path())),
        );
        let rules = PermissionRules::parse(&[], &[], &["shell(make deploy:*)"]).unwrap();
        let permissions = Arc::new(Permissions::new(rules));
        let set = Arc::new(SkillSet::new(vec![
            skill("build", "Builds.", &["shell(make:*)"], SkillSource::Project),
            skill(
                "untrusted",
                "Cleans.",
                &["shell(rm:*)"],
                SkillSource::Project,
            ),
        ]));
        let session =
            SkillSession::new(set).granting_in(Arc::clone(&permissions), ["build".to_owned()]);
        let runs = async |command: &str| {
            matches!(
                permissions
                    .decide(&shell, &json!({ "command": command }), &ctx)
                    .await,
                PermissionDecision::Allow { .. }
            )
        };
        assert!(!runs("make test").await, "not before the skill is used");

        let (_, allowances) = session.invoke("build").unwrap();
        assert_eq!(
            allowances,
            Allowances::Granted(vec!["shell(make:*)".parse().unwrap()])
        );
        assert!(runs("make test").await);
        assert!(
            !runs("make deploy").await,
            "the session's deny rule still applies"
        );

        let (_, withheld) = session.invoke("untrusted").unwrap();
        assert!(matches!(withheld, Allowances::Withheld(_)));
        assert!(
            !runs("rm -rf target").await,
            "an untrusted skill's tools are not granted"
        );

        session.end_turn();
        assert!(!runs("make test").await, "the grant ends with the turn");
        assert!(session.invoke("missing").is_none());
    }
}
