//! Read deny rules for every tool that reads: the paths the user's `read_file(...)` deny rules
//! name are kept from grep's and glob's walks, and hidden from shell commands by the sandbox.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// The most entries looked at when a glob rule is expanded to the paths that exist now.
const EXPAND_LIMIT: usize = 100_000;

/// Path patterns no tool may read, as the content of `read_file(...)` deny rules is written:
/// a path relative to the working directory or absolute, or a glob (`secrets/**`, `**/*.pem`)
/// whose `*` stops at `/`. A path that is denied denies everything under it.
#[derive(Debug, Clone, Default)]
pub struct ReadDenies {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    glob: Option<GlobMatcher>,
}

impl ReadDenies {
    /// Denies reading what `patterns` name. A glob that does not parse is matched literally.
    pub fn new<I, S>(patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let patterns = patterns
            .into_iter()
            .map(Into::into)
            .filter(|text: &String| !text.trim().is_empty())
            .map(|text| {
                let glob = text
                    .contains(['*', '?', '[', '{'])
                    .then(|| GlobBuilder::new(&text).literal_separator(true).build().ok())
                    .flatten()
                    .map(|glob| glob.compile_matcher());
                Pattern { text, glob }
            })
            .collect();
        Self { patterns }
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns, as written.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|p| p.text.as_str())
    }

    /// Whether reading the resolved absolute `path` (or anything it lies under) is denied, with
    /// relative patterns taken from `cwd`.
    pub fn denies(&self, path: &Path, cwd: &Path) -> bool {
        !self.patterns.is_empty()
            && path
                .ancestors()
                .take_while(|p| p.as_os_str().len() > 1)
                .any(|p| self.matches(p, cwd))
    }

    fn matches(&self, path: &Path, cwd: &Path) -> bool {
        let absolute = path.to_string_lossy();
        let relative = path
            .strip_prefix(cwd)
            .ok()
            .map(|p| p.to_string_lossy().into_owned());
        self.patterns.iter().any(|pattern| {
            let candidates = std::iter::once(absolute.as_ref()).chain(relative.as_deref());
            match &pattern.glob {
                Some(glob) => candidates.into_iter().any(|c| glob.is_match(c)),
                None => {
                    let literal = cwd.join(&pattern.text);
                    path == crate::roots::normalise_lexically(&literal)
                }
            }
        })
    }

    /// The paths that exist now and that a rule denies, outermost only (nothing listed lies
    /// under another). Fails when a glob would need more than a bounded walk to expand.
    pub(crate) fn existing(&self, cwd: &Path) -> Result<Vec<PathBuf>, String> {
        let mut found: Vec<PathBuf> = Vec::new();
        for pattern in &self.patterns {
            match &pattern.glob {
                None => {
                    let path = crate::roots::normalise_lexically(&cwd.join(&pattern.text));
                    if path.symlink_metadata().is_ok() {
                        found.push(path);
                    }
                }
                Some(_) => found.extend(self.expand(&pattern.text, cwd)?),
            }
        }
        found.sort();
        found.dedup();
        let mut outermost: Vec<PathBuf> = Vec::new();
        for path in found {
            if !outermost.iter().any(|outer| path.starts_with(outer)) {
                outermost.push(path);
            }
        }
        Ok(outermost)
    }

    /// The existing paths one glob pattern matches: a walk from its literal prefix, as deep as
    /// the pattern reaches.
    fn expand(&self, text: &str, cwd: &Path) -> Result<Vec<PathBuf>, String> {
        let components: Vec<Component<'_>> = Path::new(text).components().collect();
        let literal = components
            .iter()
            .take_while(|c| {
                !c.as_os_str()
                    .to_string_lossy()
                    .contains(['*', '?', '[', '{'])
            })
            .count();
        let base: PathBuf = cwd.join(components[..literal].iter().collect::<PathBuf>());
        let rest = &components[literal..];
        if !base.exists() {
            return Ok(Vec::new());
        }
        if rest.len() == 1 && rest[0].as_os_str() == "**" {
            return Ok(vec![base]);
        }
        let deep = rest
            .iter()
            .any(|c| c.as_os_str().to_string_lossy().contains("**"));
        let mut walk = ignore::WalkBuilder::new(&base);
        walk.standard_filters(false).follow_links(false);
        if !deep {
            walk.max_depth(Some(rest.len()));
        }
        let mut found = Vec::new();
        for (seen, entry) in walk.build().flatten().enumerate() {
            if seen > EXPAND_LIMIT {
                return Err(format!(
                    "the deny rule `{text}` would need a walk of more than {EXPAND_LIMIT} entries to apply"
                ));
            }
            if self.matches(entry.path(), cwd) {
                found.push(entry.into_path());
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_glob_rules_deny_paths_and_what_lies_under_them() {
        let cwd = Path::new("/work/repo");
        let denies = ReadDenies::new([".env", "secrets/**", "**/*.pem", "/etc/shadow"]);
        for path in [
            "/work/repo/.env",
            "/work/repo/secrets/a/b.txt",
            "/work/repo/deep/key.pem",
            "/work/repo/key.pem",
            "/etc/shadow",
            "/work/repo/.env/inner",
        ] {
            assert!(denies.denies(Path::new(path), cwd), "{path}");
        }
        for path in [
            "/work/repo/src/.env.example",
            "/work/repo/secretsx",
            "/work/repo/a.pem.txt",
        ] {
            assert!(!denies.denies(Path::new(path), cwd), "{path}");
        }
        assert!(!ReadDenies::default().denies(Path::new("/work/repo/.env"), cwd));
    }

    #[test]
    fn existing_paths_are_found_outermost_first() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        for file in [
            ".env",
            "secrets/a.txt",
            "secrets/b/c.pem",
            "src/key.pem",
            "src/ok.rs",
        ] {
            let path = cwd.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let denies = ReadDenies::new([".env", "secrets/**", "**/*.pem", "missing"]);
        let found = denies.existing(&cwd).unwrap();
        let rel: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(&cwd).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, [".env", "secrets", "src/key.pem"]);
    }
}
