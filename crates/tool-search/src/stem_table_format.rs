//! The layout of the stem table, shared by the build script that writes it and the tokenizer
//! that reads it (see `stem_table.rs`).
//!
//! The table has `1 << BUCKET_BITS` buckets. `starts` holds `BUCKETS + 1` little-endian `u32`s:
//! bucket `b`'s records are `records[starts[b]..starts[b + 1]]`, each `[word length, bytes cut,
//! suffix index, word bytes...]`: the word's stem is the word without its last `bytes cut` bytes,
//! then `SUFFIXES[suffix index]`.

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
