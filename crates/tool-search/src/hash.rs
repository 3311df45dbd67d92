//! A fast hasher for the index's lookup tables.
//!
//! The index hashes every word of every document and query; SipHash (the standard library's
//! default, built to resist hash flooding from untrusted keys) was a tenth of the build time.
//! Tool documents come from the agent's own configuration and its MCP servers, and the tables
//! are only looked up, never iterated for output, so a simple multiplicative hash (the one rustc
//! uses, "FxHash") is the better trade.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash: rotate, xor, multiply, one machine word at a time.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, mut bytes: &[u8]) {
        while let Some((chunk, rest)) = bytes.split_first_chunk::<8>() {
            self.add(u64::from_le_bytes(*chunk));
            bytes = rest;
        }
        if let Some((chunk, rest)) = bytes.split_first_chunk::<4>() {
            self.add(u64::from(u32::from_le_bytes(*chunk)));
            bytes = rest;
        }
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with [`FxHasher`]: for lookups only (its iteration order is not part of any
/// output).
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn different_words_hash_apart_and_lookups_work() {
        let mut map: FxHashMap<String, u32> = FxHashMap::default();
        for (i, word) in ["file", "files", "filf", "a", "b", "read_file_now"]
            .iter()
            .enumerate()
        {
            map.insert((*word).to_owned(), i as u32);
        }
        assert_eq!(map.get("files"), Some(&1));
        assert_eq!(map.get("read_file_now"), Some(&5));
        assert_eq!(map.get("nope"), None);
    }
}
