//! Atomic file writes, for every file the cache and the `kache` command write: the content goes
//! to a temporary file in the destination's folder, which is renamed over the destination only
//! once complete ([`tempfile::NamedTempFile::persist`]). A reader never sees a partial file, and
//! a write that fails removes its temporary file and leaves the destination as it was.

use std::io::{self, Write};
use std::path::Path;

use tempfile::NamedTempFile;

/// How temporary files start: hidden, and recognisable to
/// [`LocalStore::sweep_temporaries`](super::LocalStore::sweep_temporaries) and to the merge of
/// parked bookkeeping, which both skip or sweep them.
pub const TEMP_PREFIX: &str = ".tmp-";

/// A temporary file for `path`, in its folder, to be [`persist`](NamedTempFile::persist)ed onto
/// it. Created with the permissions an ordinary new file gets (not tempfile's owner-only ones),
/// since it becomes an ordinary file.
pub fn temp_for(path: &Path) -> io::Result<NamedTempFile> {
    temp_with_mode(path, 0o666)
}

/// A temporary file for `path` created with permissions `mode` (less the umask).
fn temp_with_mode(path: &Path, mode: u32) -> io::Result<NamedTempFile> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut b = tempfile::Builder::new();
    b.prefix(TEMP_PREFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Like `File::create`: 0o666 less the umask.
        b.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    b.tempfile_in(dir)
}

/// Writes `bytes` to `path` atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    persist(temp_for(path)?, path, bytes)
}

/// Writes `bytes` to `path` atomically, as a file only its owner may write (`rw-r--r--` at
/// most, whatever the umask): a file of the cache, which must not become writable by others
/// (see `cache::trust`).
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    persist(temp_with_mode(path, 0o644)?, path, bytes)
}

fn persist(mut tmp: NamedTempFile, path: &Path, bytes: &[u8]) -> io::Result<()> {
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        write_file(&p, b"first").unwrap();
        write_file(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        // A failed write (a folder that does not exist) leaves nothing behind.
        assert!(write_file(&dir.path().join("missing/out"), b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, ["out"]);
    }

    #[cfg(unix)]
    #[test]
    fn files_get_ordinary_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write_file(&a, b"x").unwrap();
        std::fs::write(&b, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), mode(&b));
    }
}
