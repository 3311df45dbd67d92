//! A search engine for tool documents.
//!
//! This crate is filled by the tool-search work: a tokenizer pipeline, BM25+ and TF-IDF scorers,
//! a CJK bigram gate, a query syntax and an inverted index updated in place. It depends on no
//! other crate of this workspace.
