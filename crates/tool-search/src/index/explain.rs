//! `explain`: which terms, in which fields, gave what to a tool's score.

use std::collections::HashMap;

use super::SearchIndex;
use super::explanation::{Explanation, TermExplanation};
use super::query_terms::QueryWords;
use super::scorer::{TermWeight, Weight};
use crate::document::{Field, ToolDocument};
use crate::error::SearchError;
use crate::lexicon::{FieldCounts, group};
use crate::query::Query;

impl SearchIndex {
    /// Which terms, in which fields, gave what to `name`'s score for a keyword query; `None`
    /// when the tool is not indexed.
    pub fn explain(&self, query: &str, name: &str) -> Result<Option<Explanation>, SearchError> {
        let (text, required) = match Query::parse(query)? {
            Query::Keywords { text, required } | Query::Discover { text, required } => {
                (text, required)
            }
            Query::Select(_) | Query::Server(_) => (query.to_owned(), Vec::new()),
        };
        let Some(&id) = self.by_name.get(name) else {
            return Ok(None);
        };
        let Some(doc) = self.entry(id) else {
            return Ok(None);
        };
        let mut words = QueryWords::default();
        self.query_terms(&text, &required, &mut words);
        let terms = self.explain_terms(id, &doc.doc, &words.terms);
        let bonus = self
            .exact_bonus(&text, &mut words.lower)
            .filter(|(e, _)| *e == id)
            .map_or(0.0, |(_, b)| b);
        let total: f32 = terms.iter().map(|t| t.score).sum();
        Ok(Some(Explanation {
            name: name.to_owned(),
            score: total + bonus,
            exact_name_bonus: bonus,
            terms,
        }))
    }

    /// What each of the query's `terms` that document `id` has gave to its score.
    fn explain_terms(
        &self,
        id: u32,
        doc: &ToolDocument,
        terms: &[(u32, bool)],
    ) -> Vec<TermExplanation> {
        let counts = self.field_counts(doc);
        let stats = self.stats();
        let text_of: HashMap<u32, &str> = self
            .lexicon
            .term_ids
            .iter()
            .map(|(k, v)| (*v, k.as_str()))
            .collect();
        terms
            .iter()
            .filter_map(|&(term, _)| {
                let entry = &self.terms[term as usize];
                let posting = entry.posting(id)?;
                let at = counts.binary_search_by_key(&term, |(t, _)| *t).ok()?;
                let weight = Weight::of_term(self.config.scorer, entry.df, &stats);
                let text = text_of.get(&term).copied().unwrap_or("").to_owned();
                Some(weight.explain(text, posting, &counts[at].1, &self.config.weights))
            })
            .collect()
    }

    /// Each term of an indexed document with its frequency in each field, sorted by term.
    fn field_counts(&self, doc: &ToolDocument) -> Vec<FieldCounts> {
        let mut occurrences: Vec<(u32, u8)> = Vec::new();
        let mut tokens = Vec::new();
        for field in Field::ALL {
            doc.for_each_field_text(field, |text| {
                tokens.clear();
                self.lexicon.tokenizer.tokenize_into(text, &mut tokens);
                occurrences.extend(
                    tokens
                        .iter()
                        .filter_map(|t| self.lexicon.term_ids.get(t.text.as_str()))
                        .map(|&t| (t, field.index() as u8)),
                );
            });
        }
        occurrences.sort_unstable();
        let mut counts = Vec::new();
        group(&occurrences, &mut counts);
        counts
    }
}
