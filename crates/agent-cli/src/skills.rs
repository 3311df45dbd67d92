//! Skills in the agent: where they are found, whose `allowed-tools` apply, how much of the system
//! prompt lists them, and the `<skill-discovery>` note a user's message may carry.
//!
//! Roots, first wins a name: the project's `.agent-cli/skills/` and `.claude/skills/`, then the
//! user's `<user dir>/skills/`. A project's skill lists tools to run without asking only once the
//! user trusts the folder (see [`crate::trust`]); the user's own skills are trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use tool_core::{PermissionRule, Permissions};
use tool_skills::{Skill, SkillRoot, SkillSession, SkillSet, SkillSource, discover};

use crate::settings::Paths;

/// The context window assumed when the settings name none, in tokens.
pub(crate) const DEFAULT_CONTEXT_WINDOW: usize = 200_000;

/// The share of the context window the skill listing may take, in percent.
const LISTING_SHARE_PERCENT: usize = 2;

/// The project's skill roots, in order.
pub(crate) fn project_roots(cwd: &Path) -> Vec<SkillRoot> {
    vec![
        SkillRoot::project(cwd.join(".agent-cli").join("skills")),
        SkillRoot::project(cwd.join(".claude").join("skills")),
    ]
}

/// Every skill root, in order: the project's, then the user's.
pub fn roots(paths: &Paths, cwd: &Path) -> Vec<SkillRoot> {
    let mut roots = project_roots(cwd);
    roots.push(SkillRoot::user(paths.user_dir.join("skills")));
    roots
}

/// The project's skills that list `allowed-tools`, by name: what trusting the folder would let
/// them run without asking.
pub(crate) fn project_skill_tools(cwd: &Path) -> BTreeMap<String, Vec<PermissionRule>> {
    discover(&project_roots(cwd))
        .skills
        .into_iter()
        .filter(|skill| !skill.allowed_tools.is_empty())
        .map(|skill| (skill.name, skill.allowed_tools))
        .collect()
}

/// The skill set of `cwd`, with a warning line on stderr for each file that could not be used.
pub fn load_set(paths: &Paths, cwd: &Path) -> SkillSet {
    let found = discover(&roots(paths, cwd));
    for warning in &found.warnings {
        eprintln!("warning: skill: {warning}");
    }
    SkillSet::new(found.skills)
}

/// The session's skills: the user's `allowed-tools` always apply, a project's only when named in
/// `trusted_project` (as [`crate::trust::resolve`] decides).
pub fn session(
    set: SkillSet,
    trusted_project: BTreeSet<String>,
    permissions: &Arc<Permissions>,
) -> SkillSession {
    let mut trusted = trusted_project;
    trusted.extend(
        set.iter()
            .filter(|skill| skill.source == SkillSource::User)
            .map(|skill| skill.name.clone()),
    );
    SkillSession::new(Arc::new(set)).granting_in(Arc::clone(permissions), trusted)
}

/// The characters the skill listing may take: a share of a context window of `tokens`.
pub(crate) fn listing_budget(tokens: usize) -> usize {
    tool_pool::CharEstimate::budget_chars(tokens) / 100 * LISTING_SHARE_PERCENT
}

/// The note added to a user's message for the skills suggested for it.
pub(crate) fn discovery_note(skills: &[&Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let lines: Vec<String> = skills
        .iter()
        .map(|s| {
            // One line each, so that the note can be read back (see `suggested_in`).
            let description = s.description.split_whitespace().collect::<Vec<_>>();
            format!("- {}: {}", s.name, description.join(" "))
        })
        .collect();
    Some(format!(
        "{DISCOVERY_OPEN}Skills that may help with this; load one with the skill tool ({{\"name\": \"...\"}}) before starting:\n{}\n{DISCOVERY_CLOSE}",
        lines.join("\n")
    ))
}

/// The skills that the `<skill-discovery>` notes in `text` suggested (see [`discovery_note`]).
pub(crate) fn suggested_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(DISCOVERY_OPEN) {
        let note = &rest[start + DISCOVERY_OPEN.len()..];
        let end = note.find(DISCOVERY_CLOSE).unwrap_or(note.len());
        names.extend(note[..end].lines().filter_map(|line| {
            let (name, _) = line.strip_prefix("- ")?.split_once(": ")?;
            Some(name.trim().to_owned())
        }));
        rest = &note[end..];
    }
    names
}

const DISCOVERY_OPEN: &str = "<skill-discovery>";
const DISCOVERY_CLOSE: &str = "</skill-discovery>";

/// One skill as `agent-cli skills list` shows it: name, whose, description, allowances, folder.
pub fn describe(skill: &Skill, trusted: bool) -> String {
    let mut text = format!(
        "{} ({}): {}\n  {}",
        skill.name,
        skill.source,
        skill.description.trim(),
        skill.dir.display()
    );
    if !skill.allowed_tools.is_empty() {
        let tools: Vec<String> = skill
            .allowed_tools
            .iter()
            .map(ToString::to_string)
            .collect();
        let note = if trusted {
            ""
        } else {
            " (waits for the folder's trust)"
        };
        text.push_str(&format!("\n  allowed tools: {}{note}", tools.join(", ")));
    }
    text
}

/// How many skills a `tool_search` keyword search lists beside the tools it finds.
const RELATED_SKILLS: usize = 3;

/// The skills as `tool_search` finds them: a keyword search there also searches the skills'
/// own index, so a model that looks for a capability with `tool_search` finds a skill for it.
pub struct SkillSearch(pub Arc<SkillSession>);

impl tool_pool::RelatedSearch for SkillSearch {
    fn related(&self, query: &str) -> Option<String> {
        let found = self.0.set().search(query, RELATED_SKILLS).ok()?;
        (!found.is_empty()).then(|| {
            format!(
                "Skills that match (instructions, not tools: load one with the skill tool, {{\"name\": \"...\"}}):\n{}",
                tool_skills::found_lines(&found)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skills_a_note_suggested_are_read_back_from_it() {
        let set = SkillSet::new(vec![
            tool_skills::parse_skill(
                "---\nname: release\ndescription: Cut a release.\n---\nbody",
                Path::new("/s/release"),
                SkillSource::Project,
            )
            .unwrap()
            .0,
            tool_skills::parse_skill(
                "---\nname: db:pdf\ndescription: \"Fill PDF forms: text.\\n- release: fields.\"\n---\nbody",
                Path::new("/s/pdf"),
                SkillSource::Project,
            )
            .unwrap()
            .0,
        ]);
        let skills: Vec<&Skill> = set.iter().collect();
        let note = discovery_note(&skills).unwrap();
        let text = format!("cut it\n\n{note}\n- not-a-skill: outside the note");
        let mut found = suggested_in(&text);
        found.sort();
        assert_eq!(found, ["db:pdf", "release"]);
        assert!(suggested_in("- release: no note here").is_empty());
    }

    #[test]
    fn the_listing_takes_two_percent_of_the_window_at_four_chars_a_token() {
        assert_eq!(listing_budget(DEFAULT_CONTEXT_WINDOW), 16_000);
        assert_eq!(listing_budget(1_000), 80);
        assert_eq!(listing_budget(usize::MAX), usize::MAX / 100 * 2);
    }
}
