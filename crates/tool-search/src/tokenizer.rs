//! The tokenizer: a pipeline of small filters.
//!
//! 1. Unicode NFKD, combining marks dropped (`café` → `cafe`, full-width `Ｆ` → `F`);
//! 2. the text is cut into runs of CJK characters (Han, kana, Hangul) and other text;
//! 3. other text is split into words by Unicode rules (UAX #29), then at identifier boundaries:
//!    `snake_case`, `kebab-case`, `mcp__server__tool`, `camelCase`, acronyms (`HTTPServer` →
//!    `HTTP`, `Server`) and digits (`utf8` → `utf`, `8`); a word that splits also yields its parts
//!    joined (`read_file` → `read`, `file`, `readfile`), so a query written either way matches;
//! 4. lowercase; 5. English stop words dropped; 6. English stemming (Snowball);
//! 7. CJK runs become overlapping character bigrams (a lone character is one token).

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::{decompose_compatible, is_combining_mark};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
use unicode_segmentation::UnicodeSegmentation;

use crate::stem_table;
#[cfg(test)]
use crate::stem_table_format::STOP_WORDS;

/// One token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token {
    /// The normalised text.
    pub text: String,
    /// Whether it is a CJK character bigram (or lone character).
    pub cjk: bool,
}

/// Whether `c` belongs to a script written without spaces between words, which is searched by
/// character bigrams: Han, Hiragana, Katakana, Hangul.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF    // Katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width Katakana
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x20000..=0x2FA1F  // CJK extensions B-F, compatibility supplement
    )
}

/// Turns text into tokens. Cheap to clone; holds the stemmer.
pub struct Tokenizer {
    stemmer: Stemmer,
    stem: bool,
    stop_words: bool,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("stem", &self.stem)
            .field("stop_words", &self.stop_words)
            .finish()
    }
}

impl Default for Tokenizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Tokenizer {
    fn clone(&self) -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            stem: self.stem,
            stop_words: self.stop_words,
        }
    }
}

impl Tokenizer {
    /// The full pipeline.
    pub fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            stem: true,
            stop_words: true,
        }
    }

    /// Turns stemming on or off.
    #[must_use]
    pub fn with_stemming(mut self, on: bool) -> Self {
        self.stem = on;
        self
    }

    /// Turns stop-word removal on or off.
    #[must_use]
    pub fn with_stop_words(mut self, on: bool) -> Self {
        self.stop_words = on;
        self
    }

    /// The tokens of `text`, in order (repeats kept: term frequency counts them).
    pub fn tokenize(&self, text: &str) -> Vec<Token> {
        let mut out = Vec::new();
        self.tokenize_into(text, &mut out);
        out
    }

    /// Appends the tokens of `text` to `out`.
    pub(crate) fn tokenize_into(&self, text: &str, out: &mut Vec<Token>) {
        self.for_each_segment(text, |segment, _| match segment {
            Segment::Word(word) => self.word_tokens(word, out),
            Segment::Cjk(run) => cjk_bigrams(run, out),
        });
    }

    /// Steps 1 to 3a of the pipeline: calls `f` with each Unicode word (not yet split at
    /// identifier boundaries) and each CJK run of `text`, in order, telling it also whether a
    /// word is plain (see [`is_plain_word`]; never a CJK run). With [`Tokenizer::word_tokens`]
    /// and [`cjk_bigrams`] this is [`Tokenizer::tokenize`]; an index can cache what a word
    /// becomes, since the same words recur across documents.
    pub(crate) fn for_each_segment(&self, text: &str, mut f: impl FnMut(Segment<'_>, bool)) {
        // ASCII is its own NFKD and NFC form and has no CJK: skip straight to the words.
        if text.is_ascii() {
            ascii_words(text, |word, plain| f(Segment::Word(word), plain));
            return;
        }
        let normalised = fold(text);
        let mut start = 0;
        let mut run_is_cjk = false;
        let mut emit = |run: &str, cjk: bool| {
            if cjk {
                f(Segment::Cjk(run), false);
            } else {
                for word in run.unicode_words() {
                    f(Segment::Word(word), is_plain_word(word));
                }
            }
        };
        for (i, c) in normalised.char_indices() {
            let cjk = is_cjk(c);
            if i > start && cjk != run_is_cjk {
                emit(&normalised[start..i], run_is_cjk);
                start = i;
            }
            run_is_cjk = cjk;
        }
        if start < normalised.len() {
            emit(&normalised[start..], run_is_cjk);
        }
    }

    /// Steps 3b to 6 for one word: identifier splits (with the parts also joined), lowercase,
    /// stop words, stemming.
    fn word_tokens(&self, word: &str, out: &mut Vec<Token>) {
        let mut lower = String::new();
        self.for_each_part_joining_in(word, &mut String::new(), |part, joins| {
            lowercase_into(part, &mut lower);
            if let Some(text) = self.term_of_joined(&lower, joins) {
                out.push(Token {
                    text: text.into_owned(),
                    cjk: false,
                });
            }
        });
    }

    /// Step 3b for one word: calls `f` with each part of `word` split at identifier boundaries
    /// (`read_file` → `read`, `file`), then, when it split, with the parts joined (`readfile`),
    /// joined in `joined` (a buffer to reuse). `f` is told how many parts the part joins (0 for
    /// a part alone): see [`Tokenizer::term_of_joined`]. Steps 4 to 6 then apply to each part
    /// alone: see [`lowercase_into`] and [`Tokenizer::term_of_lowercase`].
    pub(crate) fn for_each_part_joining_in(
        &self,
        word: &str,
        joined: &mut String,
        mut f: impl FnMut(&str, usize),
    ) {
        // Most words are plain (`file`, `Reads`): nothing to split.
        if is_plain_word(word) {
            f(word, 0);
            return;
        }
        joined.clear();
        let mut parts = 0;
        let mut part = |part: &str| {
            parts += 1;
            joined.push_str(part);
            f(part, 0);
        };
        if word.is_ascii() {
            split_ascii_identifier(word, &mut part);
        } else {
            split_identifier(word).into_iter().for_each(&mut part);
        }
        if parts > 1 {
            f(joined, parts);
        }
    }

    /// Steps 5 and 6 for one lowercase part: `None` for a stop word (or nothing), else the part
    /// stemmed. What a part becomes depends only on its lowercase form, so an index can remember
    /// it per lowercase form and stem each only once.
    pub(crate) fn term_of_lowercase<'a>(&self, lower: &'a str) -> Option<Cow<'a, str>> {
        self.term_without_stemmer(lower)
            .unwrap_or_else(|| Some(self.stemmer.stem(lower)))
    }

    /// What the lowercase parts of a word joined become, `parts` of them (0 for a part alone):
    /// a part alone and two parts joined (`readfile`) as [`Tokenizer::term_of_lowercase`];
    /// three or more joined (`getweatherforecast`) are kept as they are. Those are long and
    /// nearly all unique (a tool's full name), so stemming them would be most of the stemmer's
    /// work for little: only the same identifier finds them, and its parts are terms anyway.
    pub(crate) fn term_of_joined<'a>(&self, lower: &'a str, parts: usize) -> Option<Cow<'a, str>> {
        if Self::stems_joined(parts) {
            self.term_of_lowercase(lower)
        } else {
            Some(Cow::Borrowed(lower))
        }
    }

    /// Whether [`Tokenizer::term_of_joined`] stems (and may drop) a part that joins `parts`
    /// parts (0 for a part alone).
    pub(crate) fn stems_joined(parts: usize) -> bool {
        parts <= 2
    }

    /// [`Tokenizer::term_of_lowercase`] when it is cheap: `None` when the stemmer would have
    /// to run (a word that is not in the table of common words' stems).
    pub(crate) fn term_without_stemmer<'a>(&self, lower: &'a str) -> Option<Option<Cow<'a, str>>> {
        if lower.is_empty() {
            return Some(None);
        }
        if !lower.bytes().all(|b| b.is_ascii_alphabetic()) {
            // Not a word the stemmer knows, nor a stop word (those are all letters).
            return Some(Some(Cow::Borrowed(lower)));
        }
        self.letters_without_stemmer(lower)
    }

    /// [`Tokenizer::term_without_stemmer`] for a part known to be lowercase ASCII letters, at
    /// least one.
    pub(crate) fn letters_without_stemmer<'a>(
        &self,
        lower: &'a str,
    ) -> Option<Option<Cow<'a, str>>> {
        // One lookup tells both whether it is a stop word (every stop word is in the table) and
        // what its stem is.
        match stem_table::lookup(lower) {
            Some(word) if self.stop_words && word.is_stop_word() => Some(None),
            Some(word) if self.stem => Some(Some(word.stem())),
            // The English stemmer leaves words of two letters as they are.
            None if self.stem && lower.len() > 2 => None,
            _ => Some(Some(Cow::Borrowed(lower))),
        }
    }

    /// The stem of a lowercase part for which [`Tokenizer::term_without_stemmer`] gave `None`.
    pub(crate) fn stem_uncommon<'a>(&self, lower: &'a str) -> Cow<'a, str> {
        self.stemmer.stem(lower)
    }
}

/// Whether `word` is one ASCII letter and lowercase ones after it (`file`, `Reads`): its own
/// only part.
pub(crate) fn is_plain_word(word: &str) -> bool {
    word.as_bytes().split_first().is_some_and(|(first, rest)| {
        first.is_ascii_alphabetic() && rest.iter().all(u8::is_ascii_lowercase)
    })
}

/// Step 4: `part` lowercased into `out` (which is cleared first), without allocating for ASCII.
pub(crate) fn lowercase_into(part: &str, out: &mut String) {
    out.clear();
    if part.is_ascii() {
        out.push_str(part);
        out.make_ascii_lowercase();
    } else {
        // `str::to_lowercase`, not per character: a final sigma becomes `ς`.
        out.push_str(&part.to_lowercase());
    }
}

#[cfg(test)]
fn is_stop_word(word: &str) -> bool {
    stem_table::lookup(word).is_some_and(|w| w.is_stop_word())
}

/// A piece of text before it becomes tokens: see [`Tokenizer::for_each_segment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    /// A word by Unicode rules, possibly an identifier such as `read_file` or `getHTTPServer`.
    Word(&'a str),
    /// A run of Han, kana or Hangul characters.
    Cjk(&'a str),
}

/// The words of ASCII text, exactly as [`UnicodeSegmentation::unicode_words`] finds them
/// (UAX #29 restricted to ASCII, checked against it by a property test), several times faster.
///
/// A word is a run of letters, digits and `_`, where `:`, `.` and `'` may join two letters and
/// `,`, `;`, `.` and `'` two digits; runs of `_` alone are not words.
///
/// `f` is also told whether the word is plain (see [`is_plain_word`]), which the scan finds out
/// on the way for all but capitalised words.
fn ascii_words<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool)) {
    let bytes = text.as_bytes();
    let class = |i: usize| ASCII_CLASS[usize::from(bytes[i])];
    let mut i = 0;
    while i < bytes.len() {
        if class(i) & WORD == 0 {
            i += 1;
            continue;
        }
        let start = i;
        let mut seen = 0;
        let mut joined = false;
        loop {
            while i < bytes.len() && class(i) & WORD != 0 {
                seen |= class(i);
                i += 1;
            }
            // A joiner continues the word only between two letters or two digits.
            if i + 1 >= bytes.len() {
                break;
            }
            let around = class(i - 1) & class(i + 1);
            let joiner = class(i);
            let joins = (around & LETTER != 0 && joiner & JOINS_LETTERS != 0)
                || (around & DIGIT != 0 && joiner & JOINS_DIGITS != 0);
            if !joins {
                break;
            }
            joined = true;
            i += 1;
        }
        if seen & (LETTER | DIGIT) != 0 {
            let word = &text[start..i];
            // Letters alone, lowercase after the first (looked at only when one is uppercase).
            let plain = !joined
                && seen & (DIGIT | UNDERSCORE) == 0
                && (seen & UPPER == 0 || word.as_bytes()[1..].iter().all(u8::is_ascii_lowercase));
            f(word, plain);
        }
    }
}

const LETTER: u8 = 1;
const DIGIT: u8 = 2;
const UNDERSCORE: u8 = 4;
/// Uppercase letters have this as well as [`LETTER`].
const UPPER: u8 = 32;
/// Bytes that are part of a word.
const WORD: u8 = LETTER | DIGIT | UNDERSCORE;
/// `:`, `.`, `'`: join two letters.
const JOINS_LETTERS: u8 = 8;
/// `,`, `;`, `.`, `'`: join two digits.
const JOINS_DIGITS: u8 = 16;

/// What each byte is to [`ascii_words`].
static ASCII_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c.is_ascii_uppercase() {
            LETTER | UPPER
        } else if c.is_ascii_lowercase() {
            LETTER
        } else if c.is_ascii_digit() {
            DIGIT
        } else {
            match c {
                b'_' => UNDERSCORE,
                b':' => JOINS_LETTERS,
                b'.' | b'\'' => JOINS_LETTERS | JOINS_DIGITS,
                b',' | b';' => JOINS_DIGITS,
                _ => 0,
            }
        };
        b += 1;
    }
    table
};

/// Step 7: the overlapping bigrams of a CJK run (a lone character is one token).
fn cjk_bigrams(run: &str, out: &mut Vec<Token>) {
    for_each_cjk_bigram(run, |bigram| {
        out.push(Token {
            text: bigram.to_owned(),
            cjk: true,
        });
    });
}

/// Calls `f` with each overlapping bigram of a CJK run, in order (a lone character is one).
pub(crate) fn for_each_cjk_bigram<'a>(run: &'a str, mut f: impl FnMut(&'a str)) {
    let mut starts = run.char_indices().map(|(i, _)| i).skip(1);
    let Some(mut middle) = starts.next() else {
        if !run.is_empty() {
            f(run);
        }
        return;
    };
    let mut start = 0;
    for end in starts.chain([run.len()]) {
        f(&run[start..end]);
        (start, middle) = (middle, end);
    }
}

/// Step 1 for text that is not all ASCII: NFKD, with combining marks dropped from Latin and other
/// alphabets (accents) but kept on kana (dakuten), then NFC, which puts kana marks and Hangul
/// syllables back together.
///
/// Each character is decomposed on its own (the text is borrowed when none changes); NFC runs
/// only when the result has a character that may combine with the one before it (NFC's quick
/// check). Text with kana marks goes through both normalisations. A property test checks that
/// both ways agree.
fn fold(text: &str) -> Cow<'_, str> {
    let mut folded: Option<String> = None;
    let mut last_base_cjk = false;
    for (i, c) in text.char_indices() {
        if c.is_ascii() || is_hangul_syllable(c) {
            // Hangul syllables decompose, but NFC puts them back as they were.
            last_base_cjk = !c.is_ascii();
            if let Some(folded) = &mut folded {
                folded.push(c);
            }
            continue;
        }
        let mut unchanged = true;
        decompose_compatible(c, |d| unchanged &= d == c);
        if unchanged && !is_combining_mark(c) {
            last_base_cjk = is_cjk(c);
            if let Some(folded) = &mut folded {
                folded.push(c);
            }
            continue;
        }
        let folded = folded.get_or_insert_with(|| {
            let mut folded = String::with_capacity(text.len());
            folded.push_str(&text[..i]);
            folded
        });
        let mut kept_mark = false;
        decompose_compatible(c, |d| {
            if is_combining_mark(d) {
                kept_mark |= last_base_cjk;
            } else {
                last_base_cjk = is_cjk(d);
                folded.push(d);
            }
        });
        if kept_mark {
            return Cow::Owned(fold_fully(text));
        }
    }
    let folded = folded.map_or(Cow::Borrowed(text), Cow::Owned);
    if is_nfc_quick(folded.chars()) == IsNormalized::Yes {
        folded
    } else {
        Cow::Owned(folded.nfc().collect())
    }
}

/// [`fold`] by the book: NFKD, marks dropped but on kana, NFC.
fn fold_fully(text: &str) -> String {
    let mut last_base_cjk = false;
    let folded: String = text
        .nfkd()
        .filter(|c| {
            if is_combining_mark(*c) {
                last_base_cjk
            } else {
                last_base_cjk = is_cjk(*c);
                true
            }
        })
        .collect();
    folded.nfc().collect()
}

fn is_hangul_syllable(c: char) -> bool {
    matches!(c as u32, 0xAC00..=0xD7A3)
}

/// Splits an identifier-like word at `_`, `-`, `.`, `'`, camelCase, acronym and digit
/// boundaries.
fn split_identifier(word: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for chunk in word.split(['_', '-', '.', '\'']).filter(|c| !c.is_empty()) {
        let mut start = 0;
        let mut prev: Option<char> = None;
        let mut chars = chunk.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if let Some(prev) = prev {
                let next = chars.peek().map(|&(_, n)| n);
                let boundary = (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_alphabetic() && c.is_numeric())
                    || (prev.is_numeric() && c.is_alphabetic())
                    || (prev.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(char::is_lowercase));
                if boundary && i > start {
                    parts.push(&chunk[start..i]);
                    start = i;
                }
            }
            prev = Some(c);
        }
        if start < chunk.len() {
            parts.push(&chunk[start..]);
        }
    }
    parts
}

/// [`split_identifier`] for an ASCII word, by bytes and without collecting the parts (checked
/// against it by a property test).
fn split_ascii_identifier<'a>(word: &'a str, mut f: impl FnMut(&'a str)) {
    for chunk in word.split(['_', '-', '.', '\'']).filter(|c| !c.is_empty()) {
        let bytes = chunk.as_bytes();
        let mut start = 0;
        for i in 1..bytes.len() {
            let (prev, c) = (bytes[i - 1], bytes[i]);
            let boundary = (prev.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (prev.is_ascii_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_ascii_alphabetic())
                || (prev.is_ascii_uppercase()
                    && c.is_ascii_uppercase()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase));
            if boundary && i > start {
                f(&chunk[start..i]);
                start = i;
            }
        }
        if start < bytes.len() {
            f(&chunk[start..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        Tokenizer::new()
            .tokenize(text)
            .into_iter()
            .map(|t| {
                if t.cjk {
                    format!("[{}]", t.text)
                } else {
                    t.text
                }
            })
            .collect()
    }

    #[test]
    fn identifiers_split_at_every_boundary() {
        assert_eq!(
            split_identifier("getHTTPServer2Go"),
            ["get", "HTTP", "Server", "2", "Go"]
        );
        assert_eq!(
            split_identifier("mcp__github__create_issue"),
            ["mcp", "github", "create", "issue"]
        );
        assert_eq!(
            split_identifier("kebab-case-name"),
            ["kebab", "case", "name"]
        );
        assert_eq!(split_identifier("utf8"), ["utf", "8"]);
        assert_eq!(split_identifier("plain"), ["plain"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        #[test]
        fn ascii_words_are_the_unicode_words(text in "[a-cA-C0-2_.:',; \\-\n\r\t()/@#]{0,24}|[\\x00-\\x7f]{0,32}") {
            let mut ours = Vec::new();
            ascii_words(&text, |w, plain| {
                assert_eq!(plain, is_plain_word(w), "{w}");
                ours.push(w);
            });
            let theirs: Vec<&str> = text.unicode_words().collect();
            proptest::prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn ascii_identifiers_split_as_any_word_does(word in "[a-cA-C0-2_.:'\\-]{0,16}") {
            let mut ours = Vec::new();
            split_ascii_identifier(&word, |p| ours.push(p));
            proptest::prop_assert_eq!(ours, split_identifier(&word));
        }

        #[test]
        fn folding_char_by_char_is_folding_by_the_book(
            text in "[a-zé\u{0301}\u{0300}\u{3099}\u{309A}かがカガｶﾞﾟ한국가\u{1100}\u{1161}\u{11A8}\u{3131}\u{314F}ＦＩ，。：天気ﬁ①Å\u{212B}\u{F900}ǅ ]{0,12}|\\PC{0,12}"
        ) {
            let (fast, slow) = (fold(&text), fold_fully(&text));
            proptest::prop_assert_eq!(fast.as_ref(), slow.as_str());
        }
    }

    #[test]
    fn bigrams_overlap_and_a_lone_character_is_one() {
        let bigrams = |run| {
            let mut out = Vec::new();
            for_each_cjk_bigram(run, |b| out.push(b));
            out
        };
        assert_eq!(bigrams("天气预报"), ["天气", "气预", "预报"]);
        assert_eq!(bigrams("天气"), ["天气"]);
        assert_eq!(bigrams("天"), ["天"]);
        assert!(bigrams("").is_empty());
    }

    #[test]
    fn ascii_words_on_identifiers_and_numbers() {
        let mut words = Vec::new();
        ascii_words(
            "read_file(path: 'a.txt') costs $1,000.50; e.g. __init__ x:y 3.a don't Reads",
            |w, plain| words.push((w, plain)),
        );
        assert_eq!(
            words,
            [
                ("read_file", false),
                ("path", true),
                ("a.txt", false),
                ("costs", true),
                ("1,000.50", false),
                ("e.g", false),
                ("__init__", false),
                ("x:y", false),
                ("3", false),
                ("a", true),
                ("don't", false),
                ("Reads", true),
            ]
        );
    }

    #[test]
    fn words_of_two_letters_need_no_stemmer() {
        let tokenizer = Tokenizer::new();
        let stemmer = Stemmer::create(Algorithm::English);
        for a in b'a'..=b'z' {
            for word in std::iter::once(vec![a]).chain((b'a'..=b'z').map(|b| vec![a, b])) {
                let word = String::from_utf8(word).expect("ASCII");
                let cheap = tokenizer.letters_without_stemmer(&word);
                assert!(cheap.is_some(), "{word}");
                if let Some(Some(term)) = cheap {
                    assert_eq!(term, stemmer.stem(&word), "{word}");
                }
            }
        }
    }

    #[test]
    fn the_stop_words_are_found_and_no_others() {
        for word in STOP_WORDS {
            assert!(is_stop_word(word), "{word}");
        }
        assert!(is_stop_word("the") && is_stop_word("yours") && !is_stop_word("file"));
        assert!(!is_stop_word("The") && !is_stop_word("thee") && !is_stop_word(""));
    }

    #[test]
    fn parts_lowercase_alike_become_the_same_term() {
        let tokenizer = Tokenizer::new();
        for (word, lower) in [
            ("Reads", "reads"),
            ("PDF", "pdf"),
            ("The", "the"),
            ("Café", "café"),
        ] {
            assert_eq!(
                tokenizer.tokenize(word),
                tokenizer.tokenize(lower),
                "{word}"
            );
        }
    }

    #[test]
    fn english() {
        insta::assert_debug_snapshot!(texts(
            "Reads the files from the local filesystem, returning their contents."
        ));
    }

    #[test]
    fn identifiers() {
        insta::assert_debug_snapshot!(texts(
            "mcp__github__create_issue read_file getHTTPServer2 web-fetch XMLHttpRequest"
        ));
    }

    #[test]
    fn accents_and_width_are_folded() {
        assert_eq!(texts("Café ＦＩＬＥ naïve"), ["cafe", "file", "naiv"]);
    }

    #[test]
    fn chinese() {
        insta::assert_debug_snapshot!(texts("查询北京的天气预报"));
    }

    #[test]
    fn japanese() {
        insta::assert_debug_snapshot!(texts("ファイルを読み込む"));
    }

    #[test]
    fn kana_keep_their_marks_and_hangul_stays_whole() {
        assert_eq!(texts("ブログ"), ["[ブロ]", "[ログ]"]);
        assert_eq!(texts("ｶﾞｲﾄﾞ"), ["[ガイ]", "[イド]"]);
        assert_eq!(texts("한국"), ["[한국]"]);
    }

    #[test]
    fn korean() {
        insta::assert_debug_snapshot!(texts("파일 읽기 도구"));
    }

    #[test]
    fn mixed_text_and_lone_characters() {
        insta::assert_debug_snapshot!(texts("用 GitHub API 创建 issue, 查 天"));
    }

    #[test]
    fn stop_words_and_punctuation_vanish() {
        assert!(texts("the of and ... !!! ???").is_empty());
    }
}
