//! One skill: what its `SKILL.md` says, and where it lives.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tool_core::PermissionRule;

use crate::error::SkillError;
use crate::frontmatter;

/// The file that makes a folder a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// The longest a skill's name may be.
const MAX_NAME_CHARS: usize = 64;

/// Whose skill it is: the project's skills are untrusted input until the user trusts the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkillSource {
    /// From the project's folders (`.agent-cli/skills/`, `.claude/skills/`).
    Project,
    /// From the user's own config folder.
    User,
}

impl fmt::Display for SkillSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Project => "project",
            Self::User => "user",
        })
    }
}

/// A skill: a folder with a `SKILL.md` whose frontmatter names and describes it and whose body
/// tells the model how to do one kind of task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its unique name (the frontmatter's `name`).
    pub name: String,
    /// What it is for and when to use it (the frontmatter's `description`).
    pub description: String,
    /// Tools that run without a prompt while the skill is in use (`allowed-tools`), as rules.
    pub allowed_tools: Vec<PermissionRule>,
    /// The markdown after the frontmatter.
    pub body: String,
    /// The skill's folder: files the body mentions are relative to it.
    pub dir: PathBuf,
    /// Whose it is.
    pub source: SkillSource,
}

impl Skill {
    /// The skill's `SKILL.md`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// The frontmatter fields a skill reads; others (`license`, `metadata`, ...) are allowed and
/// ignored. Every field is optional here so a missing one is reported by name, with the file.
#[derive(Debug, Deserialize)]
struct SkillMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "allowed-tools")]
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools` as a YAML list, or as the comma-separated string Claude Code writes.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    List(Vec<String>),
    Text(String),
}

impl AllowedTools {
    fn entries(self) -> Vec<String> {
        match self {
            Self::List(list) => list,
            Self::Text(text) => split_top_level_commas(&text),
        }
    }
}

/// Reads a skill from the text of its `SKILL.md`. The skill is returned with the warnings about
/// parts of it that were left out (an `allowed-tools` entry that is not a rule); a skill that
/// cannot be used at all is an error.
pub fn parse_skill(
    text: &str,
    dir: &Path,
    source: SkillSource,
) -> Result<(Skill, Vec<SkillError>), SkillError> {
    let file = dir.join(SKILL_FILE);
    let (meta, body) =
        frontmatter::parse::<SkillMeta>(text).map_err(|source| SkillError::Frontmatter {
            path: file.clone(),
            source,
        })?;
    let required = |value: Option<String>, field: &'static str| {
        value
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| SkillError::MissingField {
                path: file.clone(),
                field,
            })
    };
    let name = required(meta.name, "name")?;
    let description = required(meta.description, "description")?;
    if !is_valid_name(&name) {
        return Err(SkillError::InvalidName { path: file, name });
    }
    let mut warnings = Vec::new();
    let mut allowed_tools: Vec<PermissionRule> = Vec::new();
    for entry in meta
        .allowed_tools
        .map(AllowedTools::entries)
        .unwrap_or_default()
    {
        match allowed_tool(&entry) {
            Ok(rule) if !allowed_tools.contains(&rule) => allowed_tools.push(rule),
            Ok(_) => {}
            Err(reason) => warnings.push(SkillError::InvalidAllowedTool {
                path: file.clone(),
                entry,
                reason,
            }),
        }
    }
    let skill = Skill {
        name,
        description,
        allowed_tools,
        body: body.trim_start_matches(['\r', '\n']).to_owned(),
        dir: dir.to_path_buf(),
        source,
    };
    Ok((skill, warnings))
}

/// Whether a model can name the skill back reliably: 1 to 64 letters, digits, `-`, `_`, `.`, `:`.
fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// One `allowed-tools` entry as a permission rule, Claude Code's tool names mapped to ours.
fn allowed_tool(entry: &str) -> Result<PermissionRule, String> {
    let rule: PermissionRule = entry.trim().parse().map_err(|e| format!("{e}"))?;
    let ours = tool_core::tool_name_from_claude(rule.tool_name());
    Ok(match (ours, rule.content()) {
        (Some(name), Some(content)) => PermissionRule::with_content(name, content),
        (Some(name), None) => PermissionRule::tool(name),
        (None, _) => rule,
    })
}

/// Splits `Read, Bash(git add:*, git commit:*)` at the commas outside parentheses.
fn split_top_level_commas(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<(Skill, Vec<SkillError>), SkillError> {
        parse_skill(text, Path::new("/skills/demo"), SkillSource::Project)
    }

    fn rules(skill: &Skill) -> Vec<String> {
        skill
            .allowed_tools
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn reads_name_description_body_and_folder() {
        let (skill, warnings) =
            parse("---\nname: demo\ndescription: Shows how.\nlicense: MIT\n---\n\n# Demo\n")
                .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(skill.name, "demo");
        assert_eq!(skill.description, "Shows how.");
        assert_eq!(skill.body, "# Demo\n");
        assert_eq!(skill.file(), Path::new("/skills/demo/SKILL.md"));
        assert!(skill.allowed_tools.is_empty());
    }

    #[test]
    fn allowed_tools_as_a_list_or_a_comma_separated_string() {
        let (list, _) = parse(
            "---\nname: a\ndescription: d\nallowed-tools:\n  - read_file\n  - shell(make:*)\n---\n",
        )
        .unwrap();
        assert_eq!(rules(&list), ["read_file", "shell(make:*)"]);
        let (text, _) = parse(
            "---\nname: a\ndescription: d\nallowed-tools: Read, Grep, Bash(git add:*, git status:*), Bash(git add:*, git status:*)\n---\n",
        )
        .unwrap();
        assert_eq!(
            rules(&text),
            ["read_file", "grep", "shell(git add:*, git status:*)"],
            "Claude Code's names are mapped and repeats dropped"
        );
    }

    #[test]
    fn a_bad_allowed_tools_entry_is_a_warning_and_the_rest_stays() {
        let (skill, warnings) =
            parse("---\nname: a\ndescription: d\nallowed-tools: [read_file, \"bad tool(\"]\n---\n")
                .unwrap();
        assert_eq!(rules(&skill), ["read_file"]);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0]
                .to_string()
                .starts_with("/skills/demo/SKILL.md: `allowed-tools` entry `bad tool(`"),
            "{}",
            warnings[0]
        );
    }

    #[test]
    fn missing_fields_and_bad_names_name_the_file() {
        let errors: Vec<String> = [
            "---\ndescription: d\n---\n",
            "---\nname: a\ndescription: \"  \"\n---\n",
            "---\nname: two words\ndescription: d\n---\n",
            "no frontmatter at all\n",
            "---\nname: a\ndescription: [d\n---\n",
        ]
        .iter()
        .map(|text| parse(text).unwrap_err().to_string())
        .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }
}
