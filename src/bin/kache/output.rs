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
use std::path::Path;

use kache::cache::atomic;
use kache::files::{self, OutputPath};

/// Why an output could not be written (its message names the path).
pub struct OutputError(pub String);

/// What [`write`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Written {
    /// A regular file was made or replaced.
    File,
    /// The bytes went through a stream, a FIFO or a device (nothing to tell on stdout, which
    /// may be where they went).
    Through,
}

/// Writes `bytes` to `path` by the rules above (the library's [`files::output_path`]).
pub fn write(path: &Path, bytes: &[u8]) -> Result<Written, OutputError> {
    let fail = |p: &Path, e: io::Error| OutputError(format!("cannot write {}: {e}", p.display()));
    let through = |p: &Path, r: io::Result<()>| r.map(|()| Written::Through).map_err(|e| fail(p, e));
    match files::output_path(path) {
        Ok(OutputPath::Stdout) => through(path, write_stream(&mut io::stdout().lock(), bytes)),
        Ok(OutputPath::Stderr) => through(path, write_stream(&mut io::stderr().lock(), bytes)),
        Ok(OutputPath::Through { path: p, truncate }) => through(&p, write_through(&p, bytes, truncate)),
        Ok(OutputPath::Replace(target)) => {
            let written = match std::fs::metadata(&target) {
                Ok(was) => replace(&target, bytes, &was),
                Err(_) => atomic::write_file(&target, bytes),
            };
            written.map(|()| Written::File).map_err(|e| fail(&target, e))
        }
        Err(e) if path.is_dir() => Err(OutputError(format!("{e} (to write each kernel into it, end the path with `/`)"))),
        Err(e) => Err(OutputError(e.to_string())),
    }
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
