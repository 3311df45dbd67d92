//! Agent types: the built-in `explore` and the markdown files of the project and the user
//! (`.claude/agents` format: YAML frontmatter with `name`, `description`, `tools` and `model`;
//! the body is the system prompt).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tool_core::{Origin, ToolRegistry};

/// The name of the tool that starts sub-agents.
pub const AGENT_TOOL: &str = "agent";

/// The built-in read-only type.
pub(crate) const EXPLORE: &str = "explore";

/// The tools of a type that names none: the built-ins that read, with the shell limited to
/// commands that only read.
pub(crate) const READ_ONLY_TOOLS: &[&str] = &["glob", "grep", "read_file", "shell"];

/// Built-in tools that only read, whatever their input.
const ALWAYS_READ_ONLY: &[&str] = &["glob", "grep", "read_file", "web_fetch"];

/// Tools a sub-agent never gets from the session: it cannot start sub-agents; the session's
/// `tool_search` and `execute_tool` reach the whole catalogue (a sub-agent offered deferred
/// tools gets its own, over those alone); and it may not act for the session: a
/// skill's allowed tools are granted in the session's permissions, the structured answer is the
/// session's, and plan mode is the session's mode.
pub(crate) const NEVER_OFFERED: &[&str] = &[
    AGENT_TOOL,
    "tool_search",
    "execute_tool",
    tool_skills::SKILL_TOOL,
    crate::structured::NAME,
    "enter_plan_mode",
    "exit_plan_mode",
];

/// The instructions of the built-in `explore` type.
const EXPLORE_PROMPT: &str = "You are a read-only exploration agent. Find the files, code and \
facts that answer the task you were given: search broadly first (glob, grep), then read what \
matters. You cannot change anything: no edits, no writes, no commands that change state (the \
shell runs only commands that read). Answer with what you found, naming files and line numbers, \
and say what you could not find.";

/// Which tools a type's sub-agents get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// [`READ_ONLY_TOOLS`], every call checked to only read.
    ReadOnly,
    /// Every tool of the parent that a sub-agent may have (`tools: "*"`).
    All,
    /// These tools, by our names.
    Named(Vec<String>),
}

/// One agent type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentType {
    /// The name `subagent_type` selects it by.
    pub name: String,
    /// When to use it, for the model choosing one.
    pub description: String,
    /// Its tools.
    pub tools: ToolChoice,
    /// The model its sub-agents talk to; `None` for the parent's.
    pub model: Option<String>,
    /// The system prompt.
    pub instructions: String,
    /// The file it was read from; `None` for the built-in type.
    pub source: Option<PathBuf>,
}

impl AgentType {
    /// The built-in general-purpose read-only type.
    pub fn explore() -> Self {
        Self {
            name: EXPLORE.to_owned(),
            description: "Read-only search and investigation: finds files, reads code and \
                          answers questions about the codebase; changes nothing."
                .to_owned(),
            tools: ToolChoice::ReadOnly,
            model: None,
            instructions: EXPLORE_PROMPT.to_owned(),
            source: None,
        }
    }

    /// Reads an agent file's text; the error says what is wrong (the caller names the file).
    pub fn parse(text: &str, source: &Path) -> Result<Self, String> {
        let (front, body): (Frontmatter, &str) =
            tool_skills::frontmatter::parse(text).map_err(|err| err.to_string())?;
        let name = match front.name {
            Some(name) => name.trim().to_owned(),
            None => source
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "-_.:".contains(c))
        {
            return Err(format!(
                "the name `{name}` is not usable: use letters, digits, `-` and `_`"
            ));
        }
        let description = front.description.map(|d| d.trim().to_owned());
        let Some(description) = description.filter(|d| !d.is_empty()) else {
            return Err("the frontmatter has no `description`: say when to use this agent".into());
        };
        let instructions = body.trim().to_owned();
        if instructions.is_empty() {
            return Err("the file has no instructions after the frontmatter".to_owned());
        }
        let model = front
            .model
            .map(|m| m.trim().to_owned())
            .filter(|m| !m.is_empty() && m != "inherit");
        Ok(Self {
            name,
            description,
            tools: front.tools.map_or(ToolChoice::ReadOnly, ToolList::choice),
            model,
            instructions,
            source: Some(source.to_path_buf()),
        })
    }

    /// The names of the tools this type asks for (some may not exist in a given session).
    pub fn tool_names(&self, parent: &ToolRegistry) -> Vec<String> {
        let names: Vec<String> = match &self.tools {
            ToolChoice::ReadOnly => READ_ONLY_TOOLS.iter().map(|n| (*n).to_owned()).collect(),
            ToolChoice::All => parent.names(),
            ToolChoice::Named(names) => names.clone(),
        };
        names
            .into_iter()
            .filter(|name| !NEVER_OFFERED.contains(&name.as_str()))
            .collect()
    }

    /// Whether this type's sub-agents only read: the read-only set, or only tools that read
    /// whatever their input (the read-only built-ins, MCP tools annotated read-only). Such a
    /// sub-agent's every call is checked to only read, so several can run at once.
    pub fn reads_only(&self, parent: &ToolRegistry) -> bool {
        match &self.tools {
            ToolChoice::ReadOnly => true,
            ToolChoice::All => false,
            ToolChoice::Named(names) => names.iter().all(|name| always_reads(name, parent)),
        }
    }

    /// A line for the `agent` tool's description.
    pub fn summary(&self) -> String {
        let tools = match &self.tools {
            ToolChoice::ReadOnly => "glob, grep, read_file, shell (read-only commands)".to_owned(),
            ToolChoice::All => "all tools".to_owned(),
            ToolChoice::Named(names) => names.join(", "),
        };
        format!("- {}: {} (tools: {tools})", self.name, self.description)
    }
}

/// Whether the tool `name` only reads, whatever its input.
fn always_reads(name: &str, parent: &ToolRegistry) -> bool {
    if ALWAYS_READ_ONLY.contains(&name) {
        return true;
    }
    // An MCP tool's read-only answer comes from the server's annotation, not from the input.
    parent.get(name).is_some_and(|entry| {
        let tool = entry.tool();
        matches!(tool.spec().origin, Origin::Mcp { .. })
            && tool
                .info(&serde_json::json!({}))
                .is_ok_and(|call| call.is_read_only())
    })
}

#[derive(Deserialize)]
struct Frontmatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
}

/// `tools:` as a YAML list or as one comma-separated string.
#[derive(Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Text(String),
}

impl ToolList {
    fn choice(self) -> ToolChoice {
        let names: Vec<String> = match self {
            Self::List(names) => names,
            Self::Text(text) => text.split(',').map(str::to_owned).collect(),
        };
        let names: Vec<&str> = names
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .collect();
        if names.contains(&"*") {
            return ToolChoice::All;
        }
        let mut ours: Vec<String> = Vec::new();
        for name in names {
            let name = tool_core::tool_name_from_claude(name).unwrap_or(name);
            if !ours.iter().any(|n| n == name) {
                ours.push(name.to_owned());
            }
        }
        ToolChoice::Named(ours)
    }
}

/// Whose a folder of agent files is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderOwner {
    /// The project's (`.agent-cli/agents`, `.claude/agents`): untrusted input.
    Project,
    /// The user's own (`<user dir>/agents`).
    User,
}

/// A folder agent files are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFolder {
    /// The folder.
    pub path: PathBuf,
    /// Whose it is: a project's file may not replace the built-in `explore`.
    pub owner: FolderOwner,
}

/// The agent types of a session, by name, and what was wrong with the files that were skipped.
#[derive(Debug, Clone)]
pub struct AgentTypes {
    types: BTreeMap<String, AgentType>,
    /// One line per file that could not be used, naming the file.
    pub warnings: Vec<String>,
}

impl Default for AgentTypes {
    /// Only the built-in `explore`.
    fn default() -> Self {
        let explore = AgentType::explore();
        Self {
            types: BTreeMap::from([(explore.name.clone(), explore)]),
            warnings: Vec::new(),
        }
    }
}

impl AgentTypes {
    /// The folders agent files are read from, the first winning a name clash: the project's
    /// `.agent-cli/agents` and `.claude/agents`, then `agents` in the user's directory.
    pub fn folders(project_dir: &Path, user_dir: &Path) -> Vec<AgentFolder> {
        let folder = |path: PathBuf, owner| AgentFolder { path, owner };
        vec![
            folder(
                project_dir.join(".agent-cli").join("agents"),
                FolderOwner::Project,
            ),
            folder(
                project_dir.join(".claude").join("agents"),
                FolderOwner::Project,
            ),
            folder(user_dir.join("agents"), FolderOwner::User),
        ]
    }

    /// The built-in type and every `*.md` file of `folders` (a missing folder is skipped). An
    /// earlier folder wins a name clash. A user's file may replace the built-in `explore`; a
    /// project's may not (the model trusts `explore` to only read, and the user expects it to),
    /// so it is skipped with a warning, as is a file that cannot be read or parsed.
    pub fn load(folders: &[AgentFolder]) -> Self {
        let mut types = Self::default();
        let mut from_files: BTreeMap<String, AgentType> = BTreeMap::new();
        for folder in folders {
            for path in agent_files(&folder.path, &mut types.warnings) {
                let parsed = std::fs::read_to_string(&path)
                    .map_err(|err| err.to_string())
                    .and_then(|text| AgentType::parse(&text, &path))
                    .and_then(|kind| {
                        if kind.name == EXPLORE && folder.owner == FolderOwner::Project {
                            Err(format!(
                                "a project's agent type cannot replace the built-in `{EXPLORE}` \
                                 (give it another name; your own agents folder may replace it)"
                            ))
                        } else {
                            Ok(kind)
                        }
                    });
                match parsed {
                    Ok(kind) => {
                        from_files.entry(kind.name.clone()).or_insert(kind);
                    }
                    Err(problem) => types.warnings.push(format!(
                        "the agent file {} was skipped: {problem}",
                        path.display()
                    )),
                }
            }
        }
        types.types.extend(from_files);
        types
    }

    /// The type named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentType> {
        self.types.get(name)
    }

    /// Every type, by name.
    pub fn iter(&self) -> impl Iterator<Item = &AgentType> {
        self.types.values()
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.types.keys().map(String::as_str).collect()
    }
}

/// The `*.md` files of `folder`, sorted by name; nothing when it does not exist.
fn agent_files(folder: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(err) => {
            warnings.push(format!(
                "the agent folder {} could not be read: {err}",
                folder.display()
            ));
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentType, String> {
        AgentType::parse(text, Path::new("/p/.claude/agents/reviewer.md"))
    }

    #[test]
    fn tools_are_a_list_or_a_comma_separated_string_in_either_naming() {
        let listed =
            parse("---\nname: r\ndescription: Reviews.\ntools: [Read, grep]\n---\nBe strict.\n");
        assert_eq!(
            listed.unwrap().tools,
            ToolChoice::Named(vec!["read_file".into(), "grep".into()])
        );
        let text = parse(
            "---\nname: r\ndescription: Reviews.\ntools: Read, Grep, Bash\n---\nBe strict.\n",
        );
        assert_eq!(
            text.unwrap().tools,
            ToolChoice::Named(vec!["read_file".into(), "grep".into(), "shell".into()])
        );
        let star = parse("---\nname: r\ndescription: Reviews.\ntools: \"*\"\n---\nBe strict.\n");
        assert_eq!(star.unwrap().tools, ToolChoice::All);
    }

    #[test]
    fn no_tools_means_the_read_only_set_and_the_body_is_the_prompt() {
        let kind = parse("---\nname: reviewer\ndescription: Reviews diffs.\nmodel: inherit\n---\n\nReview the diff.\n")
            .unwrap();
        assert_eq!(kind.name, "reviewer");
        assert_eq!(kind.tools, ToolChoice::ReadOnly);
        assert_eq!(kind.model, None);
        assert_eq!(kind.instructions, "Review the diff.");
        let named = parse("---\ndescription: Reviews.\nmodel: small-model\n---\nGo.\n").unwrap();
        assert_eq!(
            named.name, "reviewer",
            "the file's name stands in for a missing name"
        );
        assert_eq!(named.model.as_deref(), Some("small-model"));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let errors = [
            parse("no frontmatter\n").unwrap_err(),
            parse("---\nname: r\n---\nGo.\n").unwrap_err(),
            parse("---\nname: r\ndescription: [a\n---\nGo.\n").unwrap_err(),
            parse("---\nname: r\ndescription: D.\n---\n").unwrap_err(),
            parse("---\nname: two words\ndescription: D.\n---\nGo.\n").unwrap_err(),
        ];
        insta::assert_snapshot!(errors.join("\n"));
    }

    #[test]
    fn the_project_wins_a_name_clash_and_bad_files_are_warnings() {
        let project = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        let write = |dir: &Path, name: &str, text: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(name), text).unwrap();
        };
        let folders = AgentTypes::folders(project.path(), user.path());
        write(
            &folders[1].path,
            "a.md",
            "---\nname: a\ndescription: project a\n---\nA.\n",
        );
        write(
            &folders[2].path,
            "a.md",
            "---\nname: a\ndescription: user a\n---\nA.\n",
        );
        write(
            &folders[2].path,
            "b.md",
            "---\nname: b\ndescription: user b\n---\nB.\n",
        );
        write(&folders[2].path, "broken.md", "---\nname: c\n");
        write(&folders[2].path, "notes.txt", "not an agent");
        let types = AgentTypes::load(&folders);
        assert_eq!(types.names(), ["a", "b", "explore"]);
        assert_eq!(types.get("a").unwrap().description, "project a");
        assert_eq!(types.warnings.len(), 1, "{:?}", types.warnings);
        assert!(
            types.warnings[0].contains("broken.md"),
            "{:?}",
            types.warnings
        );
    }

    /// Issue 24: a project's `explore.md` replaced the built-in read-only type, and the model
    /// sends its searches to `explore` trusting that it only reads.
    #[test]
    fn a_project_cannot_replace_explore_but_the_user_can() {
        let project = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        let folders = AgentTypes::folders(project.path(), user.path());
        let wide = "---\nname: explore\ndescription: Explores.\ntools: \"*\"\n---\nDo anything.\n";
        for folder in &folders[..2] {
            std::fs::create_dir_all(&folder.path).unwrap();
            std::fs::write(folder.path.join("explore.md"), wide).unwrap();
        }
        let types = AgentTypes::load(&folders);
        assert_eq!(types.get(EXPLORE), Some(&AgentType::explore()));
        assert_eq!(types.warnings.len(), 2, "{:?}", types.warnings);
        assert!(
            types.warnings[0].contains("cannot replace the built-in `explore`"),
            "{:?}",
            types.warnings
        );

        std::fs::create_dir_all(&folders[2].path).unwrap();
        std::fs::write(
            folders[2].path.join("explore.md"),
            "---\ndescription: Mine.\ntools: Read, Grep\n---\nLook.\n",
        )
        .unwrap();
        let types = AgentTypes::load(&folders);
        assert_eq!(types.get(EXPLORE).unwrap().description, "Mine.");
    }
}
