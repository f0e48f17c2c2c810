//! Reading a file that may not be one: kernel sources, cache entries and toolchain files are
//! opened without blocking (a FIFO would block `open` until a writer comes), checked to be
//! regular files on the opened handle (so nothing can be swapped in between the check and the
//! read), and read up to a limit (`/dev/zero` never ends). And writing to a path a user names
//! (`kache compile -o`, `kache export`), which may not be a regular file either ([`output_path`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

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

/// How bytes meant for a path a user named are written, by what is at the path, as cc and cp
/// decide ([`output_path`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputPath {
    /// Nothing, or a regular file (symbolic links followed to it, a dangling one to the file it
    /// names): written to a temporary file beside it, renamed over it when complete, so the path
    /// holds the old bytes or the new ones, never a part.
    Replace(PathBuf),
    /// A FIFO, a character device (`/dev/null`, a terminal, `/dev/full`), or an open file of this
    /// process (`/dev/fd/N`, `/proc/self/fd/N`): opened for writing and written through, never
    /// created or replaced, so the node stays what it is; `truncate` for a regular file behind
    /// an open file's link.
    Through {
        /// What to open.
        path: PathBuf,
        /// Whether to truncate it when opened.
        truncate: bool,
    },
    /// This process's standard output (`/dev/stdout`).
    Stdout,
    /// This process's standard error (`/dev/stderr`).
    Stderr,
}

/// Why [`output_path`] refuses a path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot write {}: {why}", path.display())]
pub struct OutputPathError {
    /// The path refused (after following links).
    pub path: PathBuf,
    /// What it is, or what went wrong.
    pub why: String,
}

/// How many links are followed before a path is called a loop (Linux's own limit).
const MAX_LINKS: usize = 40;

/// How bytes meant for `path` are written ([`OutputPath`]); a directory, a socket, a block
/// device or a loop of links is refused, the message naming the path and what it is.
pub fn output_path(path: &Path) -> Result<OutputPath, OutputPathError> {
    match path.to_str() {
        Some("/dev/stdout") => return Ok(OutputPath::Stdout),
        Some("/dev/stderr") => return Ok(OutputPath::Stderr),
        _ => {}
    }
    if is_fd_path(path) {
        // An open file of this process: the system's link is not a path to rename over.
        let regular = std::fs::metadata(path).map(|m| m.is_file()).unwrap_or(false);
        return Ok(OutputPath::Through { path: path.to_path_buf(), truncate: regular });
    }
    let target = resolve(path)?;
    let meta = match std::fs::metadata(&target) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OutputPath::Replace(target)),
        Err(e) => return Err(OutputPathError { path: target, why: e.to_string() }),
    };
    let t = meta.file_type();
    if t.is_file() {
        return Ok(OutputPath::Replace(target));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() || t.is_char_device() {
            return Ok(OutputPath::Through { path: target, truncate: false });
        }
    }
    let why = if t.is_dir() {
        "it is a directory".to_string()
    } else {
        format!("it is a {}, not a file, a FIFO or a character device", kind_of(t))
    };
    Err(OutputPathError { path: target, why })
}

/// `path` with every symbolic link of its last component followed (its folders are left to the
/// system, which follows theirs as any open does).
fn resolve(path: &Path) -> Result<PathBuf, OutputPathError> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_fd_path(&p) {
            return Ok(p);
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to =
                    std::fs::read_link(&p).map_err(|e| OutputPathError { path: p.clone(), why: format!("cannot read the link: {e}") })?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(OutputPathError { path: path.to_path_buf(), why: "too many levels of symbolic links".into() })
}

/// Whether `p` names an open file descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/proc/PID/fd/N`),
/// whose link text (`pipe:[…]`, `socket:[…]`) is not a path.
fn is_fd_path(p: &Path) -> bool {
    let s = p.to_string_lossy();
    let parent_is_fd = p.parent().and_then(Path::file_name).is_some_and(|n| n == "fd");
    parent_is_fd && (s.starts_with("/dev/fd/") || s.starts_with("/proc/"))
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
