//! Finding skills: each root's sub-folders that hold a `SKILL.md`, earlier roots first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::SkillError;
use crate::skill::{SKILL_FILE, Skill, SkillSource, parse_skill};

/// The most a `SKILL.md` may hold; a larger file is skipped with a warning rather than read into
/// every request that uses it.
pub(crate) const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// A folder whose sub-folders are skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    /// The folder, such as `<project>/.agent-cli/skills`.
    pub dir: PathBuf,
    /// Whose skills these are.
    pub source: SkillSource,
}

impl SkillRoot {
    /// A root of the project's skills.
    pub fn project(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            source: SkillSource::Project,
        }
    }

    /// A root of the user's own skills.
    pub fn user(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            source: SkillSource::User,
        }
    }
}

/// The skills found, and what was wrong with those (or the parts of them) that were not loaded.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The skills, in root order and by folder name within a root; names are unique.
    pub skills: Vec<Skill>,
    /// One warning per file (or entry) left out, naming the file.
    pub warnings: Vec<SkillError>,
}

/// Finds the skills under `roots`, in order: a skill whose name an earlier root already has is
/// left out, so the project's skill wins over the user's of the same name when the project's
/// roots come first. A root that does not exist has no skills; nothing here fails as a whole.
pub fn discover(roots: &[SkillRoot]) -> Discovery {
    let mut found = Discovery::default();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for root in roots {
        let mut in_root: BTreeSet<String> = BTreeSet::new();
        for dir in skill_dirs(&root.dir, &mut found.warnings) {
            let Some((skill, warnings)) = load(&dir, root.source, &mut found.warnings) else {
                continue;
            };
            if !in_root.insert(skill.name.clone()) {
                found.warnings.push(SkillError::DuplicateName {
                    path: skill.file(),
                    name: skill.name,
                });
                continue;
            }
            if taken.insert(skill.name.clone()) {
                found.warnings.extend(warnings);
                found.skills.push(skill);
            }
        }
    }
    found
}

/// The sub-folders of `root` that have a `SKILL.md`, sorted by name.
fn skill_dirs(root: &Path, warnings: &mut Vec<SkillError>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(source) => {
            warnings.push(SkillError::Read {
                path: root.to_path_buf(),
                source,
            });
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join(SKILL_FILE).is_file())
        .collect();
    dirs.sort();
    dirs
}

/// One skill folder's skill, or `None` with a warning.
fn load(
    dir: &Path,
    source: SkillSource,
    warnings: &mut Vec<SkillError>,
) -> Option<(Skill, Vec<SkillError>)> {
    let file = dir.join(SKILL_FILE);
    let read = std::fs::metadata(&file).and_then(|meta| {
        if meta.len() > MAX_SKILL_BYTES {
            Ok(Err(meta.len()))
        } else {
            std::fs::read(&file).map(Ok)
        }
    });
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(size)) => {
            warnings.push(SkillError::TooLarge {
                path: file,
                size,
                max: MAX_SKILL_BYTES,
            });
            return None;
        }
        Err(source) => {
            warnings.push(SkillError::Read { path: file, source });
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    match parse_skill(&text, dir, source) {
        Ok(parsed) => Some(parsed),
        Err(error) => {
            warnings.push(error);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, folder: &str, text: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SKILL_FILE), text).unwrap();
    }

    fn skill(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n")
    }

    #[test]
    fn earlier_roots_win_a_name_and_missing_roots_are_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let claude = tmp.path().join("claude");
        let user = tmp.path().join("user");
        write(
            &project,
            "release",
            &skill("release", "The project's release."),
        );
        write(
            &claude,
            "release-claude",
            &skill("release", "Claude's release."),
        );
        write(&claude, "lint", &skill("lint", "Runs the linters."));
        write(&user, "release", &skill("release", "My own release."));
        write(&user, "notes", &skill("notes", "Takes notes."));
        std::fs::create_dir_all(user.join("not-a-skill")).unwrap();
        let found = discover(&[
            SkillRoot::project(&project),
            SkillRoot::project(&claude),
            SkillRoot::user(&user),
            SkillRoot::user(tmp.path().join("missing")),
        ]);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        let seen: Vec<(&str, &str, SkillSource)> = found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
            .collect();
        assert_eq!(
            seen,
            [
                ("release", "The project's release.", SkillSource::Project),
                ("lint", "Runs the linters.", SkillSource::Project),
                ("notes", "Takes notes.", SkillSource::User),
            ]
        );
        assert_eq!(found.skills[0].dir, project.join("release"));
    }

    #[test]
    fn a_broken_skill_is_a_warning_naming_its_file_and_the_others_load() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "good", &skill("good", "Works."));
        write(
            root,
            "broken",
            "---\nname: broken\ndescription: [oops\n---\n",
        );
        write(root, "nameless", "---\ndescription: No name.\n---\n");
        write(root, "twin", &skill("good", "Same name, same root."));
        write(root, "huge", &"x".repeat(MAX_SKILL_BYTES as usize + 1));
        let found = discover(&[SkillRoot::project(root)]);
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"]);
        let root_text = root.display().to_string();
        let warnings: Vec<String> = found
            .warnings
            .iter()
            .map(|w| w.to_string().replace(&root_text, "<root>"))
            .collect();
        insta::assert_snapshot!(warnings.join("\n"));
    }
}
