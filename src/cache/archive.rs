//! Archives: every entry of a store in one file, for CI cache steps (`kache export` and
//! `kache import`). Streamed both ways, one entry in memory at a time.
//!
//! ```text
//! magic "KACHEARC" u16 version (2; 1 is read too: unsigned, no flags byte)
//! u8 flags: 1 when signed
//! repeated: u8 1, [32] key, u64 length, entry (with its envelope), [32] MAC (when signed)
//! u8 0, [32] blake3 of everything before
//! ```
//! Export writes only entries that verify, to a temporary file renamed into place when
//! complete. Import checks the whole archive (checksum, version, framing) before storing
//! anything, so a damaged archive is refused whole, and stores only entries that verify (one
//! longer than any entry can be is skipped without being read, whatever length it claims).
//!
//! The checksum and the envelopes' hashes detect damage, not tampering: whoever can edit an
//! archive can recompute them. A signed archive carries each entry's keyed MAC ([`EntryMac`],
//! the remote tier's); an import that asks for signatures refuses an unsigned archive and every
//! entry whose MAC fails.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::atomic;
use super::envelope;
use super::key::Key;
use super::mac::EntryMac;
use super::store::{LocalStore, MAX_ENTRY_FILE, StoreError};
use crate::files::OutputPath;

const MAGIC: &[u8; 8] = b"KACHEARC";
const VERSION: u16 = 2;
/// Magic and version.
const HEAD: u64 = 10;
/// The flag of a signed archive.
const SIGNED: u8 = 1;
/// The end marker and the checksum.
const TAIL: u64 = 1 + 32;

/// Why an export or import did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive cannot be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The archive.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The archive cannot be created where asked.
    #[error("cannot write {}: {source}", path.display())]
    Create {
        /// The archive.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Writing the archive failed part way (nothing is left at its path).
    #[error("{}: {source}", path.display())]
    Write {
        /// The archive.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Not an archive export wrote, or damaged.
    #[error("{} is not a valid kache archive: {why}", path.display())]
    Invalid {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Signatures were asked for and the archive has none.
    #[error("{} is not signed (export it with --key), and signatures were asked for", path.display())]
    Unsigned {
        /// The archive.
        path: PathBuf,
    },
    /// The store could not take the entries.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ArchiveError {
    /// Whether the user can fix it (a path, a file, a full disk or device), as opposed to a
    /// failure of the store.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            ArchiveError::Read { .. }
                | ArchiveError::Create { .. }
                | ArchiveError::Write { .. }
                | ArchiveError::Invalid { .. }
                | ArchiveError::Unsigned { .. }
        )
    }
}

/// Writes every entry of `store` that verifies to the archive `file`, unsigned; returns how
/// many. `progress` is told (entries done, entries in all) as it goes.
pub fn export(store: &LocalStore, file: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<u64, ArchiveError> {
    export_with(store, file, None, progress)
}

/// [`export`], signing every entry with `signer` when given. What is at `file` decides how the
/// archive is written ([`files::output_path`](crate::files::output_path), as `kache compile -o`):
/// nothing or a regular file (links followed to it) gets a temporary file beside it, renamed
/// over it when complete; a FIFO, a character device or this process's standard output is
/// written through and stays what it is; a directory or a socket is refused.
pub fn export_with(
    store: &LocalStore,
    file: &Path,
    signer: Option<&EntryMac>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, ArchiveError> {
    let failed = |source| ArchiveError::Write { path: file.to_path_buf(), source };
    let target = crate::files::output_path(file).map_err(|e| ArchiveError::Create { path: e.path, source: io::Error::other(e.why) })?;
    let through = |path: &Path, truncate: bool| {
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(truncate)
            .open(path)
            .map_err(|source| ArchiveError::Create { path: file.to_path_buf(), source })
    };
    match target {
        OutputPath::Replace(target) => {
            let tmp = atomic::temp_for(&target).map_err(|source| ArchiveError::Create { path: file.to_path_buf(), source })?;
            let n = write_archive(store, tmp.as_file(), signer, progress).map_err(failed)?;
            tmp.as_file().sync_all().map_err(failed)?;
            tmp.persist(&target).map_err(|e| failed(e.error))?;
            Ok(n)
        }
        OutputPath::Through { path, truncate } => write_archive(store, &through(&path, truncate)?, signer, progress).map_err(failed),
        OutputPath::Stdout => write_archive(store, io::stdout().lock(), signer, progress).map_err(failed),
        OutputPath::Stderr => write_archive(store, io::stderr().lock(), signer, progress).map_err(failed),
    }
}

/// Writes every entry of `store` that verifies to `out` as an archive (see the module's
/// documentation), flushed; returns how many.
fn write_archive(store: &LocalStore, out: impl Write, signer: Option<&EntryMac>, progress: &mut dyn FnMut(u64, u64)) -> io::Result<u64> {
    let records = store.records();
    let total = records.len() as u64;
    let mut out = Hashed { inner: BufWriter::new(out), hash: blake3::Hasher::new() };
    let mut n = 0;
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&[if signer.is_some() { SIGNED } else { 0 }])?;
    for (i, r) in records.iter().enumerate() {
        progress(i as u64 + 1, total);
        let Some(b) = store.get(&r.key) else { continue };
        if envelope::decode(&b, Some(&r.key)).is_err() {
            continue;
        }
        out.write_all(&[1])?;
        out.write_all(&r.key.0)?;
        out.write_all(&(b.len() as u64).to_le_bytes())?;
        out.write_all(&b)?;
        if let Some(m) = signer {
            out.write_all(&m.mac(&r.key, &b))?;
        }
        n += 1;
    }
    out.write_all(&[0])?;
    let sum = *out.hash.finalize().as_bytes();
    out.inner.write_all(&sum)?;
    out.inner.flush()?;
    Ok(n)
}

/// A writer that hashes what it writes.
struct Hashed<W> {
    inner: W,
    hash: blake3::Hasher,
}

impl<W: Write> Write for Hashed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What [`import`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Entries stored.
    pub stored: u64,
    /// Entries that did not verify, left out.
    pub skipped: u64,
    /// Entries whose MAC failed (signatures asked for), refused.
    pub rejected: u64,
}

/// One entry of an archive: its key, and where its bytes are.
struct Item {
    key: Key,
    at: u64,
    len: u64,
    mac: Option<[u8; 32]>,
}

/// Stores the entries of the archive `file` that verify into `store`, after checking the whole
/// archive (signatures, if any, are not checked). `progress` is told (entries done, entries in
/// all) as it goes.
pub fn import(store: &LocalStore, file: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Imported, ArchiveError> {
    import_with(store, file, None, progress)
}

/// [`import`]; with `verifier`, the archive must be signed, and an entry whose MAC fails is
/// refused ([`Imported::rejected`]).
pub fn import_with(
    store: &LocalStore,
    file: &Path,
    verifier: Option<&EntryMac>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Imported, ArchiveError> {
    let read = |source| ArchiveError::Read { path: file.to_path_buf(), source };
    let bad = |why: &str| ArchiveError::Invalid { path: file.to_path_buf(), why: why.to_string() };
    let f = crate::files::open_regular(file, true).map_err(|e| match e {
        crate::files::ReadError::Io(e) => read(e),
        e => bad(&e.to_string()),
    })?;
    let mut f = f;
    let len = f.metadata().map_err(read)?.len();
    let mut magic = [0u8; 10];
    if len < HEAD + TAIL || f.read_exact(&mut magic).is_err() || &magic[..8] != MAGIC {
        return Err(bad("bad magic"));
    }
    // The checksum first, over everything before it, so that damage anywhere is reported as
    // damage and not as whatever a damaged length happens to point at.
    f.rewind().map_err(read)?;
    let mut hash = blake3::Hasher::new();
    io::copy(&mut (&mut f).take(len - 32), &mut hash).map_err(read)?;
    let mut sum = [0u8; 32];
    f.read_exact(&mut sum).map_err(read)?;
    if *hash.finalize().as_bytes() != sum {
        return Err(bad("checksum mismatch"));
    }
    let v = u16::from_le_bytes([magic[8], magic[9]]);
    let signed = match v {
        1 => false,
        2 => {
            f.seek(SeekFrom::Start(HEAD)).map_err(read)?;
            let mut flags = [0u8; 1];
            f.read_exact(&mut flags).map_err(read)?;
            if flags[0] & !SIGNED != 0 {
                return Err(bad(&format!("unknown flags {:#x}", flags[0])));
            }
            flags[0] & SIGNED != 0
        }
        v => return Err(bad(&format!("archive version {v}"))),
    };
    if verifier.is_some() && !signed {
        return Err(ArchiveError::Unsigned { path: file.to_path_buf() });
    }
    let start = if v == 1 { HEAD } else { HEAD + 1 };
    let items = index(&mut f, start, len - 32, signed).map_err(|e| match e {
        Framing::Io(e) => read(e),
        Framing::Bad(why) => bad(why),
    })?;
    let total = items.len() as u64;
    let done = store.batch(|batch| -> Result<Imported, ArchiveError> {
        let mut done = Imported::default();
        for (i, item) in items.iter().enumerate() {
            // Longer than any entry can be: it cannot verify, and is not read into memory.
            if item.len > MAX_ENTRY_FILE {
                done.skipped += 1;
                progress(i as u64 + 1, total);
                continue;
            }
            f.seek(SeekFrom::Start(item.at)).map_err(read)?;
            let mut b = Vec::new();
            (&mut f).take(item.len).read_to_end(&mut b).map_err(read)?;
            let authentic = match (verifier, &item.mac) {
                (Some(m), Some(mac)) => m.verify(&item.key, &b, mac),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !authentic {
                done.rejected += 1;
            } else if b.len() as u64 == item.len && envelope::decode(&b, Some(&item.key)).is_ok() {
                batch.put(&item.key, &b)?;
                done.stored += 1;
            } else {
                done.skipped += 1;
            }
            progress(i as u64 + 1, total);
        }
        Ok(done)
    })??;
    Ok(done)
}

enum Framing {
    Io(io::Error),
    Bad(&'static str),
}

/// Reads the records from `start` to the checksum (which starts at `end`), without their
/// entries (with their MACs when `signed`).
fn index(f: &mut File, start: u64, end: u64, signed: bool) -> Result<Vec<Item>, Framing> {
    f.seek(SeekFrom::Start(start)).map_err(Framing::Io)?;
    let mut r = BufReader::new(f);
    let mut at = start;
    let mut items = Vec::new();
    let mac_len = if signed { 32 } else { 0 };
    loop {
        if at >= end {
            return Err(Framing::Bad("truncated"));
        }
        let mut tag = [0u8; 1];
        r.read_exact(&mut tag).map_err(Framing::Io)?;
        at += 1;
        if tag[0] == 0 {
            break;
        }
        if tag[0] != 1 || end - at < 40 {
            return Err(Framing::Bad("malformed record"));
        }
        let mut head = [0u8; 40];
        r.read_exact(&mut head).map_err(Framing::Io)?;
        at += 40;
        let mut key = [0u8; 32];
        key.copy_from_slice(&head[..32]);
        let mut n = [0u8; 8];
        n.copy_from_slice(&head[32..]);
        let len = u64::from_le_bytes(n);
        if (end - at).checked_sub(mac_len).is_none_or(|room| room < len) {
            return Err(Framing::Bad("truncated entry"));
        }
        let entry_at = at;
        r.seek_relative(len as i64).map_err(Framing::Io)?;
        at += len;
        let mac = if signed {
            let mut m = [0u8; 32];
            r.read_exact(&mut m).map_err(Framing::Io)?;
            at += 32;
            Some(m)
        } else {
            None
        };
        items.push(Item { key: Key(key), at: entry_at, len, mac });
    }
    if at != end {
        return Err(Framing::Bad("trailing bytes"));
    }
    Ok(items)
}
