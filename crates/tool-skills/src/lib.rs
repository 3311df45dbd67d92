//! Skills for LLM coding agents: folders with a `SKILL.md` that teach the model a procedure.
//!
//! A skill's `SKILL.md` starts with a YAML frontmatter block (`name`, `description`, optional
//! `allowed-tools`) followed by the markdown body the model reads when it uses the skill.
//! [`frontmatter::parse`] reads such a file into any `Deserialize` type:
//!
//! ```
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Meta {
//!     name: String,
//! }
//!
//! let text = "---\nname: release\n---\n# Cutting a release\n";
//! let (meta, body): (Meta, &str) = tool_skills::frontmatter::parse(text).unwrap();
//! assert_eq!(meta.name, "release");
//! assert_eq!(body, "# Cutting a release\n");
//! ```

pub mod frontmatter;

pub use frontmatter::FrontmatterError;
