//! Project instructions: `AGENTS.md` (the convention many agents share) and `CLAUDE.md`, from the
//! repository's root down to the working directory, then the user's own file in the config
//! directory, joined in that order under a size budget for the system prompt.

use std::path::{Path, PathBuf};

/// The file names read in each folder, in this order.
pub(crate) const FILE_NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// How many bytes of instructions go into the system prompt, unless the caller says otherwise.
pub const DEFAULT_BUDGET: usize = 40_000;

/// One instructions file and the text of it that fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Where it was read.
    pub path: PathBuf,
    /// Its text (cut when it did not fit).
    pub text: String,
    /// How many bytes were cut off its end.
    pub cut: usize,
}

/// The instruction files that apply in `cwd`, in order: from the repository root (the nearest
/// folder above `cwd` holding `.git`; `cwd` itself when there is none) down to `cwd`, then the
/// files in `user_dir`.
pub fn files(cwd: &Path, user_dir: &Path) -> Vec<PathBuf> {
    let root = cwd
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd);
    let mut folders: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .collect();
    folders.reverse();
    folders.push(user_dir);
    let mut out = Vec::new();
    for folder in folders {
        for name in FILE_NAMES {
            let path = folder.join(name);
            if path.is_file() && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// Reads `paths` in order until `budget` bytes are used; the file that passes it is cut at a
/// line boundary, and later files are left out (each with a note saying so).
pub fn load(paths: &[PathBuf], budget: usize) -> Vec<Source> {
    let mut left = budget;
    let mut out = Vec::new();
    for path in paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let text = text.trim().to_owned();
        if text.is_empty() {
            continue;
        }
        let keep = fitting(&text, left);
        left -= keep;
        out.push(Source {
            path: path.clone(),
            cut: text.len() - keep,
            text: text[..keep].to_owned(),
        });
    }
    out
}

/// How much of `text` fits in `room` bytes, ending at a line boundary where one is near.
fn fitting(text: &str, room: usize) -> usize {
    if text.len() <= room {
        return text.len();
    }
    let end = text.floor_char_boundary(room);
    text[..end].rfind('\n').unwrap_or(end)
}

/// The system prompt section for `sources`, or `None` when there are none.
pub fn prompt_section(sources: &[Source], budget: usize) -> Option<String> {
    if sources.is_empty() {
        return None;
    }
    let mut out = String::from(
        "\n# Project instructions\nThe user and the repository ask you to follow these instructions \
         (later files are more specific).\n",
    );
    for source in sources {
        out.push_str(&format!("\n## {}\n", source.path.display()));
        if !source.text.is_empty() {
            out.push_str(&source.text);
            out.push('\n');
        }
        if source.cut > 0 {
            out.push_str(&format!(
                "[{} more bytes of {} were cut here: project instructions may take {budget} bytes; read the file for the rest]\n",
                source.cut,
                source.path.display()
            ));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_go_from_the_repository_root_down_then_the_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let sub = root.join("crates").join("x");
        let user = dir.path().join("user");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "above the repository").unwrap();
        std::fs::write(root.join("AGENTS.md"), "root").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root claude").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "sub").unwrap();
        std::fs::write(user.join("AGENTS.md"), "mine").unwrap();
        let found = files(&sub, &user);
        assert_eq!(
            found,
            [
                root.join("AGENTS.md"),
                root.join("CLAUDE.md"),
                sub.join("AGENTS.md"),
                user.join("AGENTS.md")
            ]
        );
        let sources = load(&found, 12);
        let texts: Vec<(&str, usize)> = sources.iter().map(|s| (s.text.as_str(), s.cut)).collect();
        assert_eq!(texts, [("root", 0), ("root cla", 3), ("", 3), ("", 4)]);
        let section = prompt_section(&sources, 12).unwrap();
        assert!(section.contains("[3 more bytes of"), "{section}");
    }
}
