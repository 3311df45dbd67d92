//! The English stems of 73,445 common words (SCOWL size 50, `data/english-words.txt`) and the
//! stop words, made at build time by the same stemmer the tokenizer runs, so a lookup gives
//! exactly what stemming would; stop words are flagged.
//!
//! Stemming is most of the cost of a word no document contains: a query of ordinary English
//! ("I want to look up the weather") is mostly such words, each new to the query-word cache of a
//! fresh thread. A lookup reads a 4-byte bucket start and one ~25-byte bucket, and allocates
//! only when the stem does not end where the word's kept part does (`happy` → `happi`); the
//! table is 0.9 MB of read-only data.

use std::borrow::Cow;

use crate::stem_table_format::{BUCKET_BITS, STOP, bucket};

include!(concat!(env!("OUT_DIR"), "/stem_suffixes.rs"));

static STARTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stem_starts.bin"));
static RECORDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stem_records.bin"));

fn start(bucket: usize) -> usize {
    let at = bucket * 4;
    STARTS
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u32::from_le_bytes(b) as usize)
}

/// A word found in the table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Word<'a> {
    word: &'a str,
    cut: u8,
    suffix: &'static str,
}

impl<'a> Word<'a> {
    /// Whether it is one of [`crate::stem_table_format::STOP_WORDS`].
    pub(crate) fn is_stop_word(self) -> bool {
        self.cut & STOP != 0
    }

    /// Its stem: a slice of the word unless the stem ends otherwise (`happy` → `happi`).
    pub(crate) fn stem(self) -> Cow<'a, str> {
        let cut = usize::from(self.cut & !STOP);
        let kept = self
            .word
            .get(..self.word.len().saturating_sub(cut))
            .unwrap_or(self.word);
        if self.suffix.is_empty() {
            Cow::Borrowed(kept)
        } else {
            Cow::Owned(format!("{kept}{}", self.suffix))
        }
    }
}

/// `word` (lowercase ASCII letters) as the table has it, if it does.
pub(crate) fn lookup(word: &str) -> Option<Word<'_>> {
    let b = bucket(word.as_bytes());
    debug_assert!(b < 1 << BUCKET_BITS);
    let mut records = RECORDS.get(start(b)..start(b + 1))?;
    while let [len, cut, suffix, rest @ ..] = records {
        let len = usize::from(*len);
        if rest.get(..len)? == word.as_bytes() {
            return Some(Word {
                word,
                cut: *cut,
                suffix: SUFFIXES.get(usize::from(*suffix))?,
            });
        }
        records = rest.get(len..)?;
    }
    None
}

/// Every word of the table with its stem, in table order.
#[cfg(test)]
pub(crate) fn entries() -> Vec<(String, String, bool)> {
    let mut out = Vec::with_capacity(WORDS);
    let mut records = RECORDS;
    while let [len, _, _, rest @ ..] = records {
        let word = std::str::from_utf8(&rest[..usize::from(*len)]).expect("ASCII words");
        let found = lookup(word).expect("every word is found");
        out.push((
            word.to_owned(),
            found.stem().into_owned(),
            found.is_stop_word(),
        ));
        records = &rest[usize::from(*len)..];
    }
    out
}

#[cfg(test)]
mod tests {
    use rust_stemmers::{Algorithm, Stemmer};

    use super::*;
    use crate::stem_table_format::STOP_WORDS;

    #[test]
    fn every_word_has_the_stem_the_stemmer_gives() {
        let stemmer = Stemmer::create(Algorithm::English);
        let entries = entries();
        assert_eq!(entries.len(), WORDS);
        for (word, stem, stop) in &entries {
            assert_eq!(*stem, stemmer.stem(word), "{word}");
            assert_eq!(*stop, STOP_WORDS.contains(&word.as_str()), "{word}");
        }
    }

    #[test]
    fn words_spread_evenly_over_the_buckets() {
        let mut sizes = vec![0usize; 1 << crate::stem_table_format::BUCKET_BITS];
        for (word, _, _) in entries() {
            sizes[bucket(word.as_bytes())] += 1;
        }
        // About two words a bucket, spread as if at random: about a tenth of the buckets
        // empty, and none with many.
        let longest = sizes.iter().copied().max().unwrap_or_default();
        let empty = sizes.iter().filter(|s| **s == 0).count();
        assert!(longest <= 16, "a bucket holds {longest} words");
        assert!(empty < sizes.len() / 8, "{empty} buckets are empty");
    }

    #[test]
    fn words_not_in_the_table_are_not_found() {
        for word in ["", "zzzq", "mcp", "readfile", "a".repeat(300).as_str()] {
            assert!(lookup(word).is_none(), "{word}");
        }
        let stem = |word| lookup(word).map(|w| w.stem().into_owned());
        assert_eq!(stem("looking").as_deref(), Some("look"));
        assert_eq!(stem("happy").as_deref(), Some("happi"));
        assert_eq!(stem("generalizations").as_deref(), Some("general"));
        assert_eq!(stem("the").as_deref(), Some("the"));
    }
}
