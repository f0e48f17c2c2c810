//! Writing an output file (`kache compile -o PATH`) as cc and cp do, whatever is at PATH:
//!
//! - nothing, or a regular file: written to a temporary file beside it and renamed over it, so
//!   the path holds the old bytes or the new ones, never a part (a replaced file keeps its
//!   permissions);
//! - a symbolic link: followed (a chain of them too) to its target, which is then written by
//!   these rules; a link whose target does not exist creates that target;
//! - a FIFO or a character device (`/dev/null`, a terminal, `/dev/full`): written through, opened
//!   without creating or replacing anything, so the node stays what it is; `/dev/stdout` and
//!   `/dev/stderr` are this process's streams;
//! - a directory, a socket or a block device: refused, with what it is.
//!
//! Any failure (a full device among them) is an error and leaves nothing behind: no temporary
//! file, no half-written regular file.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use kache::cache::atomic;

/// Why an output could not be written (its message names the path).
pub struct OutputError(pub String);

/// How many links are followed before the path is called a loop (Linux's own limit).
const MAX_LINKS: usize = 40;

/// What [`write`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Written {
    /// A regular file was made or replaced.
    File,
    /// The bytes went through a stream, a FIFO or a device (nothing to tell on stdout, which
    /// may be where they went).
    Through,
}

/// Writes `bytes` to `path` by the rules above.
pub fn write(path: &Path, bytes: &[u8]) -> Result<Written, OutputError> {
    let fail = |p: &Path, e: io::Error| OutputError(format!("cannot write {}: {e}", p.display()));
    let through = |r: io::Result<()>| r.map(|()| Written::Through).map_err(|e| fail(path, e));
    match path.to_str() {
        Some("/dev/stdout") => return through(write_stream(&mut io::stdout().lock(), bytes)),
        Some("/dev/stderr") => return through(write_stream(&mut io::stderr().lock(), bytes)),
        _ => {}
    }
    if is_fd_path(path) {
        // An open file of this process (`/dev/fd/3`, `/proc/self/fd/1`): the system's link is
        // not a path to rename over; written through, a regular file truncated first.
        let regular = std::fs::metadata(path).map(|m| m.is_file()).unwrap_or(false);
        return through(write_through(path, bytes, regular));
    }
    let target = resolve(path)?;
    let meta = match std::fs::metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(&target, e)),
    };
    let Some(meta) = meta else {
        return atomic::write_file(&target, bytes).map(|()| Written::File).map_err(|e| fail(&target, e));
    };
    let ft = meta.file_type();
    if ft.is_file() {
        return replace(&target, bytes, &meta).map(|()| Written::File).map_err(|e| fail(&target, e));
    }
    if ft.is_dir() {
        return Err(OutputError(format!(
            "cannot write {}: it is a directory (to write each kernel into it, end the path with `/`)",
            target.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() || ft.is_char_device() {
            return write_through(&target, bytes, false).map(|()| Written::Through).map_err(|e| fail(&target, e));
        }
        let what = if ft.is_socket() {
            "a socket"
        } else if ft.is_block_device() {
            "a block device"
        } else {
            "not a file"
        };
        return Err(OutputError(format!("cannot write {}: it is {what}, not a file, a FIFO or a character device", target.display())));
    }
    #[allow(unreachable_code)]
    Err(OutputError(format!("cannot write {}: not a regular file", target.display())))
}

/// `path` with every symbolic link of its last component followed (its folders are left to
/// the system, which follows theirs as any open does).
fn resolve(path: &Path) -> Result<PathBuf, OutputError> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_fd_path(&p) {
            return Ok(p);
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| OutputError(format!("cannot read the link {}: {e}", p.display())))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(OutputError(format!("cannot write {}: too many levels of symbolic links", path.display())))
}

/// Whether `p` names an open file descriptor (`/dev/fd/N`, `/proc/self/fd/N`, `/proc/PID/fd/N`),
/// whose link text (`pipe:[…]`, `socket:[…]`) is not a path.
fn is_fd_path(p: &Path) -> bool {
    let s = p.to_string_lossy();
    let parent_is_fd = p.parent().and_then(Path::file_name).is_some_and(|n| n == "fd");
    parent_is_fd && (s.starts_with("/dev/fd/") || s.starts_with("/proc/"))
}

/// Replaces the regular file at `path` atomically, keeping its permissions.
fn replace(path: &Path, bytes: &[u8], was: &std::fs::Metadata) -> io::Result<()> {
    let mut tmp = atomic::temp_for(path)?;
    tmp.write_all(bytes)?;
    tmp.as_file().set_permissions(was.permissions())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes into an existing FIFO, character device or open file: opened for writing only (never
/// created; truncated only where asked), every byte written, then flushed.
fn write_through(path: &Path, bytes: &[u8], truncate: bool) -> io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(truncate).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

fn write_stream(w: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}
