//! Reading a file that may not be one: kernel sources, cache entries and toolchain files are
//! opened without blocking (a FIFO would block `open` until a writer comes), checked to be
//! regular files on the opened handle (so nothing can be swapped in between the check and the
//! read), and read up to a limit (`/dev/zero` never ends).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Why [`read_regular`] returned no bytes.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path cannot be opened or read.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The path is a directory, a FIFO, a device, a socket (or, where links are not followed, a
    /// symbolic link).
    #[error("not a regular file (a {0})")]
    NotRegular(&'static str),
    /// The file holds more than the limit.
    #[error("larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
}

/// What kind of thing a path is, in words.
pub fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symbolic link"
    } else if t.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Opens `path` for reading if it is a regular file: without blocking, and, unless `follow`,
/// without following a symbolic link in its last component.
pub fn open_regular(path: &Path, follow: bool) -> Result<File, ReadError> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
        o.custom_flags(libc::O_NONBLOCK | nofollow);
    }
    let f = match o.open(path) {
        Ok(f) => f,
        // O_NOFOLLOW on a symbolic link.
        #[cfg(unix)]
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => return Err(ReadError::NotRegular("symbolic link")),
        Err(e) => return Err(e.into()),
    };
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        return Err(ReadError::NotRegular(kind_of(t)));
    }
    Ok(f)
}

/// Reads the regular file `path` (see [`open_regular`]), refusing one of more than `limit`
/// bytes after reading at most one byte past it.
pub fn read_regular(path: &Path, limit: u64, follow: bool) -> Result<Vec<u8>, ReadError> {
    let f = open_regular(path, follow)?;
    read_limited(f, limit)
}

/// Reads `f` to its end, refusing more than `limit` bytes after reading at most one byte past
/// it.
pub fn read_limited(f: File, limit: u64) -> Result<Vec<u8>, ReadError> {
    let hint = f.metadata().map(|m| m.len().min(limit)).unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    f.take(limit.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_never_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"12345").unwrap();
        assert_eq!(read_regular(&f, 5, false).unwrap(), b"12345");
        assert!(matches!(read_regular(&f, 4, false), Err(ReadError::TooLarge { limit: 4 })));
        assert!(matches!(read_regular(dir.path(), 10, true), Err(ReadError::NotRegular("directory"))));
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            assert!(matches!(read_regular(&link, 10, false), Err(ReadError::NotRegular("symbolic link"))));
            assert_eq!(read_regular(&link, 10, true).unwrap(), b"12345");
            // A FIFO with no writer: refused at once, not waited on.
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert!(matches!(read_regular(&fifo, 10, true), Err(ReadError::NotRegular("FIFO"))));
            assert!(matches!(read_regular(Path::new("/dev/zero"), 10, true), Err(ReadError::NotRegular("character device"))));
        }
    }
}
