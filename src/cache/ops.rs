//! The cache-management operations behind `kache ls`, `show` and `verify`, with what they
//! report. (`gc`, `clear` and `stats --reset` are [`LocalStore`] methods; `export` and `import`
//! are in [`archive`](super::archive).) The `kache` command only parses arguments and renders
//! these.

use super::envelope::{self, ArtifactKind, EnvelopeError, Meta};
use super::key::Key;
use super::store::{LocalStore, Stray};

/// One entry that verifies, as `kache ls` lists it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listed {
    /// Its key (hex in JSON).
    #[serde(serialize_with = "key_hex")]
    pub key: Key,
    /// Kernel name.
    pub kernel: String,
    /// Payload kind.
    pub kind: ArtifactKind,
    /// Stored size in bytes.
    pub size: u64,
    /// When it was written (unix seconds).
    pub created: u64,
    /// Last access (unix seconds; see [`LocalStore::records_with_access`]).
    pub accessed: u64,
    /// How long its compile took.
    pub compile_ms: u32,
    /// Kernel signature, for display.
    pub signature: String,
}

fn key_hex<S: serde::Serializer>(k: &Key, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&k.hex())
}

/// Every entry of the store that verifies, by key.
pub fn list(store: &LocalStore) -> Vec<Listed> {
    store
        .records_with_access()
        .into_iter()
        .filter_map(|r| {
            let bytes = store.get(&r.key)?;
            let (m, _) = envelope::decode(&bytes, Some(&r.key)).ok()?;
            Some(Listed {
                key: r.key,
                kernel: m.kernel,
                kind: m.kind,
                size: r.size,
                created: m.created,
                accessed: r.accessed,
                compile_ms: m.compile_ms,
                signature: m.signature,
            })
        })
        .collect()
}

/// Why [`find`] found no entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FindError {
    /// The prefix is not hex digits.
    #[error("`{0}` is not a key (hex digits)")]
    NotAKey(String),
    /// No key starts with the prefix.
    #[error("no entry has a key starting with {0}")]
    NoMatch(String),
    /// More than one key starts with the prefix.
    #[error("{} entries have a key starting with {prefix}: {}{}; give more digits", candidates.len(), candidates.iter().take(8).map(|k| k.hex()).collect::<Vec<_>>().join(", "), if candidates.len() > 8 { ", ..." } else { "" })]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The keys that start with it.
        candidates: Vec<Key>,
    },
    /// The entry is there but does not verify.
    #[error("entry {0} does not verify: {1} (`kache verify` drops it)")]
    DoesNotVerify(Key, EnvelopeError),
}

/// `prefix` as [`find`] reads it: hex digits in lower case, or [`FindError::NotAKey`] (checked
/// before any store is opened).
pub fn find_key(prefix: &str) -> Result<String, FindError> {
    let p = prefix.trim().to_ascii_lowercase();
    if p.is_empty() || !p.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(FindError::NotAKey(prefix.to_string()));
    }
    Ok(p)
}

/// The one entry whose key starts with `prefix` (any case, surrounding whitespace ignored),
/// verified: its envelope fields and payload.
pub fn find(store: &LocalStore, prefix: &str) -> Result<(Meta, Vec<u8>), FindError> {
    let p = find_key(prefix)?;
    let matches: Vec<Key> = store.records().into_iter().map(|r| r.key).filter(|k| k.hex().starts_with(&p)).collect();
    let key = match matches.as_slice() {
        [] => return Err(FindError::NoMatch(prefix.to_string())),
        [only] => *only,
        _ => return Err(FindError::Ambiguous { prefix: prefix.to_string(), candidates: matches }),
    };
    // Removed since it was listed.
    let Some(bytes) = store.get(&key) else { return Err(FindError::NoMatch(prefix.to_string())) };
    match envelope::decode(&bytes, Some(&key)) {
        Ok((meta, payload)) => Ok((meta, payload.to_vec())),
        Err(e) => Err(FindError::DoesNotVerify(key, e)),
    }
}

/// What [`verify`] did.
#[derive(Clone, Debug, Default)]
pub struct Verified {
    /// Entries checked.
    pub checked: u64,
    /// Entries that did not verify, removed (and counted as `bad_entries`).
    pub dropped: Vec<Key>,
    /// Things where entries belong that are no entries (a folder, a FIFO, a link, a file where
    /// a shard folder belongs), removed, so that the kernels they stood for are cached again.
    pub strays: Vec<Stray>,
    /// Strays that could not be removed.
    pub strays_left: Vec<Stray>,
    /// What killed writers left (stale temporary files, old `db.broken-*` catalogues), removed.
    pub swept: usize,
}

/// Re-hashes every entry and drops the ones that do not verify; removes strays and sweeps what
/// killed writers left. `progress` is told (entries done, entries in all) as it goes.
pub fn verify(store: &LocalStore, progress: &mut dyn FnMut(u64, u64)) -> Verified {
    let records = store.records();
    let total = records.len() as u64;
    let mut dropped = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if store.get(&r.key).is_none_or(|b| envelope::decode(&b, Some(&r.key)).is_err()) {
            dropped.push(r.key);
        }
        progress(i as u64 + 1, total);
    }
    let (strays, strays_left) = store.strays().into_iter().partition(|s| store.remove_stray(s));
    let swept = store.sweep_temporaries();
    store.discard_bad(&dropped);
    Verified { checked: total, dropped, strays, strays_left, swept }
}
