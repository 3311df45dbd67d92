//! Stems the English word list in `data/` with rust-stemmers, so that the tokenizer can look up
//! the stems of common words instead of running the stemmer (see `src/stem_table.rs`).

use std::collections::HashSet;
use std::error::Error;
use std::path::Path;
use std::{env, fs};

use rust_stemmers::{Algorithm, Stemmer};

#[path = "src/stem_table_format.rs"]
mod format;

const WORDS: &str = "data/english-words.txt";

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed={WORDS}");
    println!("cargo::rerun-if-changed=src/stem_table_format.rs");
    let words = fs::read_to_string(WORDS).map_err(|e| format!("cannot read {WORDS}: {e}"))?;
    let stemmer = Stemmer::create(Algorithm::English);
    let mut suffixes: Vec<String> = vec![String::new()];
    let mut buckets: Vec<Vec<u8>> = vec![Vec::new(); 1 << format::BUCKET_BITS];
    let mut seen = HashSet::new();
    // Every stop word is in the table, flagged, so that a word the table lacks is no stop word.
    let listed = words
        .lines()
        .enumerate()
        .map(|(line, word)| (Some(line + 1), word))
        .chain(format::STOP_WORDS.iter().map(|word| (None, *word)));
    for (line, word) in listed {
        let source = || match line {
            Some(line) => format!("{WORDS}:{line}"),
            None => "a stop word".to_owned(),
        };
        assert!(
            !word.is_empty() && word.len() <= 127 && word.bytes().all(|b| b.is_ascii_lowercase()),
            "{}: {word:?} is not 1 to 127 lowercase ASCII letters",
            source()
        );
        let stop = format::STOP_WORDS.contains(&word);
        if !seen.insert(word) {
            // A stop word is in the list too: its record is already there, flagged.
            assert!(stop, "{}: {word:?} is listed twice", source());
            continue;
        }
        let stem = stemmer.stem(word);
        let kept = word
            .bytes()
            .zip(stem.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let suffix = &stem[kept..];
        let index = match suffixes.iter().position(|s| s == suffix) {
            Some(i) => i,
            None => {
                suffixes.push(suffix.to_owned());
                suffixes.len() - 1
            }
        };
        let record = &mut buckets[format::bucket(word.as_bytes())];
        record.push(word.len() as u8);
        let cut = (word.len() - kept) as u8;
        record.push(if stop { cut | format::STOP } else { cut });
        record.push(u8::try_from(index).map_err(|_| "more than 256 distinct stem endings")?);
        record.extend_from_slice(word.as_bytes());
    }
    let mut starts = Vec::with_capacity((buckets.len() + 1) * 4);
    let mut records = Vec::new();
    for bucket in &buckets {
        starts.extend_from_slice(&(records.len() as u32).to_le_bytes());
        records.extend_from_slice(bucket);
    }
    starts.extend_from_slice(&(records.len() as u32).to_le_bytes());
    let out = env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR for build scripts")?;
    let out = Path::new(&out);
    fs::write(out.join("stem_starts.bin"), starts)?;
    fs::write(out.join("stem_records.bin"), records)?;
    let suffixes: Vec<String> = suffixes.iter().map(|s| format!("{s:?}")).collect();
    fs::write(
        out.join("stem_suffixes.rs"),
        format!(
            "/// What stems end with after the word's cut.\npub const SUFFIXES: [&str; {}] = [{}];\n/// Words in the table.\n#[cfg(test)]\npub const WORDS: usize = {};\n",
            suffixes.len(),
            suffixes.join(", "),
            seen.len()
        ),
    )?;
    Ok(())
}
