//! The vocabulary of an index: term ids, and what each word and word part became, so that each
//! is split and stemmed only once.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use smol_str::SmolStr;

use crate::document::{Field, FieldWeights, ToolDocument};
use crate::tokenizer::{Segment, Tokenizer, for_each_cjk_bigram, lowercase_into};

pub(crate) const FIELDS: usize = Field::ALL.len();

/// A word part that is no term (a stop word).
pub(crate) const NO_TERM: u32 = u32::MAX;

/// A term of a document with its frequency in each field.
pub(crate) type FieldCounts = (u32, [u16; FIELDS]);

/// Term ids, assigned in the order terms are first seen, and the memos that map text to them.
#[derive(Debug)]
pub(crate) struct Lexicon {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) term_ids: FxHashMap<SmolStr, u32>,
    /// Whether each term, by id, is a CJK bigram.
    pub(crate) cjk: Vec<bool>,
    /// What each word seen in a document that splits into parts (`read_file`, `getHTTPServer`,
    /// `utf8`) became (its terms, in order): the same identifiers recur across tools, and each
    /// is split and its parts joined and stemmed only once. Plain words (`file`, `Reads`) are
    /// their own only part, found in `part_terms`.
    pub(crate) word_terms: WordTerms,
    /// What each lowercase word part became ([`NO_TERM`] for a stop word), but for parts joined
    /// (`readfile`): words and parts recur across tools (`read_file`, `readFile`, `Read`), and
    /// each is stemmed only once.
    pub(crate) part_terms: PartTerms,
    /// Buffers reused from one text to the next.
    scratch: Scratch,
}

#[derive(Debug, Default)]
struct Scratch {
    /// (term, field) for each token of a document.
    occurrences: Vec<(u32, u8)>,
    lower: String,
    joined: String,
    ids: Vec<u32>,
    /// Per term id: where the document being counted has it, from its first term in the
    /// output, or [`NO_SLOT`].
    slots: Vec<u32>,
}

/// A term the document being counted does not have (yet).
const NO_SLOT: u32 = u32::MAX;

/// Documents cut into terms, one after another.
#[derive(Debug, Default)]
pub(crate) struct Analysed {
    /// Per document: its weighted length and where its terms end in `counts`.
    pub(crate) docs: Vec<(f32, usize)>,
    /// Each document's terms, sorted by term.
    pub(crate) counts: Vec<FieldCounts>,
}

impl Analysed {
    /// How many documents.
    pub(crate) fn len(&self) -> usize {
        self.docs.len()
    }

    /// Each document's weighted length and terms, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (f32, &[FieldCounts])> {
        let mut start = 0;
        self.docs.iter().map(move |&(length, end)| {
            let counts = &self.counts[start..end];
            start = end;
            (length, counts)
        })
    }

    /// Each document's terms, mutably.
    fn for_each_doc_mut(&mut self, mut f: impl FnMut(&mut [FieldCounts])) {
        let mut start = 0;
        for &(_, end) in &self.docs {
            f(&mut self.counts[start..end]);
            start = end;
        }
    }
}

impl Lexicon {
    pub(crate) fn new(tokenizer: Tokenizer) -> Self {
        Self {
            tokenizer,
            term_ids: FxHashMap::default(),
            cjk: Vec::new(),
            word_terms: FxHashMap::default(),
            part_terms: FxHashMap::default(),
            scratch: Scratch::default(),
        }
    }

    /// Cuts `doc` into terms, creating those not seen before: appends its terms, sorted, to
    /// `out` and returns its weighted length (Σ field weight × tokens in the field).
    pub(crate) fn analyze(
        &mut self,
        doc: &ToolDocument,
        weights: &FieldWeights,
        out: &mut Vec<FieldCounts>,
    ) -> f32 {
        let mut occurrences = std::mem::take(&mut self.scratch.occurrences);
        occurrences.clear();
        let mut length = 0.0f32;
        for field in Field::ALL {
            let before = occurrences.len();
            doc.for_each_field_text(field, |text| {
                self.intern_text(text, field.index() as u8, &mut occurrences);
            });
            length += weights.get(field) * (occurrences.len() - before) as f32;
        }
        self.count(&occurrences, out);
        self.scratch.occurrences = occurrences;
        length
    }

    /// Appends each term of `occurrences` with its frequency in each field to `out`, sorted by
    /// term: as [`group`] after sorting the occurrences, but sorting only the distinct terms.
    fn count(&mut self, occurrences: &[(u32, u8)], out: &mut Vec<FieldCounts>) {
        let slots = &mut self.scratch.slots;
        if slots.len() < self.cjk.len() {
            slots.resize(self.cjk.len(), NO_SLOT);
        }
        let start = out.len();
        for &(term, field) in occurrences {
            let slot = &mut slots[term as usize];
            if *slot == NO_SLOT {
                *slot = (out.len() - start) as u32;
                out.push((term, [0; FIELDS]));
            }
            let tf = &mut out[start + *slot as usize].1[usize::from(field)];
            *tf = tf.saturating_add(1);
        }
        let counts = &mut out[start..];
        for (term, _) in counts.iter() {
            slots[*term as usize] = NO_SLOT;
        }
        counts.sort_unstable_by_key(|(term, _)| *term);
    }

    /// [`Lexicon::analyze`] for each of `docs`.
    pub(crate) fn analyze_all(
        &mut self,
        docs: &[ToolDocument],
        weights: &FieldWeights,
    ) -> Analysed {
        let mut analysed = Analysed {
            docs: Vec::with_capacity(docs.len()),
            counts: Vec::new(),
        };
        for doc in docs {
            let length = self.analyze(doc, weights, &mut analysed.counts);
            analysed.docs.push((length, analysed.counts.len()));
        }
        analysed
    }

    /// Takes in the terms of `other`, built from documents that come after this lexicon's, and
    /// renumbers the terms of `analysed` (its documents) to this lexicon's ids. Terms new here
    /// get ids in the order `other` created them, so the ids are those that adding every
    /// document to one lexicon, in order, would have given.
    ///
    /// Returns `other`'s memos, renumbered, for [`Memos::merge_into`] this lexicon's: that merge
    /// touches every word and part `other` saw, and can run while the documents are filed.
    pub(crate) fn absorb(&mut self, other: Lexicon, analysed: &mut Analysed) -> Memos {
        let Lexicon {
            term_ids,
            cjk,
            word_terms,
            part_terms,
            ..
        } = other;
        let mut by_id: Vec<(u32, SmolStr)> = term_ids.into_iter().map(|(t, id)| (id, t)).collect();
        by_id.sort_unstable_by_key(|(id, _)| *id);
        self.term_ids.reserve(by_id.len());
        let mut remap = vec![NO_TERM; cjk.len()];
        for (id, text) in by_id {
            let id = id as usize;
            remap[id] = match self.term_ids.get(text.as_str()) {
                Some(&t) => t,
                None => {
                    let t = self.cjk.len() as u32;
                    self.cjk.push(cjk[id]);
                    self.term_ids.insert(text, t);
                    t
                }
            };
        }
        let renumber = |t: u32| remap.get(t as usize).copied().unwrap_or(NO_TERM);
        analysed.for_each_doc_mut(|counts| {
            counts.iter_mut().for_each(|(t, _)| *t = renumber(*t));
            counts.sort_unstable_by_key(|(t, _)| *t);
        });
        Memos {
            word_terms,
            part_terms,
            remap,
        }
    }

    /// Makes room for an eighth more terms, words and parts: a server that connects after a
    /// batch build then brings its few new ones without rehashing the tables.
    pub(crate) fn reserve_spare(&mut self) {
        self.term_ids.reserve(self.term_ids.len() / 8);
        self.cjk.reserve(self.cjk.len() / 8);
        self.word_terms.reserve(self.word_terms.len() / 8);
        self.part_terms.reserve(self.part_terms.len() / 8);
    }

    /// Moves the memos out (to be merged with [`Memos::merge_into`] on another thread).
    pub(crate) fn take_memos(&mut self) -> (WordTerms, PartTerms) {
        (
            std::mem::take(&mut self.word_terms),
            std::mem::take(&mut self.part_terms),
        )
    }

    /// Puts the memos back.
    pub(crate) fn restore_memos(&mut self, (word_terms, part_terms): (WordTerms, PartTerms)) {
        self.word_terms = word_terms;
        self.part_terms = part_terms;
    }

    /// Appends `(term, field)` for each token of `text`, creating terms not seen before.
    fn intern_text(&mut self, text: &str, field: u8, out: &mut Vec<(u32, u8)>) {
        let Self {
            tokenizer,
            term_ids,
            cjk,
            word_terms,
            part_terms,
            scratch,
        } = self;
        let Scratch {
            lower, joined, ids, ..
        } = scratch;
        tokenizer.for_each_segment(text, |segment, plain| match segment {
            // Most words are plain (`file`, `Reads`): the word is its one part.
            Segment::Word(word) if plain => {
                let t = term_of_part(
                    tokenizer,
                    term_ids,
                    cjk,
                    part_terms,
                    lowercase(word, lower),
                    true,
                );
                if t != NO_TERM {
                    out.push((t, field));
                }
            }
            Segment::Word(word) => {
                if let Some(ids) = word_terms.get(word) {
                    out.extend(ids.iter().map(|&t| (t, field)));
                    return;
                }
                ids.clear();
                tokenizer.for_each_part_joining_in(word, joined, |part, joins| {
                    lowercase_into(part, lower);
                    // The parts joined (`readfile`) seldom recur but as the same word, which
                    // `word_terms` remembers: they are not remembered as parts.
                    let t = if Tokenizer::stems_joined(joins) {
                        term_of_part(tokenizer, term_ids, cjk, part_terms, lower, joins == 0)
                    } else {
                        intern(term_ids, cjk, Cow::Borrowed(lower), false)
                    };
                    if t != NO_TERM {
                        ids.push(t);
                    }
                });
                out.extend(ids.iter().map(|&t| (t, field)));
                word_terms.insert(word.into(), ids.as_slice().into());
            }
            Segment::Cjk(run) => for_each_cjk_bigram(run, |bigram| {
                out.push((intern(term_ids, cjk, Cow::Borrowed(bigram), true), field));
            }),
        });
    }
}

/// A plain word (see [`crate::tokenizer::is_plain_word`]) lowercased: itself when it is already, else in `buffer`.
pub(crate) fn lowercase<'a>(word: &'a str, buffer: &'a mut String) -> &'a str {
    match word.as_bytes().first() {
        Some(first) if first.is_ascii_lowercase() => word,
        // Only the first letter is uppercase: no need to look at the others.
        Some(first) if first.is_ascii_uppercase() => {
            buffer.clear();
            buffer.push(char::from(first.to_ascii_lowercase()));
            buffer.push_str(word.get(1..).unwrap_or_default());
            buffer
        }
        _ => {
            lowercase_into(word, buffer);
            buffer
        }
    }
}

/// What each word seen in a document became: see [`Lexicon::word_terms`].
pub(crate) type WordTerms = FxHashMap<SmolStr, Box<[u32]>>;
/// What each lowercase word part became: see [`Lexicon::part_terms`].
pub(crate) type PartTerms = FxHashMap<SmolStr, u32>;

/// The memos of a lexicon taken in by [`Lexicon::absorb`], with its term ids' new numbers.
#[derive(Debug, Default)]
pub(crate) struct Memos {
    word_terms: WordTerms,
    part_terms: PartTerms,
    remap: Vec<u32>,
}

impl Memos {
    /// Adds the words and parts the memos `(word_terms, part_terms)` lack, renumbered.
    pub(crate) fn merge_into(self, (word_terms, part_terms): &mut (WordTerms, PartTerms)) {
        let renumber = |t: u32| self.remap.get(t as usize).copied().unwrap_or(NO_TERM);
        part_terms.reserve(self.part_terms.len());
        for (part, t) in self.part_terms {
            part_terms.entry(part).or_insert_with(|| renumber(t));
        }
        word_terms.reserve(self.word_terms.len());
        for (word, mut ids) in self.word_terms {
            word_terms.entry(word).or_insert_with(|| {
                ids.iter_mut().for_each(|t| *t = renumber(*t));
                ids
            });
        }
    }
}

/// The term a lowercase word part became (created when new, and remembered when `remember`), or
/// [`NO_TERM`].
fn term_of_part(
    tokenizer: &Tokenizer,
    term_ids: &mut FxHashMap<SmolStr, u32>,
    cjk: &mut Vec<bool>,
    part_terms: &mut PartTerms,
    part: &str,
    remember: bool,
) -> u32 {
    if let Some(&t) = part_terms.get(part) {
        return t;
    }
    let t = tokenizer
        .term_of_lowercase(part)
        .map_or(NO_TERM, |term| intern(term_ids, cjk, term, false));
    if remember {
        part_terms.insert(part.into(), t);
    }
    t
}

/// The id of term `text`, created when new.
fn intern(
    term_ids: &mut FxHashMap<SmolStr, u32>,
    cjk: &mut Vec<bool>,
    text: Cow<'_, str>,
    is_cjk: bool,
) -> u32 {
    if let Some(&t) = term_ids.get(text.as_ref()) {
        return t;
    }
    let t = cjk.len() as u32;
    // Terms of up to 23 bytes are kept in the map's own slots, not on the heap.
    term_ids.insert(SmolStr::new(text), t);
    cjk.push(is_cjk);
    t
}

/// Appends each term of `occurrences` (sorted) with its frequency in each field to `out`.
pub(crate) fn group(occurrences: &[(u32, u8)], out: &mut Vec<FieldCounts>) {
    let start = out.len();
    for &(term, field) in occurrences {
        let field = usize::from(field);
        let len = out.len();
        match out.last_mut() {
            Some((t, tf)) if len > start && *t == term => {
                tf[field] = tf[field].saturating_add(1);
            }
            _ => {
                let mut tf = [0; FIELDS];
                tf[field] = 1;
                out.push((term, tf));
            }
        }
    }
}
