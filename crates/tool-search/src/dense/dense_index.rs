//! [`DenseIndex`]: the vector of each indexed tool's text, updated in place.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::store::{UNOWNED, VectorStore, content_key};
use super::{Embedder, EmbeddingError};
use crate::document::ToolDocument;

/// The text a tool is embedded as: its name in words, its label and hint, its description
/// and its parameters' names.
///
/// The name's `_`, `-`, `.` and `__` separators become spaces, so a word-piece tokenizer sees
/// words (`mcp__slack__send_message` reads `mcp slack send message`).
pub(crate) fn document_text(doc: &ToolDocument) -> String {
    let words = |s: &str| -> String {
        s.split(['_', '-', '.', '/'])
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut text = words(&doc.name);
    if let Some(label) = doc.label.as_deref().filter(|l| !l.is_empty()) {
        text.push_str(" (");
        text.push_str(label);
        text.push(')');
    }
    text.push_str(": ");
    if let Some(hint) = doc.search_hint.as_deref().filter(|h| !h.is_empty()) {
        text.push_str(hint);
        text.push_str(". ");
    }
    text.push_str(doc.description.trim());
    if !doc.parameters.is_empty() {
        text.push_str(" Parameters: ");
        let names: Vec<String> = doc.parameters.iter().map(|p| words(&p.name)).collect();
        text.push_str(&names.join(", "));
        text.push('.');
    }
    text
}

/// The vectors of a set of tools (by name), kept in step with a lexical index by
/// [`HybridIndex`](super::HybridIndex), and cached on disk by content when given a folder.
pub struct DenseIndex {
    embedder: Arc<dyn Embedder>,
    store: VectorStore,
    cache: Option<PathBuf>,
    /// The row of each tool.
    by_name: FxHashMap<String, u32>,
    /// The tools, by the id the store's rows name as their owner (`None`: removed).
    tools: Vec<Option<String>>,
    free: Vec<u32>,
    embedded: usize,
    loaded: usize,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("tools", &self.by_name.len())
            .field("rows", &self.store.rows())
            .field("cache", &self.cache)
            .finish()
    }
}

impl DenseIndex {
    /// An empty index for `embedder`'s vectors; with `cache`, a folder whose file for this
    /// model (if any) is read now and rewritten when new tools have been embedded.
    pub fn new(embedder: Arc<dyn Embedder>, cache: Option<&Path>) -> Self {
        let mut store = VectorStore::new(embedder.model_key(), embedder.dimension());
        let cache = cache.map(|dir| store.file_in(dir));
        let loaded = cache.as_deref().map_or(0, |file| store.load(file));
        Self {
            embedder,
            store,
            cache,
            by_name: FxHashMap::default(),
            tools: Vec::new(),
            free: Vec::new(),
            embedded: 0,
            loaded,
        }
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// How many tools have a vector.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no tool has a vector.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// How many texts this index has sent to the embedder (the others came from the cache).
    pub fn embedded(&self) -> usize {
        self.embedded
    }

    /// How many vectors the cache file held when the index was opened.
    pub fn loaded_from_cache(&self) -> usize {
        self.loaded
    }

    /// The cache file, if the index has one.
    pub fn cache_file(&self) -> Option<&Path> {
        self.cache.as_deref()
    }

    /// Gives each of `docs` its vector (a tool already there is replaced), embedding in one
    /// batch the texts neither this index nor its cache has, then writes the cache if any
    /// were. On an error no tool of `docs` has changed.
    pub fn add_all(&mut self, docs: &[ToolDocument]) -> Result<(), EmbeddingError> {
        let texts: Vec<String> = docs.iter().map(document_text).collect();
        let keys: Vec<_> = texts.iter().map(|t| content_key(t)).collect();
        let mut missing: Vec<usize> = Vec::new();
        let mut seen = rustc_hash::FxHashSet::default();
        for (i, key) in keys.iter().enumerate() {
            if self.store.find(key).is_none() && seen.insert(*key) {
                missing.push(i);
            }
        }
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.embedder.embed_documents(&batch)?;
            let dimension = self.store.dimension;
            if vectors.len() != batch.len() * dimension {
                return Err(EmbeddingError::Shape {
                    got: vectors.len(),
                    texts: batch.len(),
                    dimension,
                });
            }
            for (&i, vector) in missing.iter().zip(vectors.chunks_exact(dimension)) {
                self.store.push(keys[i], vector);
            }
            self.embedded += missing.len();
        }
        for (doc, key) in docs.iter().zip(&keys) {
            self.remove(&doc.name);
            let Some(row) = self.store.find(key) else {
                continue;
            };
            let id = match self.free.pop() {
                Some(id) => {
                    self.tools[id as usize] = Some(doc.name.clone());
                    id
                }
                None => {
                    self.tools.push(Some(doc.name.clone()));
                    (self.tools.len() - 1) as u32
                }
            };
            // Two tools with the same text (never by name, which the text holds) share a
            // row: the later one owns it.
            let previous = self.store.owners[row as usize];
            if previous != UNOWNED {
                self.drop_owner(previous);
            }
            self.store.set_owner(row, id);
            self.by_name.insert(doc.name.clone(), row);
        }
        if self.store.wants_compaction() {
            let by_name = &mut self.by_name;
            let tools = &self.tools;
            self.store.compact(|owner, row| {
                if let Some(Some(name)) = tools.get(owner as usize)
                    && let Some(slot) = by_name.get_mut(name)
                {
                    *slot = row;
                }
            });
        }
        if self.store.unsaved > 0
            && let Some(file) = &self.cache
        {
            self.store.save(file)?;
        }
        Ok(())
    }

    fn drop_owner(&mut self, id: u32) {
        if let Some(name) = self.tools.get_mut(id as usize).and_then(Option::take) {
            self.by_name.remove(&name);
            self.free.push(id);
        }
    }

    /// Removes a tool's vector (kept unowned for the cache); whether it had one.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(row) = self.by_name.remove(name) else {
            return false;
        };
        let owner = self.store.owners[row as usize];
        if owner != UNOWNED {
            if let Some(slot) = self.tools.get_mut(owner as usize) {
                *slot = None;
            }
            self.free.push(owner);
        }
        self.store.set_owner(row, UNOWNED);
        true
    }

    /// The query's vector, or `None` when the model cannot read the query.
    pub fn query_vector(&self, query: &str) -> Result<Option<Vec<f32>>, EmbeddingError> {
        if !self.embedder.reads(query) {
            return Ok(None);
        }
        let vector = self.embedder.embed_query(query)?;
        if vector.len() != self.store.dimension {
            return Err(EmbeddingError::Shape {
                got: vector.len(),
                texts: 1,
                dimension: self.store.dimension,
            });
        }
        Ok(Some(vector))
    }

    /// Every tool with its cosine to `vector`, best first (ties by name).
    pub fn rank(&self, vector: &[f32]) -> Vec<(&str, f32)> {
        let mut ranked: Vec<(&str, f32)> = self
            .store
            .owners
            .iter()
            .enumerate()
            .filter(|(_, owner)| **owner != UNOWNED)
            .filter_map(|(row, owner)| {
                let name = self.tools.get(*owner as usize)?.as_deref()?;
                Some((name, dot(self.store.row(row as u32), vector)))
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
    }

    /// The cosine of a tool's vector to `vector`, if the tool has one.
    pub fn similarity(&self, name: &str, vector: &[f32]) -> Option<f32> {
        let row = *self.by_name.get(name)?;
        Some(dot(self.store.row(row), vector))
    }

    /// The vector of a tool, if it has one.
    pub fn vector(&self, name: &str) -> Option<&[f32]> {
        let row = *self.by_name.get(name)?;
        Some(self.store.row(row))
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
