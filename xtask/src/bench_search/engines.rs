//! The engines compared: ours (in its configurations), tantivy and the `bm25` crate, all fed
//! the same documents.

use anyhow::Context as _;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{STORED, STRING, Schema, TEXT};
use tantivy::{Index, IndexReader, TantivyDocument, Term};
use tool_search::{SearchConfig, SearchIndex, ToolDocument};

/// A search engine under test.
pub trait Engine: Send {
    /// Top `k` tool names for a free-text query.
    fn search(&mut self, query: &str, k: usize) -> Vec<String>;
    /// Adds tools in place.
    fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()>;
    /// Removes tools in place.
    fn remove(&mut self, names: &[String]) -> anyhow::Result<()>;
}

/// The flat text a peer engine indexes for a document: every field it has, once.
pub fn flat_text(doc: &ToolDocument) -> String {
    let mut text = format!("{} {}", doc.name, doc.description);
    if let Some(server) = &doc.server {
        text.push(' ');
        text.push_str(server);
    }
    for p in &doc.parameters {
        text.push(' ');
        text.push_str(&p.name);
        if let Some(d) = &p.description {
            text.push(' ');
            text.push_str(d);
        }
    }
    text
}

pub struct Ours(pub SearchIndex);

impl Ours {
    /// The index takes its documents by value, as its API does: no copy is timed.
    pub fn build(config: SearchConfig, docs: Vec<ToolDocument>) -> Self {
        Self(SearchIndex::from_documents(config, docs))
    }
}

impl Engine for Ours {
    fn search(&mut self, query: &str, k: usize) -> Vec<String> {
        // Benchmark queries are free text: searched as keywords even when they look like syntax.
        let query = tool_search::Query::Keywords {
            text: query.to_owned(),
            required: Vec::new(),
        };
        self.0
            .run(&query, k)
            .hits
            .into_iter()
            .map(|h| h.name)
            .collect()
    }

    fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()> {
        for doc in docs {
            self.0.add(doc.clone());
        }
        Ok(())
    }

    fn remove(&mut self, names: &[String]) -> anyhow::Result<()> {
        for name in names {
            self.0.remove(name);
        }
        Ok(())
    }
}

pub struct Tantivy {
    index: Index,
    reader: IndexReader,
    parser: QueryParser,
    name_field: tantivy::schema::Field,
    names: Vec<String>,
}

impl Tantivy {
    pub fn build(docs: &[ToolDocument]) -> anyhow::Result<Self> {
        let mut schema = Schema::builder();
        let name_field = schema.add_text_field("name", STRING | STORED);
        let text_field = schema.add_text_field("text", TEXT);
        let schema = schema.build();
        let index = Index::create_in_ram(schema);
        // One thread and one commit: one segment whose doc ids follow insertion order.
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 50_000_000)?;
        for doc in docs {
            let mut d = TantivyDocument::default();
            d.add_text(name_field, &doc.name);
            d.add_text(text_field, flat_text(doc));
            writer.add_document(d)?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        let parser = QueryParser::for_index(&index, vec![text_field]);
        Ok(Self {
            index,
            reader,
            parser,
            name_field,
            names: docs.iter().map(|d| d.name.clone()).collect(),
        })
    }
}

impl Engine for Tantivy {
    fn search(&mut self, query: &str, k: usize) -> Vec<String> {
        // Free text, not query syntax: tantivy's parser would read `-`, `+`, `:` and quotes as
        // operators (and panics on some of them), so only words are passed.
        let words: String = query
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .collect();
        let (parsed, _) = self.parser.parse_query_lenient(&words);
        let searcher = self.reader.searcher();
        let Ok(top) = searcher.search(&parsed, &TopDocs::with_limit(k).order_by_score()) else {
            return Vec::new();
        };
        top.into_iter()
            .filter_map(|(_, addr)| self.names.get(addr.doc_id as usize).cloned())
            .collect()
    }

    fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()> {
        let text_field = self
            .index
            .schema()
            .get_field("text")
            .context("text field")?;
        let mut writer = self
            .index
            .writer_with_num_threads::<TantivyDocument>(1, 15_000_000)?;
        for doc in docs {
            let mut d = TantivyDocument::default();
            d.add_text(self.name_field, &doc.name);
            d.add_text(text_field, flat_text(doc));
            writer.add_document(d)?;
        }
        writer.commit()?;
        self.reader.reload()?;
        Ok(())
    }

    fn remove(&mut self, names: &[String]) -> anyhow::Result<()> {
        let mut writer = self
            .index
            .writer_with_num_threads::<TantivyDocument>(1, 15_000_000)?;
        for name in names {
            writer.delete_term(Term::from_field_text(self.name_field, name));
        }
        writer.commit()?;
        self.reader.reload()?;
        Ok(())
    }
}

pub struct Bm25Crate {
    engine: bm25::SearchEngine<u32>,
    names: Vec<String>,
}

impl Bm25Crate {
    pub fn build(docs: &[ToolDocument]) -> Self {
        let documents: Vec<bm25::Document<u32>> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| bm25::Document::new(i as u32, flat_text(d)))
            .collect();
        let engine =
            bm25::SearchEngineBuilder::<u32>::with_documents(bm25::Language::English, documents)
                .build();
        Self {
            engine,
            names: docs.iter().map(|d| d.name.clone()).collect(),
        }
    }
}

impl Engine for Bm25Crate {
    fn search(&mut self, query: &str, k: usize) -> Vec<String> {
        self.engine
            .search(query, k)
            .into_iter()
            .filter_map(|r| self.names.get(r.document.id as usize).cloned())
            .collect()
    }

    fn add(&mut self, docs: &[ToolDocument]) -> anyhow::Result<()> {
        for doc in docs {
            let id = self.names.len() as u32;
            self.names.push(doc.name.clone());
            self.engine.upsert(bm25::Document::new(id, flat_text(doc)));
        }
        Ok(())
    }

    fn remove(&mut self, names: &[String]) -> anyhow::Result<()> {
        for name in names {
            if let Some(id) = self.names.iter().position(|n| n == name) {
                self.engine.remove(&(id as u32));
            }
        }
        Ok(())
    }
}
