//! Which queries a model can read: a model trained on English text turns Chinese, Japanese or
//! Korean into characters it has barely seen, and its vector says little about the query.

use std::path::Path;

/// Whether `c` is a Han, kana or Hangul character.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF       // Hiragana, Katakana
        | 0x3400..=0x4DBF     // CJK Extension A
        | 0x4E00..=0x9FFF     // CJK Unified Ideographs
        | 0xF900..=0xFAFF     // CJK Compatibility Ideographs
        | 0x1100..=0x11FF     // Hangul Jamo
        | 0x3130..=0x318F     // Hangul Compatibility Jamo
        | 0xAC00..=0xD7AF     // Hangul Syllables
        | 0x20000..=0x2FA1F) // CJK Extensions B to F, Compatibility Supplement
}

/// Whether `text` has at least as many CJK characters as other words (a CJK character
/// carries about a word's meaning): a Chinese request that names files and settings in English
/// still counts, an English one that quotes a Chinese word does not.
pub(crate) fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut words, mut in_word) = (0usize, 0usize, false);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
            in_word = false;
        } else if c.is_alphanumeric() {
            words += usize::from(!in_word);
            in_word = true;
        } else {
            in_word = false;
        }
    }
    cjk > 0 && cjk >= words
}

/// Whether the model card (`README.md`, its YAML front matter) lists a language written in CJK
/// characters, or `multilingual`, among the model's languages.
pub(crate) fn card_reads_cjk(folder: &Path) -> bool {
    let Ok(card) = std::fs::read_to_string(folder.join("README.md")) else {
        return false;
    };
    let mut lines = card.lines();
    if lines.next().map(str::trim) != Some("---") {
        return false;
    }
    let mut in_languages = false;
    for line in lines.take_while(|l| l.trim() != "---") {
        let trimmed = line.trim();
        let value = if let Some(rest) = trimmed.strip_prefix("language:") {
            in_languages = true;
            rest.trim()
        } else if in_languages && trimmed.starts_with('-') {
            trimmed.trim_start_matches('-').trim()
        } else {
            in_languages = false;
            continue;
        };
        let reads = value
            .trim_matches(['[', ']'])
            .split(',')
            .map(|l| l.trim().trim_matches(['"', '\'']).to_ascii_lowercase())
            .any(|l| {
                l == "multilingual"
                    || ["zh", "ja", "ko"]
                        .iter()
                        .any(|c| l == *c || l.starts_with(&format!("{c}-")))
            });
        if reads {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_requests_are_cjk_even_with_an_english_name_in_them() {
        assert!(mostly_cjk("帮我查一下北京明天的天气"));
        assert!(mostly_cjk("用 GitHub 创建一个问题"));
        assert!(mostly_cjk("ファイルを読む"));
        assert!(!mostly_cjk("translate 你好 into English for the customer"));
        // ultratool-zh: long English names and settings inside a Chinese request.
        assert!(mostly_cjk(
            "我需要修改服务器上的配置文件config.json，将数据库连接字符串改为\"db_connection\": \"Server:localhost;Database:mydb;User:myuser;Password:mypass\"。然后删除一个叫做old_config_bak.json的备份文件。"
        ));
        assert!(!mostly_cjk("read a file"));
        assert!(!mostly_cjk("???"));
    }

    #[test]
    fn the_card_says_which_languages() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let check = |card: &str| -> std::io::Result<bool> {
            std::fs::write(dir.path().join("README.md"), card)?;
            Ok(card_reads_cjk(dir.path()))
        };
        assert!(!check(
            "---\nlanguage: en\nlicense: apache-2.0\n---\n# zh\n"
        )?);
        assert!(check("---\nlanguage:\n- multilingual\n- af\n---\n")?);
        assert!(check(
            "---\nlanguage:\n  - en\n  - zh\nlicense: mit\n---\n"
        )?);
        assert!(check("---\nlanguage: [en, zh-CN]\n---\n")?);
        assert!(!check("no front matter\nlanguage: zh\n")?);
        Ok(())
    }
}
