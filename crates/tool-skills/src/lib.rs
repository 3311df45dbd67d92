//! Skills for LLM coding agents: folders with a `SKILL.md` that teach the model a procedure.
//!
//! A skill's `SKILL.md` starts with a YAML frontmatter block (`name`, `description`, optional
//! `allowed-tools`) followed by the markdown instructions the model reads when it uses the skill;
//! files beside it (scripts, templates, references) are read on demand.
//!
//! - [`discover`] reads an ordered list of [`SkillRoot`]s (the project's first, so a project's
//!   skill wins a name over the user's); a broken `SKILL.md` is a warning naming the file;
//! - [`SkillSet`] has its own [`tool_search::SearchIndex`] (the tool search engine, its tokenizer
//!   and CJK handling) and a [`SkillSet::listing`] for the system prompt within a budget;
//! - [`SkillSession`] suggests skills for a user's message (each once per session) and grants a
//!   skill's `allowed-tools` in [`tool_core::Permissions`] until the turn ends;
//! - [`SkillTool`] is the `skill` tool: `{"name": ...}` loads a skill, `{"query": ...}` finds some.
//!
//! ```
//! use std::sync::Arc;
//! use tool_skills::{SkillRoot, SkillSession, SkillSet, discover};
//!
//! let root = tempfile::tempdir().unwrap();
//! let dir = root.path().join("release");
//! std::fs::create_dir(&dir).unwrap();
//! std::fs::write(
//!     dir.join("SKILL.md"),
//!     "---\nname: release\ndescription: Cut a release and publish the crates.\n---\nRun `make release`.\n",
//! ).unwrap();
//!
//! let found = discover(&[SkillRoot::project(root.path())]);
//! assert!(found.warnings.is_empty());
//! let set = Arc::new(SkillSet::new(found.skills));
//! assert!(set.listing(2_000).unwrap().contains("- release: Cut a release and publish the crates."));
//!
//! let session = SkillSession::new(set);
//! let suggested = session.suggest("please publish a new release");
//! assert_eq!(suggested[0].name, "release");
//! assert!(session.suggest("please publish a new release").is_empty(), "once per session");
//! ```

mod discover;
mod error;
pub mod frontmatter;
mod session;
mod set;
mod skill;
mod tool;

pub use discover::{Discovery, SkillRoot, discover};
pub use error::SkillError;
pub use frontmatter::FrontmatterError;
pub use session::{Allowances, SkillSession};
pub use set::{SkillSet, document};
pub use skill::{Skill, SkillSource, parse_skill};
pub use tool::{SKILL_TOOL, SkillInput, SkillTool, found_lines};
