//! The stop words and the layout of the stem table, shared by the build script that writes it and
//! the tokenizer that reads it (see `stem_table.rs`).
//!
//! The table has `1 << BUCKET_BITS` buckets. `starts` holds `BUCKETS + 1` little-endian `u32`s:
//! bucket `b`'s records are `records[starts[b]..starts[b + 1]]`, each `[word length, bytes cut,
//! suffix index, word bytes...]`: the word's stem is the word without its last `bytes cut & !STOP`
//! bytes, then `SUFFIXES[suffix index]`; `bytes cut & STOP` is set for a stop word.

/// The flag of a stop word's record, in its `bytes cut`.
pub const STOP: u8 = 0x80;

/// 32,768 buckets: about two words each, so a lookup reads one bucket of ~25 bytes.
pub const BUCKET_BITS: u32 = 15;

/// A word's bucket: FNV-1a, folded to `BUCKET_BITS`. Fixed here (not a hasher from a crate) so
/// that the build script and the library agree whatever their dependencies' versions.
pub fn bucket(word: &[u8]) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in word {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    ((hash ^ (hash >> 32)) & ((1 << BUCKET_BITS) - 1)) as usize
}

/// English stop words: too common in tool descriptions and requests to tell tools apart. The build
/// script flags them in the table, which is how the tokenizer knows them.
#[cfg_attr(not(test), allow(dead_code))]
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "did", "do", "does", "doing", "down", "during", "each", "either", "etc", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let", "may", "me", "might",
    "more", "most", "must", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "out", "over", "own", "please", "same", "shall", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your", "yours",
];
