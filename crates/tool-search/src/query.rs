//! The query syntax.

use crate::error::SearchError;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Keywords, some of them required (`+word`).
    Keywords {
        /// The keyword text, `+` markers removed.
        text: String,
        /// The words marked with `+`.
        required: Vec<String>,
    },
    /// `select:A,B`: tools by exact name or alias, case-insensitive.
    Select(Vec<String>),
    /// `discover:words`: keywords whose results are shown, not activated.
    Discover {
        /// The keyword text, `+` markers removed.
        text: String,
        /// The words marked with `+`.
        required: Vec<String>,
    },
    /// `mcp__server`: every tool of one MCP server.
    Server(String),
}

/// Which form a query had, reported with its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryKind {
    /// Keywords.
    Keywords,
    /// `select:`.
    Select,
    /// `discover:`.
    Discover,
    /// `mcp__server`.
    Server,
}

impl Query {
    /// Parses a query string.
    pub fn parse(input: &str) -> Result<Self, SearchError> {
        let trimmed = input.trim();
        if !trimmed.chars().any(char::is_alphanumeric) {
            return Err(if trimmed.is_empty() {
                SearchError::EmptyQuery
            } else {
                SearchError::NoWords {
                    query: trimmed.to_owned(),
                }
            });
        }
        let lower_prefix = |prefix: &str| {
            trimmed
                .get(..prefix.len())
                .filter(|p| p.eq_ignore_ascii_case(prefix))
                .map(|_| trimmed[prefix.len()..].trim())
        };
        if let Some(list) = lower_prefix("select:") {
            let names: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            if names.is_empty() {
                return Err(SearchError::EmptySelect);
            }
            return Ok(Self::Select(names));
        }
        if let Some(words) = lower_prefix("discover:") {
            let (text, required) = split_required(words);
            if !text.chars().any(char::is_alphanumeric) {
                return Err(SearchError::NoWords {
                    query: trimmed.to_owned(),
                });
            }
            return Ok(Self::Discover { text, required });
        }
        if let Some(server) = server_prefix(trimmed) {
            return Ok(Self::Server(server.to_owned()));
        }
        let (text, required) = split_required(trimmed);
        Ok(Self::Keywords { text, required })
    }

    /// The query's form.
    pub fn kind(&self) -> QueryKind {
        match self {
            Self::Keywords { .. } => QueryKind::Keywords,
            Self::Select(_) => QueryKind::Select,
            Self::Discover { .. } => QueryKind::Discover,
            Self::Server(_) => QueryKind::Server,
        }
    }
}

/// `mcp__server` (one token, no further `__`) names a whole server.
fn server_prefix(query: &str) -> Option<&str> {
    if query.contains(char::is_whitespace) {
        return None;
    }
    let rest = query.strip_prefix("mcp__")?;
    let server = rest.strip_suffix("__").unwrap_or(rest);
    (!server.is_empty() && !server.contains("__")).then_some(server)
}

fn split_required(text: &str) -> (String, Vec<String>) {
    if !text.contains('+') {
        return (text.to_owned(), Vec::new());
    }
    let mut words = Vec::new();
    let mut required = Vec::new();
    for word in text.split_whitespace() {
        match word.strip_prefix('+') {
            Some(rest) if !rest.is_empty() => {
                required.push(rest.to_owned());
                words.push(rest);
            }
            _ => words.push(word),
        }
    }
    (words.join(" "), required)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_parses() {
        assert_eq!(
            Query::parse("send +slack message").unwrap(),
            Query::Keywords {
                text: "send slack message".into(),
                required: vec!["slack".into()]
            }
        );
        assert_eq!(
            Query::parse("select: Read_File , mcp__a__b,").unwrap(),
            Query::Select(vec!["Read_File".into(), "mcp__a__b".into()])
        );
        assert_eq!(
            Query::parse("Discover:cron job").unwrap(),
            Query::Discover {
                text: "cron job".into(),
                required: vec![]
            }
        );
        assert_eq!(
            Query::parse("mcp__github").unwrap(),
            Query::Server("github".into())
        );
        assert_eq!(
            Query::parse("mcp__github__").unwrap(),
            Query::Server("github".into())
        );
        assert!(matches!(
            Query::parse("mcp__github__create_issue").unwrap(),
            Query::Keywords { .. }
        ));
    }

    #[test]
    fn queries_without_words_are_errors_that_say_what_to_do() {
        let errors: Vec<String> = ["", "   ", "!!! ???", "select:", "discover: ..."]
            .iter()
            .map(|q| Query::parse(q).unwrap_err().to_string())
            .collect();
        insta::assert_snapshot!(errors.join("\n"), @r"
        the query is empty: describe the capability you need in a few words, such as `read file` or `send slack message`
        the query is empty: describe the capability you need in a few words, such as `read file` or `send slack message`
        the query `!!! ???` has no letter or digit: describe the capability you need in words, such as `read file`
        select: needs tool names, as in `select:read_file` or `select:a,b`
        the query `discover: ...` has no letter or digit: describe the capability you need in words, such as `read file`
        ");
    }
}
