//! Building the index, and adding and removing tools in place.

use super::SearchIndex;
use super::postings::{DocEntry, Posting, TermEntry, weighted_tf};
use super::scorer::Scorer;
use crate::batch;
use crate::document::ToolDocument;
use crate::lexicon::{Analysed, FieldCounts};

/// [`SearchIndex::from_documents`] cuts a share of tools on another thread for each this many
/// tools...
const MIN_DOCS_PER_THREAD: usize = 256;
/// ... in up to this many shares (and no more than rayon has threads): each share costs a
/// fresh vocabulary, and merging it.
const MAX_BUILD_THREADS: usize = 8;

impl SearchIndex {
    /// An index of `docs`, as if each were [added](SearchIndex::add) in order (a later tool
    /// replaces an earlier one of the same name).
    ///
    /// Large batches are cut into terms on several threads (rayon's), a share of tools each with
    /// its own vocabulary; the vocabularies are then merged in document order, so the index is the one adding the tools
    /// one by one would build, term ids included.
    pub fn from_documents(
        config: super::SearchConfig,
        docs: impl IntoIterator<Item = ToolDocument>,
    ) -> Self {
        let docs: Vec<ToolDocument> = docs.into_iter().collect();
        let threads = rayon::current_num_threads()
            .min(MAX_BUILD_THREADS)
            .min(docs.len() / MIN_DOCS_PER_THREAD)
            .max(1);
        Self::build(config, docs, threads)
    }

    /// [`SearchIndex::from_documents`] in `threads` shares (on this thread alone when 1).
    pub(super) fn build(
        config: super::SearchConfig,
        docs: Vec<ToolDocument>,
        threads: usize,
    ) -> Self {
        let mut index = Self::new(config);
        let weights = index.config.weights;
        // Room for the tools, and an eighth more for those that come later.
        let room = docs.len() + docs.len() / 8;
        index.docs.reserve_exact(room);
        index.norms.reserve_exact(room);
        index.by_name.reserve(room);
        index.by_key.reserve(room);
        if threads <= 1 {
            let analysed = index.lexicon.analyze_all(&docs, &weights);
            index.sync_terms();
            index.reserve_postings([&analysed]);
            index.commit(docs, &analysed);
            index.reserve_spare();
            return index;
        }
        let tokenizer = index.lexicon.tokenizer.clone();
        let pieces = batch::cut(&docs, threads, &tokenizer, &weights);
        index.assemble(docs, pieces);
        index.reserve_spare();
        index
    }

    /// Makes room for an eighth more terms after a batch build (the tools and postings have
    /// theirs already).
    fn reserve_spare(&mut self) {
        self.terms.reserve(self.terms.len() / 8);
        self.lexicon.reserve_spare();
    }

    /// Files `docs`, cut into terms in `pieces` (in tool order, covering each tool once).
    pub(super) fn assemble(&mut self, docs: Vec<ToolDocument>, pieces: Vec<batch::Piece>) {
        debug_assert!(
            pieces
                .windows(2)
                .all(|w| w[0].start + w[0].analysed.len() == w[1].start),
            "pieces out of order"
        );
        let index = self;
        let mut pieces = pieces.into_iter();
        let mut analysed = Vec::with_capacity(pieces.len());
        // The first piece starts with the first tool: its vocabulary takes in the others'.
        if let Some(first) = pieces.next() {
            index.lexicon = first.lexicon;
            analysed.push(first.analysed);
        }
        let mut memos = Vec::with_capacity(pieces.len());
        for mut piece in pieces {
            memos.push(index.lexicon.absorb(piece.lexicon, &mut piece.analysed));
            analysed.push(piece.analysed);
        }
        index.sync_terms();
        index.reserve_postings(&analysed);
        // The later pieces' words and parts join the memos while the tools are filed (neither
        // touches what the other does).
        let mut own = index.lexicon.take_memos();
        rayon::join(
            || {
                for piece in memos {
                    piece.merge_into(&mut own);
                }
            },
            || {
                let mut docs = docs.into_iter();
                for piece in &analysed {
                    index.commit(docs.by_ref().take(piece.len()), piece);
                }
            },
        );
        index.lexicon.restore_memos(own);
    }

    /// Makes room in each posting list for the documents of all of `analysed`, once, with an
    /// eighth more to spare: the tools of a server that connects later then fit without copying
    /// the long lists of common terms.
    fn reserve_postings<'a>(&mut self, analysed: impl IntoIterator<Item = &'a Analysed>) {
        let mut df = vec![0usize; self.terms.len()];
        for (term, _) in analysed.into_iter().flat_map(|a| &a.counts) {
            df[*term as usize] += 1;
        }
        for (entry, df) in self.terms.iter_mut().zip(df) {
            if df > 0 {
                let spare = (entry.postings.len() + df) / 8;
                entry.postings.reserve_exact(df + spare);
            }
        }
    }

    /// Adds `docs`, cut into terms by the lexicon (`analysed`), in order.
    fn commit(&mut self, docs: impl IntoIterator<Item = ToolDocument>, analysed: &Analysed) {
        for (doc, (length, counts)) in docs.into_iter().zip(analysed.iter()) {
            self.insert(doc, length, counts);
        }
    }

    /// Adds a tool, replacing any tool of the same name.
    pub fn add(&mut self, doc: ToolDocument) {
        let mut counts = Vec::new();
        let length = self
            .lexicon
            .analyze(&doc, &self.config.weights, &mut counts);
        self.sync_terms();
        self.insert(doc, length, &counts);
    }

    /// Gives each term the lexicon created since the last call its (empty) entry.
    fn sync_terms(&mut self) {
        let known = self.terms.len();
        self.terms.extend(
            self.lexicon.cjk[known..]
                .iter()
                .map(|&cjk| TermEntry::new(cjk)),
        );
    }

    /// Adds `doc`, already cut into terms (`counts`, sorted by term) of weighted length `length`,
    /// replacing any tool of the same name.
    fn insert(&mut self, doc: ToolDocument, length: f32, counts: &[FieldCounts]) {
        self.remove(&doc.name);
        let id = self.docs.len() as u32;
        let (terms, norm) = self.post(id, length, counts);
        self.live_postings += terms.len();
        self.file_names(&doc, id);
        self.live += 1;
        self.total_length += f64::from(length);
        self.norms.push(norm);
        self.docs.push(Some(DocEntry { doc, length, terms }));
    }

    /// Appends document `id`'s postings; returns its terms and its `lnc` norm (1 under BM25+).
    fn post(&mut self, id: u32, length: f32, counts: &[FieldCounts]) -> (Vec<u32>, f32) {
        let weights = self.config.weights;
        // Only TF-IDF reads the norm (a logarithm per term, a tenth of filing a tool).
        let tf_idf = matches!(self.config.scorer, Scorer::TfIdf);
        let mut terms = Vec::with_capacity(counts.len());
        let mut norm = 0.0f32;
        for (term, tf) in counts {
            let weighted = weighted_tf(tf, &weights);
            if weighted <= 0.0 {
                continue;
            }
            if tf_idf {
                norm += (1.0 + weighted).ln().powi(2);
            }
            self.terms[*term as usize].push(Posting {
                doc: id,
                weighted_tf: weighted,
                length,
            });
            terms.push(*term);
        }
        let norm = if tf_idf {
            norm.sqrt().max(f32::MIN_POSITIVE)
        } else {
            1.0
        };
        (terms, norm)
    }

    /// Files document `id` under its name, its aliases and its server.
    fn file_names(&mut self, doc: &ToolDocument, id: u32) {
        for key in std::iter::once(&doc.name).chain(&doc.aliases) {
            let key = key.to_lowercase();
            self.longest_key = self.longest_key.max(key.chars().count());
            self.spaced_keys |= key.contains(' ');
            self.by_key.insert(key, id);
        }
        if let Some(server) = &doc.server {
            self.by_server
                .entry(server.to_lowercase())
                .or_default()
                .insert(id);
        }
        self.by_name.insert(doc.name.clone(), id);
    }

    /// Removes a tool; returns whether it was there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.by_name.remove(name) else {
            return false;
        };
        let Some(entry) = self.docs.get_mut(id as usize).and_then(Option::take) else {
            return false;
        };
        for term in &entry.terms {
            if let Some(t) = self.terms.get_mut(*term as usize) {
                t.df = t.df.saturating_sub(1);
                if let Ok(at) = t.postings.binary_search_by_key(&id, |p| p.doc) {
                    t.postings[at].length = -1.0;
                }
            }
        }
        self.dead_postings += entry.terms.len();
        self.live_postings = self.live_postings.saturating_sub(entry.terms.len());
        self.unfile_names(&entry.doc, id);
        self.live -= 1;
        self.total_length -= f64::from(entry.length);
        // Dead postings are skipped by queries and swept out once they are as many as the live
        // ones, so removal stays cheap and memory stays bounded (amortised).
        if self.dead_postings > self.live_postings.max(1024) {
            self.sweep();
        }
        true
    }

    /// Takes document `id` out from under its aliases and its server (its name is gone already).
    fn unfile_names(&mut self, doc: &ToolDocument, id: u32) {
        for key in std::iter::once(&doc.name).chain(&doc.aliases) {
            if self.by_key.get(&key.to_lowercase()) == Some(&id) {
                self.by_key.remove(&key.to_lowercase());
            }
        }
        if let Some(server) = &doc.server {
            let key = server.to_lowercase();
            if let Some(set) = self.by_server.get_mut(&key) {
                set.remove(&id);
                if set.is_empty() {
                    self.by_server.remove(&key);
                }
            }
        }
    }

    /// Removes every tool of an MCP server; returns how many.
    pub fn remove_server(&mut self, server: &str) -> usize {
        let ids: Vec<u32> = self
            .by_server
            .get(&server.to_lowercase())
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let names: Vec<String> = ids
            .iter()
            .filter_map(|id| self.entry(*id).map(|e| e.doc.name.clone()))
            .collect();
        for name in &names {
            self.remove(name);
        }
        names.len()
    }

    fn sweep(&mut self) {
        for term in &mut self.terms {
            term.postings.retain(Posting::is_live);
        }
        self.dead_postings = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;
    use crate::document::Parameter;
    use crate::index::SearchConfig;

    /// Everything an index holds, with floats as bits: two indexes that agree here rank alike.
    fn state(index: &SearchIndex) -> impl PartialEq + fmt::Debug {
        let mut word_terms: Vec<_> = index.lexicon.word_terms.iter().collect();
        word_terms.sort();
        let mut part_terms: Vec<_> = index.lexicon.part_terms.iter().collect();
        part_terms.sort();
        let mut term_ids: Vec<_> = index.lexicon.term_ids.iter().collect();
        term_ids.sort();
        let terms: Vec<_> = index
            .terms
            .iter()
            .map(|t| {
                let postings: Vec<_> = t
                    .postings
                    .iter()
                    .map(|p| (p.doc, p.weighted_tf.to_bits(), p.length.to_bits()))
                    .collect();
                (
                    postings,
                    t.df,
                    t.max_tf.to_bits(),
                    t.min_length.to_bits(),
                    t.cjk,
                )
            })
            .collect();
        let docs: Vec<_> = index
            .docs
            .iter()
            .map(|d| {
                d.as_ref()
                    .map(|d| (d.doc.clone(), d.length.to_bits(), d.terms.clone()))
            })
            .collect();
        let norms: Vec<u32> = index.norms.iter().map(|n| n.to_bits()).collect();
        let mut by_name: Vec<_> = index.by_name.iter().collect();
        by_name.sort();
        let mut by_key: Vec<_> = index.by_key.iter().collect();
        by_key.sort();
        format!(
            "{term_ids:?} {word_terms:?} {part_terms:?} {:?} {terms:?} {docs:?} {norms:?} \
             {by_name:?} {by_key:?} {:?} {} {} {} {} {} {}",
            index.lexicon.cjk,
            index.by_server,
            index.live,
            index.total_length.to_bits(),
            index.dead_postings,
            index.live_postings,
            index.longest_key,
            index.spaced_keys,
        )
    }

    #[test]
    fn a_batch_cut_on_threads_is_the_index_adds_build() {
        let words = [
            "read",
            "files",
            "the",
            "HTTPServer",
            "get_user",
            "mcp__github__create_issue",
            "Reading",
            "天气预报",
            "查询",
            "ファイル",
            "검색",
            "of",
            "utf8",
            "café",
            "readFile",
        ];
        // Names repeat within a thread's share and across shares: later tools replace earlier.
        let docs: Vec<ToolDocument> = (0..700)
            .map(|i: usize| {
                let rare = format!("Word{}x", (i * 13) % 41);
                let text: Vec<&str> = (0..2 + i % 9)
                    .map(|k| words[(i * 7 + k * k) % words.len()])
                    .chain([rare.as_str()])
                    .collect();
                let mut doc =
                    ToolDocument::new(format!("tool_{}", i % 610), text.join(" ")).with_parameter(
                        Parameter::described(words[i % words.len()], words[(i + 3) % words.len()]),
                    );
                if i.is_multiple_of(5) {
                    doc = doc.with_server(format!("srv{}", i % 3), format!("t{i}"));
                }
                if i.is_multiple_of(11) {
                    doc.aliases.push(format!("Alias{}", i % 17));
                }
                doc
            })
            .collect();
        let mut one_by_one = SearchIndex::default();
        for doc in docs.clone() {
            one_by_one.add(doc);
        }
        for threads in [1, 2, 3, 8] {
            let batch = SearchIndex::build(SearchConfig::default(), docs.clone(), threads);
            assert_eq!(state(&batch), state(&one_by_one), "{threads} threads");
        }
        // However the threads end up sharing the tools out; posting lists get their room (an
        // eighth to spare) once, as from a single piece.
        let mut rooms: Option<Vec<usize>> = None;
        for ends in [
            vec![700],
            vec![1, 700],
            vec![350, 351, 699, 700],
            vec![64, 128, 200, 333, 500, 640, 700],
        ] {
            let mut batch = SearchIndex::default();
            let pieces = batch::cut_at(
                &docs,
                &ends,
                &batch.lexicon.tokenizer.clone(),
                &batch.config.weights,
            );
            batch.assemble(docs.clone(), pieces);
            assert_eq!(
                state(&batch),
                state(&one_by_one),
                "pieces ending at {ends:?}"
            );
            let room: Vec<usize> = batch.terms.iter().map(|t| t.postings.capacity()).collect();
            assert_eq!(&room, rooms.get_or_insert_with(|| room.clone()), "{ends:?}");
        }
    }
}
