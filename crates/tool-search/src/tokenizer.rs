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

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation;

/// One token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token {
    /// The normalised text.
    pub text: String,
    /// Whether it is a CJK character bigram (or lone character).
    pub cjk: bool,
}

/// English stop words: too common in tool descriptions and requests to tell tools apart.
const STOP_WORDS: &[&str] = &[
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

fn stop_words() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOP_WORDS.iter().copied().collect())
}

/// Whether `c` belongs to a script written without spaces between words, which is searched by
/// character bigrams: Han, Hiragana, Katakana, Hangul.
pub fn is_cjk(c: char) -> bool {
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
    pub fn tokenize_into(&self, text: &str, out: &mut Vec<Token>) {
        self.for_each_segment(text, |segment| match segment {
            Segment::Word(word) => self.word_tokens(word, out),
            Segment::Cjk(run) => cjk_bigrams(run, out),
        });
    }

    /// Steps 1 to 3a of the pipeline: calls `f` with each Unicode word (not yet split at
    /// identifier boundaries) and each CJK run of `text`, in order. With
    /// [`Tokenizer::word_tokens`] and [`Tokenizer::cjk_bigrams`] this is [`Tokenizer::tokenize`];
    /// an index can cache what a word becomes, since the same words recur across documents.
    pub fn for_each_segment(&self, text: &str, mut f: impl FnMut(Segment<'_>)) {
        // ASCII is its own NFKD and NFC form and has no CJK: skip straight to the words.
        if text.is_ascii() {
            for word in text.unicode_words() {
                f(Segment::Word(word));
            }
            return;
        }
        // Combining marks are dropped from Latin and other alphabets (accents), but kept on kana
        // (dakuten) so that recomposition restores them; NFC then recomposes kana and Hangul
        // syllables, which NFKD had taken apart.
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
        let normalised: String = folded.nfc().collect();
        let mut start = 0;
        let mut run_is_cjk = false;
        let mut emit = |run: &str, cjk: bool| {
            if cjk {
                f(Segment::Cjk(run));
            } else {
                for word in run.unicode_words() {
                    f(Segment::Word(word));
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
    pub fn word_tokens(&self, word: &str, out: &mut Vec<Token>) {
        // Most words are plain (`file`, `Reads`): nothing to split.
        if let Some((first, rest)) = word.as_bytes().split_first()
            && first.is_ascii_alphabetic()
            && rest.iter().all(u8::is_ascii_lowercase)
        {
            self.push_word(word, out);
            return;
        }
        let parts = split_identifier(word);
        if parts.len() > 1 {
            for part in &parts {
                self.push_word(part, out);
            }
            let joined: String = parts.concat();
            self.push_word(&joined, out);
        } else if let Some(part) = parts.first() {
            self.push_word(part, out);
        }
    }

    /// The lowercase form of `word` when it has exactly the same tokens (`Reads`, `PDF` →
    /// `reads`, `pdf`: ASCII letters, capitalised or all capitals, so no identifier split), and
    /// `None` for words already lowercase or that could split (`GitHub`). A cache of what words
    /// become can then serve the capitalised word from its lowercase entry, without stemming.
    pub fn same_tokens_as_lowercase(word: &str) -> Option<String> {
        let bytes = word.as_bytes();
        let (first, rest) = bytes.split_first()?;
        let capitalised = first.is_ascii_uppercase() && rest.iter().all(u8::is_ascii_lowercase);
        let capitals = bytes.iter().all(u8::is_ascii_uppercase);
        (capitalised || capitals).then(|| word.to_ascii_lowercase())
    }

    /// Step 7: the overlapping bigrams of a CJK run (a lone character is one token).
    pub fn cjk_bigrams(&self, run: &str, out: &mut Vec<Token>) {
        cjk_bigrams(run, out);
    }

    fn push_word(&self, word: &str, out: &mut Vec<Token>) {
        let lower = if word.is_ascii() {
            word.to_ascii_lowercase()
        } else {
            word.to_lowercase()
        };
        if lower.is_empty() || (self.stop_words && stop_words().contains(lower.as_str())) {
            return;
        }
        let text = if self.stem && lower.chars().all(|c| c.is_ascii_alphabetic()) {
            self.stemmer.stem(&lower).into_owned()
        } else {
            lower
        };
        out.push(Token { text, cjk: false });
    }
}

/// A piece of text before it becomes tokens: see [`Tokenizer::for_each_segment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A word by Unicode rules, possibly an identifier such as `read_file` or `getHTTPServer`.
    Word(&'a str),
    /// A run of Han, kana or Hangul characters.
    Cjk(&'a str),
}

/// Overlapping bigrams of a CJK run; a lone character is one token.
fn cjk_bigrams(run: &str, out: &mut Vec<Token>) {
    let chars: Vec<char> = run.chars().collect();
    if chars.len() == 1 {
        out.push(Token {
            text: run.to_owned(),
            cjk: true,
        });
        return;
    }
    for pair in chars.windows(2) {
        out.push(Token {
            text: pair.iter().collect(),
            cjk: true,
        });
    }
}

/// Splits an identifier-like word at `_`, `-`, `.`, camelCase, acronym and digit boundaries.
fn split_identifier(word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for chunk in word.split(['_', '-', '.', '\'']).filter(|c| !c.is_empty()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut current = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if let Some(&prev) = i.checked_sub(1).and_then(|p| chars.get(p)) {
                let next = chars.get(i + 1).copied();
                let boundary = (prev.is_lowercase() && c.is_uppercase())
                    || (prev.is_alphabetic() && c.is_numeric())
                    || (prev.is_numeric() && c.is_alphabetic())
                    || (prev.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(char::is_lowercase));
                if boundary && !current.is_empty() {
                    parts.push(std::mem::take(&mut current));
                }
            }
            current.push(c);
        }
        if !current.is_empty() {
            parts.push(current);
        }
    }
    parts
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

    #[test]
    fn capitalised_and_capital_words_tokenize_like_their_lowercase() {
        let tokenizer = Tokenizer::new();
        for word in ["Reads", "PDF", "The", "A", "Files", "URLS"] {
            let lower = Tokenizer::same_tokens_as_lowercase(word).unwrap();
            assert_eq!(
                tokenizer.tokenize(word),
                tokenizer.tokenize(&lower),
                "{word}"
            );
        }
        for word in [
            "reads",
            "GitHub",
            "readFile",
            "Utf8",
            "Café",
            "",
            "HTTPServer",
        ] {
            assert_eq!(Tokenizer::same_tokens_as_lowercase(word), None, "{word}");
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
