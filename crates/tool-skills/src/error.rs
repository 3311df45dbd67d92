//! The errors of this crate: each names the `SKILL.md` (or folder) it is about, so a front end
//! can show it as a warning the user can act on.

use std::path::PathBuf;

use crate::frontmatter::FrontmatterError;

/// Why a skill (or one part of it) was not loaded. Discovery reports these as warnings and goes
/// on with the other skills.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A skills folder or a `SKILL.md` could not be read.
    #[error("{}: cannot be read: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The `SKILL.md` is larger than a skill may be.
    #[error("{}: {size} bytes is more than a skill may hold ({max} bytes); the skill is skipped", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The most a `SKILL.md` may hold.
        max: u64,
    },
    /// The frontmatter is missing or not valid YAML of the expected shape.
    #[error("{}: {source}; the skill is skipped", path.display())]
    Frontmatter {
        /// The file.
        path: PathBuf,
        /// What is wrong, and on which line.
        source: FrontmatterError,
    },
    /// A required frontmatter field is missing or empty.
    #[error("{}: the frontmatter has no `{field}`; the skill is skipped", path.display())]
    MissingField {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
    },
    /// The name is not one a model can pass back reliably.
    #[error(
        "{}: the skill name `{name}` is not valid (use 1 to 64 letters, digits, `-`, `_`, `.` or `:`); the skill is skipped",
        path.display()
    )]
    InvalidName {
        /// The file.
        path: PathBuf,
        /// The name as written.
        name: String,
    },
    /// Two folders of the same root declare the same name.
    #[error("{}: another skill in the same folder is already named `{name}`; this one is skipped", path.display())]
    DuplicateName {
        /// The file that was skipped.
        path: PathBuf,
        /// The name.
        name: String,
    },
    /// An `allowed-tools` entry is not a permission rule.
    #[error("{}: `allowed-tools` entry `{entry}` is ignored: {reason}", path.display())]
    InvalidAllowedTool {
        /// The file.
        path: PathBuf,
        /// The entry as written.
        entry: String,
        /// Why it is not a rule.
        reason: String,
    },
}
