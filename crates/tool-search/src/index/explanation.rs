//! What `explain` answers: how a tool's score came about, term by term and field by field.
//! Plain data: the scorers build a [`TermExplanation`] and `explain` assembles them, so the
//! scorers never import the explainer.

use std::fmt;

use crate::document::Field;

/// How one query term contributed to a score.
#[derive(Debug, Clone, PartialEq)]
pub struct TermExplanation {
    /// The term (normalised).
    pub term: String,
    /// Its inverse document frequency.
    pub idf: f32,
    /// What it added to the score.
    pub score: f32,
    /// The share of each field it occurs in: field, term frequency there, weight, share of `score`.
    pub fields: Vec<(Field, u32, f32, f32)>,
}

/// How a result's score came about.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The tool.
    pub name: String,
    /// The total score.
    pub score: f32,
    /// Bonus for the query being the tool's exact name.
    pub exact_name_bonus: f32,
    /// Each matching query term.
    pub terms: Vec<TermExplanation>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} = {:.3}", self.name, self.score)?;
        if self.exact_name_bonus > 0.0 {
            writeln!(f, "  exact name: +{:.3}", self.exact_name_bonus)?;
        }
        for term in &self.terms {
            write!(
                f,
                "  {:<16} +{:.3} (idf {:.3}):",
                term.term, term.score, term.idf
            )?;
            for (field, tf, weight, share) in &term.fields {
                write!(f, " {}×{tf}·w{weight} → {share:.3};", field.as_str())?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
