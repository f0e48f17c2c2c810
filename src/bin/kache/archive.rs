//! `kache export` / `kache import`: every entry in one file, for CI cache steps.
//!
//! ```text
//! magic "KACHEARC" u16 version
//! repeated: u8 1, [32] key, u64 length, entry (with its envelope)
//! u8 0, [32] blake3 of everything before
//! ```
//! Import verifies the archive's checksum and every entry's envelope before storing it.

use std::io::{Read, Write};
use std::path::Path;

use kache::cache::{Key, envelope};

use super::{Failure, internal, open_store, progress, store_err, user};

const MAGIC: &[u8; 8] = b"KACHEARC";
const VERSION: u16 = 1;

pub fn export(file: &Path) -> Result<(), Failure> {
    let store = open_store()?;
    let entries: Vec<(Key, Vec<u8>)> = store.records().into_iter().filter_map(|r| Some((r.key, store.get(&r.key)?))).collect();
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    let pb = progress(entries.len() as u64, "exporting");
    let mut n = 0;
    for (k, b) in &entries {
        if envelope::decode(b, Some(k)).is_err() {
            continue;
        }
        out.push(1);
        out.extend_from_slice(&k.0);
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
        n += 1;
        pb.inc(1);
    }
    pb.finish_and_clear();
    out.push(0);
    let h = *blake3::hash(&out).as_bytes();
    out.extend_from_slice(&h);
    let tmp = file.with_extension("partial");
    let mut f = std::fs::File::create(&tmp).map_err(|e| user(format!("cannot write {}: {e}", tmp.display())))?;
    f.write_all(&out).and_then(|_| f.sync_all()).map_err(|e| internal(format!("{}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, file).map_err(|e| internal(format!("{}: {e}", file.display())))?;
    println!("exported {n} entries to {}", file.display());
    Ok(())
}

pub fn import(file: &Path) -> Result<(), Failure> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| user(format!("cannot read {}: {e}", file.display())))?;
    let bad = |m: &str| user(format!("{} is not a valid kache archive: {m}", file.display()));
    if bytes.len() < MAGIC.len() + 2 + 1 + 32 || &bytes[..8] != MAGIC {
        return Err(bad("bad magic"));
    }
    let (body, hash) = bytes.split_at(bytes.len() - 32);
    if blake3::hash(body).as_bytes() != hash {
        return Err(bad("checksum mismatch"));
    }
    let v = u16::from_le_bytes([body[8], body[9]]);
    if v != VERSION {
        return Err(bad(&format!("archive version {v}")));
    }
    let mut rest = &body[10..];
    let mut items = Vec::new();
    loop {
        let Some((&tag, r)) = rest.split_first() else { return Err(bad("truncated")) };
        rest = r;
        if tag == 0 {
            break;
        }
        if tag != 1 || rest.len() < 40 {
            return Err(bad("malformed record"));
        }
        let mut k = [0u8; 32];
        k.copy_from_slice(&rest[..32]);
        let len = u64::from_le_bytes(rest[32..40].try_into().map_err(|_| bad("length"))?) as usize;
        rest = &rest[40..];
        if rest.len() < len {
            return Err(bad("truncated entry"));
        }
        items.push((Key(k), rest[..len].to_vec()));
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        return Err(bad("trailing bytes"));
    }
    let store = open_store()?;
    let pb = progress(items.len() as u64, "importing");
    let (stored, skipped) = store
        .with(|db| {
            let (mut stored, mut skipped) = (0, 0);
            for (k, b) in &items {
                if envelope::decode(b, Some(k)).is_ok() {
                    store.put(db, k, b)?;
                    stored += 1;
                } else {
                    skipped += 1;
                }
                pb.inc(1);
            }
            Ok((stored, skipped))
        })
        .map_err(store_err)?;
    pb.finish_and_clear();
    println!(
        "imported {stored} entries from {}{}",
        file.display(),
        if skipped > 0 { format!(" ({skipped} did not verify and were skipped)") } else { String::new() }
    );
    Ok(())
}
