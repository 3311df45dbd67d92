//! `@path` in a prompt attaches that file: text as a block of its own, images as image blocks.
//!
//! A word is an attachment when it starts with `@` and names a file under the working
//! directory (or an absolute path); anything else that starts with `@` (a handle, a decorator)
//! stays plain text. Trailing punctuation is not part of the path.

use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::conversation::Block;

/// The largest text file attached whole; a longer one is cut with a note.
pub(crate) const MAX_TEXT_BYTES: usize = 256 * 1024;
/// The largest image attached (the providers' own limit is about 5 MB).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The blocks the `@path` words of `prompt` attach (after the prompt's own text), and a note
/// for the user about each one that could not be attached. Only files under `cwd` (symbolic
/// links resolved) that `denied` does not refuse are attached: a prompt may come from elsewhere
/// (`-p "$ISSUE_TEXT"`), so it must not send `~/.ssh` or a file the deny rules keep from the
/// model.
pub(crate) fn attach(
    prompt: &str,
    cwd: &Path,
    denied: &dyn Fn(&Path) -> bool,
) -> (Vec<Block>, Vec<String>) {
    let mut blocks = Vec::new();
    let mut notes = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        let name = name.trim_end_matches([',', '.', ';', ':', ')', '!', '?', '"', '\'']);
        if name.is_empty() {
            continue;
        }
        let path = cwd.join(name);
        if !path.is_file() || seen.contains(&path) {
            continue;
        }
        seen.push(path.clone());
        let inside = match (path.canonicalize(), cwd.canonicalize()) {
            (Ok(file), Ok(root)) => file.starts_with(root),
            _ => false,
        };
        if !inside {
            notes.push(format!(
                "@{name} was not attached: it is outside the working directory; ask for it to be read instead (read_file asks for permission)"
            ));
            continue;
        }
        if denied(&path) {
            notes.push(format!(
                "@{name} was not attached: the permission rules deny reading it"
            ));
            continue;
        }
        match block_for(&path, name) {
            Ok(block) => blocks.push(block),
            Err(note) => notes.push(note),
        }
    }
    (blocks, notes)
}

/// The image type of a file by its extension.
fn image_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

fn block_for(path: &Path, name: &str) -> Result<Block, String> {
    if let Some(media_type) = image_type(path) {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        if size > MAX_IMAGE_BYTES {
            return Err(format!(
                "@{name} was not attached: the image is {size} bytes, more than the {MAX_IMAGE_BYTES} a request may carry"
            ));
        }
        let bytes = std::fs::read(path).map_err(|err| format!("@{name}: {err}"))?;
        return Ok(Block::Image {
            media_type: media_type.to_owned(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        });
    }
    let bytes = std::fs::read(path).map_err(|err| format!("@{name}: {err}"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(format!(
            "@{name} was not attached: it is not text (only text files and PNG, JPEG, GIF or WebP images can be)"
        ));
    };
    let end = text.floor_char_boundary(MAX_TEXT_BYTES);
    let mut body = text[..end].to_owned();
    if end < text.len() {
        body.push_str(&format!(
            "\n[cut: the file has {} more bytes; read it with read_file for the rest]",
            text.len() - end
        ));
    }
    Ok(Block::Text {
        text: format!("<attached-file path=\"{name}\">\n{body}\n</attached-file>"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_words_that_name_files_attach_them_and_others_stay_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.md"), "# Notes\n").unwrap();
        std::fs::write(dir.path().join("shot.png"), [0x89, b'P', b'N', b'G']).unwrap();
        std::fs::write(dir.path().join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
        let (blocks, notes) = attach(
            "see @notes.md, @shot.png and @blob.bin; ask @someone about @notes.md",
            dir.path(),
            &|_| false,
        );
        assert_eq!(blocks.len(), 2);
        assert!(
            matches!(&blocks[0], Block::Text { text } if text.contains("<attached-file path=\"notes.md\">\n# Notes\n"))
        );
        assert!(
            matches!(&blocks[1], Block::Image { media_type, data } if media_type == "image/png" && data == "iVBORw==")
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("@blob.bin was not attached: it is not text"));
    }

    #[test]
    fn files_outside_the_folder_or_denied_are_not_attached() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "secret\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "TOKEN=1\n").unwrap();
        std::fs::write(dir.path().join("ok.txt"), "fine\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("id_rsa"), dir.path().join("link")).unwrap();
        let key = outside.path().join("id_rsa");
        let prompt = format!("@{} @link @.env @ok.txt", key.display());
        let (blocks, notes) = attach(&prompt, dir.path(), &|path| path.ends_with(".env"));
        assert_eq!(blocks.len(), 1, "{notes:?}");
        assert!(matches!(&blocks[0], Block::Text { text } if text.contains("fine")));
        assert!(!format!("{blocks:?}").contains("secret"));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("@.env was not attached: the permission rules deny"))
        );
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("outside the working directory"))
                .count(),
            if cfg!(unix) { 2 } else { 1 },
            "{notes:?}"
        );
    }
}
