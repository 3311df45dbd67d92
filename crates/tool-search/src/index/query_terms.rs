//! A query's text as the index's terms, and the tool it names exactly.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use smol_str::SmolStr;

use super::SearchIndex;
use crate::lexicon::{NO_TERM, lowercase};
use crate::tokenizer::{Segment, Tokenizer, for_each_cjk_bigram, lowercase_into};

thread_local! {
    /// Query word parts that no indexed document contains and the stem table lacks (names,
    /// jargon: `hulu`, `arxiv`), with the stem each became (stop words are all in the table):
    /// stemming them again would be most of a query's time on small indexes. Every index uses
    /// the same tokenizer, so the cache is shared; it is cleared when full.
    static QUERY_PARTS: RefCell<FxHashMap<SmolStr, SmolStr>> =
        RefCell::new(FxHashMap::default());
}

/// Entries [`QUERY_PARTS`] holds before it is cleared.
const QUERY_PARTS_CAPACITY: usize = 4096;

/// The bonus that puts the tool a query names exactly first: larger than any sum of term
/// scores can be.
const EXACT_NAME_BONUS: f32 = 1000.0;

/// What [`SearchIndex::query_terms`] fills, and its buffers.
#[derive(Default)]
pub(super) struct QueryWords {
    /// The query's distinct known terms in query order, with whether each is required.
    pub(super) terms: Vec<(u32, bool)>,
    /// The terms of the required words.
    required: Vec<u32>,
    /// Each distinct CJK bigram by its characters (a lone character has no second).
    cjk_seen: Vec<(Option<char>, Option<char>)>,
    pub(super) lower: String,
    joined: String,
}

impl SearchIndex {
    /// Puts the query's distinct known terms in `words.terms`, with whether each is required,
    /// and returns how many distinct CJK bigrams the query has (known or not, for the CJK gate).
    /// No terms when a required word is in no tool.
    pub(super) fn query_terms(
        &self,
        text: &str,
        required: &[String],
        words: &mut QueryWords,
    ) -> usize {
        let QueryWords {
            terms: out,
            required: required_terms,
            cjk_seen,
            lower,
            joined,
        } = words;
        out.clear();
        cjk_seen.clear();
        if !self.required_terms(required, required_terms) {
            return 0;
        }
        // One bit per term id modulo 64: a term whose bit is clear is new to the query, and
        // most are, so the list is searched only on the rare collision.
        let mut seen_bits = 0u64;
        let mut push = |t: u32| {
            let bit = 1u64 << (t % 64);
            if seen_bits & bit == 0 || !out.iter().any(|(seen, _)| *seen == t) {
                seen_bits |= bit;
                out.push((t, required_terms.contains(&t)));
            }
        };
        let tokenizer = &self.lexicon.tokenizer;
        tokenizer.for_each_segment(text, |segment, plain| match segment {
            Segment::Word(word) if plain => {
                if let Some(t) = self.query_part_term(lowercase(word, lower), true) {
                    push(t);
                }
            }
            Segment::Word(word) => self.identifier_terms(word, lower, joined, &mut push),
            Segment::Cjk(run) => for_each_cjk_bigram(run, |bigram| {
                if let Some(&t) = self.lexicon.term_ids.get(bigram) {
                    push(t);
                }
                let mut chars = bigram.chars();
                let key = (chars.next(), chars.next());
                if !cjk_seen.contains(&key) {
                    cjk_seen.push(key);
                }
            }),
        });
        cjk_seen.len()
    }

    /// Puts the terms of the required words in `out`; false when one is in no tool (then
    /// nothing can match).
    fn required_terms(&self, required: &[String], out: &mut Vec<u32>) -> bool {
        out.clear();
        for token in required
            .iter()
            .flat_map(|w| self.lexicon.tokenizer.tokenize(w))
        {
            match self.lexicon.term_ids.get(token.text.as_str()) {
                Some(&t) => out.push(t),
                None => return false,
            }
        }
        true
    }

    /// Calls `push` with each known term of a query word that is not plain (`read_file`,
    /// `getHTTPServer`); `lower` and `joined` are buffers to reuse.
    fn identifier_terms(
        &self,
        word: &str,
        lower: &mut String,
        joined: &mut String,
        push: &mut impl FnMut(u32),
    ) {
        if let Some(ids) = self.lexicon.word_terms.get(word) {
            ids.iter().for_each(|&t| push(t));
            return;
        }
        self.lexicon
            .tokenizer
            .for_each_part_joining_in(word, joined, |part, joins| {
                lowercase_into(part, lower);
                let t = if Tokenizer::stems_joined(joins) {
                    self.query_part_term(lower, false)
                } else {
                    self.lexicon.term_ids.get(lower.as_str()).copied()
                };
                if let Some(t) = t {
                    push(t);
                }
            });
    }

    /// The term a lowercase part of a query word is, if any document has it; `letters` when the
    /// part is known to be ASCII letters only.
    fn query_part_term(&self, part: &str, letters: bool) -> Option<u32> {
        if let Some(&t) = self.lexicon.part_terms.get(part) {
            return (t != NO_TERM).then_some(t);
        }
        // A part no document has: its stem may still be a term (`looking`). Common words'
        // stems come from the tokenizer's table; others are stemmed once per thread.
        let term_id = |term: Option<&str>| term.and_then(|t| self.lexicon.term_ids.get(t)).copied();
        let tokenizer = &self.lexicon.tokenizer;
        let cheap = if letters {
            tokenizer.letters_without_stemmer(part)
        } else {
            tokenizer.term_without_stemmer(part)
        };
        if let Some(term) = cheap {
            return term_id(term.as_deref());
        }
        QUERY_PARTS.with_borrow_mut(|cache| {
            if let Some(stem) = cache.get(part) {
                return term_id(Some(stem));
            }
            if cache.len() >= QUERY_PARTS_CAPACITY {
                cache.clear();
            }
            let stem = tokenizer.stem_uncommon(part);
            let known = term_id(Some(&stem));
            cache.insert(part.into(), SmolStr::new(stem));
            known
        })
    }

    /// The tool `text` names exactly (or by an alias), with the bonus that puts it first;
    /// `lower` is a buffer to reuse.
    pub(super) fn exact_bonus(&self, text: &str, lower: &mut String) -> Option<(u32, f32)> {
        let text = text.trim();
        // Lowercasing never makes fewer characters: a longer text matches no name or alias,
        // and long queries skip lowercasing and hashing. A character is at least one byte.
        if text.len() > self.longest_key
            && (text.is_ascii() || text.chars().nth(self.longest_key).is_some())
        {
            return None;
        }
        // Nor does it add or drop spaces: most queries are sentences, and most keys are
        // identifiers.
        if !self.spaced_keys && text.as_bytes().contains(&b' ') {
            return None;
        }
        lowercase_into(text, lower);
        let id = *self.by_key.get(lower.as_str())?;
        Some((id, EXACT_NAME_BONUS))
    }
}
