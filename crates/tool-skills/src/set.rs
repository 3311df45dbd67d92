//! The session's skills: looked up by name, searched with the tool search engine, and listed for
//! the system prompt within a budget.

use std::collections::BTreeMap;

use tool_search::{SearchError, SearchIndex, ToolDocument};

use crate::skill::Skill;

/// The most characters of a description the listing shows; the rest is one `skill` call away.
pub(crate) const MAX_LISTED_DESCRIPTION_CHARS: usize = 250;

/// A set of skills with unique names and their own search index (the same engine, tokenizer and
/// CJK handling as tool search, but never mixed with the tools).
pub struct SkillSet {
    /// By name.
    skills: BTreeMap<String, Skill>,
    /// The names in listing order: the project's skills first, then the user's, each by name.
    listing_order: Vec<String>,
    index: SearchIndex,
}

impl std::fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSet")
            .field("skills", &self.listing_order)
            .finish()
    }
}

impl Default for SkillSet {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

/// A skill as a search document: its name and its description, as a tool's are.
pub fn document(skill: &Skill) -> ToolDocument {
    ToolDocument::new(skill.name.clone(), skill.description.clone())
}

impl SkillSet {
    /// The set of `skills`; of two with the same name, the first is kept.
    pub fn new(skills: Vec<Skill>) -> Self {
        let mut by_name = BTreeMap::new();
        for skill in skills {
            by_name.entry(skill.name.clone()).or_insert(skill);
        }
        let mut listing_order: Vec<&Skill> = by_name.values().collect();
        listing_order.sort_by(|a, b| (a.source, &a.name).cmp(&(b.source, &b.name)));
        let listing_order = listing_order.iter().map(|s| s.name.clone()).collect();
        let mut index = SearchIndex::default();
        for skill in by_name.values() {
            index.add(document(skill));
        }
        Self {
            skills: by_name,
            listing_order,
            index,
        }
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill of this name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// Every skill, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// The search index (for `explain` and the like).
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// Up to `limit` skills matching `query` (the tool search syntax: keywords, `+word`,
    /// `select:a,b`), best first.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<&Skill>, SearchError> {
        let results = self.index.search(query, limit)?;
        Ok(results
            .hits
            .iter()
            .filter_map(|hit| self.skills.get(&hit.name))
            .collect())
    }

    /// The names closest to `name` (a skill the model asked for that does not exist).
    pub fn close_names(&self, name: &str, limit: usize) -> Vec<String> {
        self.index.suggest(name, limit)
    }

    /// The skills by name and description for the system prompt, in at most `budget` characters
    /// (`None` when there are no skills or not even the frame fits). Skills that do not fit are
    /// counted, and the text says how to find them.
    pub fn listing(&self, budget: usize) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let total = self.listing_order.len();
        // The longest the closing line can be (with every skill left out) is reserved up front,
        // so adding an entry can never push the closing line over the budget.
        let reserved = frame_chars() + more_line(total).chars().count();
        let mut entries = String::new();
        let mut used = reserved;
        let mut listed = 0;
        for name in &self.listing_order {
            let Some(skill) = self.skills.get(name) else {
                continue;
            };
            let entry = entry_line(skill);
            let chars = entry.chars().count();
            if used + chars > budget {
                break;
            }
            used += chars;
            entries.push_str(&entry);
            listed += 1;
        }
        if reserved > budget {
            return None;
        }
        let more = if listed < total {
            more_line(total - listed)
        } else {
            String::new()
        };
        Some(format!("{HEADER}{entries}{more}{FOOTER}"))
    }
}

const HEADER: &str = "<available-skills>\nSkills are instructions for particular tasks. Before doing a task a skill covers, load it with the skill tool ({\"name\": \"...\"}) and follow it.\n";
const FOOTER: &str = "</available-skills>";

fn frame_chars() -> usize {
    HEADER.chars().count() + FOOTER.chars().count()
}

/// One listed skill: `- name: description`, the description cut to its first
/// [`MAX_LISTED_DESCRIPTION_CHARS`] characters.
fn entry_line(skill: &Skill) -> String {
    let flat = skill.description.split_whitespace().collect::<Vec<_>>();
    let flat = flat.join(" ");
    let description = if flat.chars().count() > MAX_LISTED_DESCRIPTION_CHARS {
        let cut: String = flat
            .chars()
            .take(MAX_LISTED_DESCRIPTION_CHARS - 1)
            .collect();
        format!("{}…", cut.trim_end())
    } else {
        flat
    };
    format!("- {}: {description}\n", skill.name)
}

/// The line that says how many skills were left out and how to find them.
fn more_line(left_out: usize) -> String {
    let what = if left_out == 1 {
        "1 more skill is"
    } else {
        &format!("{left_out} more skills are")
    };
    format!(
        "{what} not listed here; find them with the skill tool ({{\"query\": \"what you need to do\"}}).\n"
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::skill::SkillSource;

    fn skill(name: &str, description: &str, source: SkillSource) -> Skill {
        Skill {
            name: name.into(),
            description: description.into(),
            allowed_tools: Vec::new(),
            body: format!("Body of {name}."),
            dir: PathBuf::from(format!("/skills/{name}")),
            source,
        }
    }

    fn set() -> SkillSet {
        SkillSet::new(vec![
            skill(
                "release",
                "Cut a release: bump the version, tag it and publish the crates.",
                SkillSource::Project,
            ),
            skill(
                "changelog",
                "Write the changelog entry for the changes since the last tag.",
                SkillSource::Project,
            ),
            skill(
                "pdf",
                "Extract text and tables from PDF documents, fill PDF forms.",
                SkillSource::User,
            ),
            skill(
                "翻译",
                "把中文文档翻译成英文,保持术语一致。",
                SkillSource::User,
            ),
            skill(
                "db-migrate",
                "Create and apply database schema migrations with sqlx.",
                SkillSource::User,
            ),
        ])
    }

    fn names(skills: &[&Skill]) -> Vec<String> {
        skills.iter().map(|s| s.name.clone()).collect()
    }

    #[test]
    fn search_finds_skills_by_what_they_do_in_english_and_chinese() {
        let set = set();
        assert_eq!(
            names(&set.search("publish a new version", 3).unwrap())[0],
            "release"
        );
        assert_eq!(
            names(&set.search("fill in a pdf form", 3).unwrap())[0],
            "pdf"
        );
        assert_eq!(
            names(&set.search("请把这份文档翻译成英文", 3).unwrap()),
            ["翻译"]
        );
        assert!(
            set.search("天气预报", 3).unwrap().is_empty(),
            "no shared pair, no hit"
        );
        assert!(set.search("???", 3).is_err());
    }

    #[test]
    fn close_names_for_a_misspelt_skill() {
        assert_eq!(set().close_names("relase", 3), ["release"]);
    }

    #[test]
    fn the_listing_keeps_within_its_budget_and_says_how_many_more_exist() {
        let set = set();
        let whole = set.listing(10_000).unwrap();
        insta::assert_snapshot!("listing_whole", whole);
        let budget = whole.chars().count() - 80;
        let cut = set.listing(budget).unwrap();
        assert!(cut.chars().count() <= budget);
        insta::assert_snapshot!("listing_cut", cut);
        let frame_only = set.listing(frame_chars() + more_line(5).len()).unwrap();
        assert!(
            frame_only.contains("5 more skills are not listed"),
            "{frame_only}"
        );
        assert_eq!(set.listing(20), None, "not even the frame fits");
        assert_eq!(SkillSet::default().listing(10_000), None);
    }

    #[test]
    fn long_descriptions_are_cut_in_the_listing() {
        let long = "word ".repeat(100);
        let set = SkillSet::new(vec![skill("long", &long, SkillSource::User)]);
        let listing = set.listing(10_000).unwrap();
        let line = listing.lines().find(|l| l.starts_with("- long:")).unwrap();
        assert!(line.ends_with('…'));
        assert_eq!(
            line.chars().count(),
            "- long: ".len() + MAX_LISTED_DESCRIPTION_CHARS
        );
    }
}
