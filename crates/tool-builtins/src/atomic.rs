//! Atomic writes: the new contents go to a temporary file in the same directory, are synced to
//! disk, and replace the old file with one rename. A crash or kill at any point leaves either the
//! old file or the new one, never a mix.

use std::fs::{self, File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tempfile::NamedTempFile;

/// The mode a new file is created with before the umask applies, as `open(2)` callers such as
/// `fs::write` do; tempfile's own default (0600) would make every new file private.
const NEW_FILE_MODE: u32 = 0o666;

/// Writes `bytes` to `path` atomically, keeping the permissions of the file it replaces.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Like [`write_atomic`], with the writing done by `write`; when `write` fails, the temporary
/// file is removed and the original is untouched. Tests use this to fail a write midway.
pub(crate) fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let kept = fs::metadata(path).ok().map(|m| m.permissions());
    // Dropping the temporary file on any early return removes it, so a failed write leaves
    // nothing behind.
    let mut temp = tempfile::Builder::new()
        .permissions(Permissions::from_mode(NEW_FILE_MODE))
        .tempfile_in(dir)?;
    write(temp.as_file_mut())?;
    if let Some(permissions) = kept {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    persist(temp, path)?;
    // Sync the directory so the rename itself survives a crash.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Renames the temporary file over `path`; on failure the temporary file is dropped (removed).
fn persist(temp: NamedTempFile, path: &Path) -> io::Result<()> {
    temp.persist(path).map(drop).map_err(|err| err.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_contents_and_keeps_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o751);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_write_failing_midway_leaves_the_original_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.txt");
        fs::write(&path, "original contents").unwrap();
        let err = write_atomic_with(&path, |file| {
            file.write_all(b"half of the new")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read_to_string(&path).unwrap(), "original contents");
        // The temporary file is gone too.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_new_file_gets_the_usual_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.txt");
        fs::write(&plain, "x").unwrap();
        let atomic = dir.path().join("atomic.txt");
        write_atomic(&atomic, b"x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&atomic), mode(&plain));
    }
}
