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

/// A word's bucket: its first and last 8 bytes (4, or 1 to 3, for shorter words; overlapping
/// when it is short), any middle 8-byte chunks and its length, mixed by a folded multiply.
/// Fixed here (not a hasher from a crate) so that the build script and the library agree
/// whatever their dependencies' versions; a few loads rather than a loop per byte, so that
/// looking a word up costs about the same whatever its length.
pub fn bucket(word: &[u8]) -> usize {
    let mut a: u64 = 0x243f_6a88_85a3_08d3;
    let mut b: u64 = 0x1319_8a2e_0370_7344 ^ word.len() as u64;
    if let (Some(first), Some(last)) = (word.first_chunk::<8>(), word.last_chunk::<8>()) {
        a ^= u64::from_le_bytes(*first);
        b ^= u64::from_le_bytes(*last);
        let mut middle = word.get(8..).unwrap_or_default();
        while let Some((chunk, rest)) = middle.split_first_chunk::<8>() {
            a = fold(a ^ u64::from_le_bytes(*chunk), 0xa409_3822_299f_31d0);
            middle = rest;
        }
    } else if let (Some(first), Some(last)) = (word.first_chunk::<4>(), word.last_chunk::<4>()) {
        a ^= u64::from(u32::from_le_bytes(*first));
        b ^= u64::from(u32::from_le_bytes(*last));
    } else if let (Some(&first), Some(&last)) = (word.first(), word.last()) {
        let middle = word.get(word.len() / 2).copied().unwrap_or_default();
        a ^= u64::from(first);
        b ^= (u64::from(last) << 8) | u64::from(middle);
    }
    let hash = fold(a, b);
    ((hash ^ (hash >> 32)) & ((1 << BUCKET_BITS) - 1)) as usize
}

/// The two halves of the full product, folded together.
fn fold(x: u64, y: u64) -> u64 {
    let full = u128::from(x) * u128::from(y);
    (full as u64) ^ ((full >> 64) as u64)
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
