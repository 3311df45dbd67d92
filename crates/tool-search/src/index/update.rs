//! Building the index, and adding and removing tools in place.

use super::SearchIndex;
use super::postings::{DocEntry, Posting, TermEntry, weighted_tf};
use super::scorer::Scorer;
use crate::document::ToolDocument;
use crate::lexicon::{Analysed, FieldCounts};

impl SearchIndex {
    /// An index of `docs`, as if each were [added](SearchIndex::add) in order (a later tool
    /// replaces an earlier one of the same name).
    ///
    /// The index is the one adding the tools one by one would build, term ids included, but
    /// each posting list is allocated once, with an eighth more room for the tools of a server
    /// that connects later.
    pub fn from_documents(
        config: super::SearchConfig,
        docs: impl IntoIterator<Item = ToolDocument>,
    ) -> Self {
        let docs: Vec<ToolDocument> = docs.into_iter().collect();
        let mut index = Self::new(config);
        // Room for the tools, and an eighth more for those that come later.
        let room = docs.len() + docs.len() / 8;
        index.docs.reserve_exact(room);
        index.norms.reserve_exact(room);
        index.by_name.reserve(room);
        index.by_key.reserve(room);
        let analysed = index.lexicon.analyze_all(&docs, &index.config.weights);
        index.sync_terms();
        index.reserve_postings(&analysed);
        index.commit(docs, &analysed);
        // And an eighth more terms.
        index.terms.reserve(index.terms.len() / 8);
        index.lexicon.reserve_spare();
        index
    }

    /// Makes room in each posting list for the documents of `analysed`, once, with an eighth
    /// more to spare: the tools of a server that connects later then fit without copying the
    /// long lists of common terms.
    fn reserve_postings(&mut self, analysed: &Analysed) {
        let mut df = vec![0usize; self.terms.len()];
        for (term, _) in &analysed.counts {
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
    fn a_batch_build_is_the_index_adds_build() {
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
        // Names repeat: later tools replace earlier.
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
        let batch = SearchIndex::from_documents(SearchConfig::default(), docs);
        assert_eq!(state(&batch), state(&one_by_one));
        // Posting lists get their room, an eighth to spare, once.
        for entry in &batch.terms {
            let live = entry.postings.len();
            assert!(
                entry.postings.capacity() >= live + live / 8,
                "{live} postings"
            );
        }
    }
}
