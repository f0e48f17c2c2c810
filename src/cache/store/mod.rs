//! The local store, under `$KACHE_DIR/v<schema>/`.
//!
//! Entries are content-addressed files, `objects/<2 hex>/<64 hex>`, each a self-verifying
//! envelope, written atomically (`cache::atomic`). A lookup reads one file: no lock, no waiting
//! for another process, the same cost with ten entries or ten thousand. The catalogue around the
//! entries (`catalogue.rs`, private: last-access stamps for eviction, the statistics, the
//! approximate size, the store's format version) is opened only for bookkeeping and for the
//! operations here that need it, which wait for another process's lock up to the lock timeout
//! and then report [`StoreError::Busy`].
//!
//! Writers do not wait at all: an entry's file needs no catalogue, so a writer that finds the
//! catalogue open elsewhere writes its file and parks the bookkeeping (`parked.rs`) for the next
//! process that opens the catalogue. A catalogue that cannot be opened is moved aside and
//! recreated; an entry that does not verify is a miss and is rewritten. Nothing here ever fails
//! a compile.

mod catalogue;
mod parked;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use self::catalogue::Catalogue;
use super::atomic::{self, TEMP_PREFIX};
use super::counters::{Counter, Counts};
use super::key::{KEY_SCHEMA, Key};

/// Version of the store's layout (objects folder and catalogue trees).
pub const STORE_FORMAT: u32 = 2;

/// Why a store operation did not happen.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Another process held the catalogue past the lock timeout.
    #[error("the cache store is busy (locked by another process)")]
    Busy,
    /// The store failed; the caller goes on without it.
    #[error("cache store error: {0}")]
    Failed(String),
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> StoreError {
        StoreError::Failed(format!("IO error: {e}"))
    }
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The local store: entry files and their catalogue.
#[derive(Debug)]
pub struct LocalStore {
    base: PathBuf,
    db_path: PathBuf,
    objects: PathBuf,
    lock_timeout: Duration,
    max_size: u64,
}

/// One entry's record for listing and eviction.
#[derive(Clone, Debug)]
pub struct Record {
    /// Its key.
    pub key: Key,
    /// Stored size in bytes.
    pub size: u64,
    /// Last access (unix seconds, updated lazily; the file's time when never recorded).
    pub accessed: u64,
}

/// Stores entries with the catalogue open: what [`LocalStore::batch`] hands its work.
pub struct Batch<'a> {
    store: &'a LocalStore,
    catalogue: &'a Catalogue,
}

impl Batch<'_> {
    /// Stores an entry (its file, its access stamp and size in the catalogue) and evicts least
    /// recently used entries past the size limit.
    pub fn put(&mut self, key: &Key, bytes: &[u8]) -> Result<(), StoreError> {
        self.store.put_in(self.catalogue, key, bytes)
    }

    /// Removes an entry; whether there was one.
    pub fn remove(&mut self, key: &Key) -> Result<bool, StoreError> {
        self.store.remove_in(self.catalogue, key)
    }
}

impl LocalStore {
    /// The store under `base` (the cache folder). Creates the folders and the `CACHEDIR.TAG`.
    pub fn new(base: &Path, lock_timeout: Duration, max_size: u64) -> Result<LocalStore, StoreError> {
        let versioned = base.join(format!("v{KEY_SCHEMA}"));
        let objects = versioned.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| StoreError::Failed(format!("{}: {e}", objects.display())))?;
        let tag = base.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = atomic::write_file(
                &tag,
                b"Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by kache.\n# For information about cache directory tags see https://bford.info/cachedir/\n",
            );
        }
        Ok(LocalStore { base: base.to_path_buf(), db_path: versioned.join("db"), objects, lock_timeout, max_size })
    }

    /// The cache folder.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The catalogue's folder.
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// The entries' folder.
    pub fn objects_dir(&self) -> &Path {
        &self.objects
    }

    /// The size limit.
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    fn object_path(&self, key: &Key) -> PathBuf {
        let h = key.hex();
        self.objects.join(&h[..2]).join(h)
    }

    // --- entries: files, no lock ---

    /// Reads the entry under `key` (unverified; the caller verifies the envelope).
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        std::fs::read(self.object_path(key)).ok()
    }

    /// Writes an entry atomically; returns the size of the entry it replaced, if any.
    pub fn write_object(&self, key: &Key, bytes: &[u8]) -> std::io::Result<Option<u64>> {
        let path = self.object_path(key);
        let dir = path.parent().unwrap_or(&self.objects);
        std::fs::create_dir_all(dir)?;
        let old = std::fs::metadata(&path).ok().map(|m| m.len());
        atomic::write_file(&path, bytes)?;
        Ok(old)
    }

    /// Writes an entry's file; returns how much it changed the store's size.
    pub fn write_entry(&self, key: &Key, bytes: &[u8]) -> std::io::Result<i64> {
        let old = self.write_object(key, bytes)?;
        Ok(bytes.len() as i64 - old.map(|o| o as i64).unwrap_or(0))
    }

    /// Deletes an entry's file; whether there was one.
    pub fn remove_object(&self, key: &Key) -> bool {
        std::fs::remove_file(self.object_path(key)).is_ok()
    }

    /// Every entry file: key and size, with its file time as the access time (see
    /// [`records_with_access`](Self::records_with_access) for the catalogue's stamps).
    pub fn records(&self) -> Vec<Record> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(&self.objects) else { return out };
        for sub in rd.flatten() {
            let Ok(files) = std::fs::read_dir(sub.path()) else { continue };
            for f in files.flatten() {
                let name = f.file_name();
                let Some(key) = Key::from_hex(&name.to_string_lossy()) else { continue };
                let Ok(m) = f.metadata() else { continue };
                let accessed = m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_secs()).unwrap_or(0);
                out.push(Record { key, size: m.len(), accessed });
            }
        }
        out.sort_by_key(|r| r.key);
        out
    }

    /// Number of entries and their total size.
    pub fn totals(&self) -> (u64, u64) {
        let r = self.records();
        (r.len() as u64, r.iter().map(|r| r.size).sum())
    }

    /// Removes temporary files left by writers that were killed mid-write.
    pub fn sweep_temporaries(&self) -> usize {
        let mut n = 0;
        let Ok(rd) = std::fs::read_dir(&self.objects) else { return 0 };
        let old = SystemTime::now() - Duration::from_secs(60);
        for sub in rd.flatten() {
            let Ok(files) = std::fs::read_dir(sub.path()) else { continue };
            for f in files.flatten() {
                let stale = f.metadata().ok().and_then(|m| m.modified().ok()).is_some_and(|t| t < old);
                if f.file_name().to_string_lossy().starts_with(TEMP_PREFIX) && stale && std::fs::remove_file(f.path()).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }

    // --- operations that need the catalogue: they wait for it up to the lock timeout ---

    /// Runs `f` with the catalogue open, for several [`Batch::put`]s and [`Batch::remove`]s
    /// with one opening. Other processes find the store busy meanwhile: their writers park
    /// their bookkeeping, their commands wait.
    pub fn batch<R>(&self, f: impl FnOnce(&mut Batch<'_>) -> R) -> Result<R, StoreError> {
        self.with(|catalogue| Ok(f(&mut Batch { store: self, catalogue })))
    }

    /// Stores one entry (see [`Batch::put`]).
    pub fn put(&self, key: &Key, bytes: &[u8]) -> Result<(), StoreError> {
        self.batch(|b| b.put(key, bytes))?
    }

    /// Removes one entry; whether there was one.
    pub fn remove(&self, key: &Key) -> Result<bool, StoreError> {
        self.batch(|b| b.remove(key))?
    }

    /// [`records`](Self::records) with the catalogue's access stamps where it can be had, the
    /// files' times otherwise.
    pub fn records_with_access(&self) -> Vec<Record> {
        let mut records = self.records();
        let _ = self.with(|cat| cat.fill_access(&mut records));
        records
    }

    /// Removes entries found not to verify and counts them (`bad_entries`). Without the
    /// catalogue (busy or broken) the files still go, and the count is parked.
    pub fn discard_bad(&self, keys: &[Key]) {
        let mut counts = Counts::default();
        counts.add(Counter::BadEntries, keys.len() as u64);
        let r = self.with(|cat| {
            for k in keys {
                self.remove_in(cat, k)?;
            }
            cat.add_stats(&counts)
        });
        if r.is_err() {
            for k in keys {
                self.remove_object(k);
            }
            self.park(&counts, &[], &[]);
        }
    }

    /// Zeroes the statistics.
    pub fn reset_stats(&self) -> Result<(), StoreError> {
        self.with(|cat| cat.reset_stats())
    }

    /// Removes every entry; returns how many there were.
    pub fn clear(&self) -> Result<u64, StoreError> {
        self.with(|cat| {
            let records = self.records();
            for r in &records {
                self.remove_object(&r.key);
            }
            cat.clear_entries()?;
            Ok(records.len() as u64)
        })
    }

    /// Evicts least recently used entries until at most `target` bytes remain; returns how
    /// many were removed and how many bytes they held. Also resynchronises the catalogue's
    /// size with the files and removes stale temporary files.
    pub fn gc(&self, target: u64) -> Result<(u64, u64), StoreError> {
        self.with(|cat| self.gc_keeping(cat, target, None))
    }

    // --- the cache's bookkeeping ---

    /// Writes entries with their bookkeeping and `counts` (this process's), without waiting:
    /// [`StoreError::Busy`] at once if another process has the catalogue open (the caller
    /// parks the bookkeeping instead).
    pub(crate) fn write_entries(&self, counts: &Counts, encoded: &[(Key, Vec<u8>)]) -> Result<(), StoreError> {
        self.try_with(|cat| {
            cat.add_stats(counts)?;
            self.merge_parked(cat)?;
            let mut written = Counts::default();
            for (k, b) in encoded {
                self.put_in(cat, k, b)?;
                written.add(Counter::BytesWritten, b.len() as u64);
            }
            cat.add_stats(&written)
        })
    }

    /// Writes `counts` and access stamps, merging parked bookkeeping, without waiting.
    pub(crate) fn write_bookkeeping(&self, counts: &Counts, touched: &[Key]) -> Result<(), StoreError> {
        self.try_with(|cat| {
            cat.add_stats(counts)?;
            self.merge_parked(cat)?;
            cat.touch(touched)
        })
    }

    /// Writes `counts`, merges parked bookkeeping, and returns the statistics with the number
    /// of entries and their size.
    pub(crate) fn statistics(&self, counts: &Counts) -> Result<(Counts, u64, u64), StoreError> {
        self.with(|cat| {
            cat.add_stats(counts)?;
            self.merge_parked(cat)?;
            let s = cat.stats()?;
            let (n, b) = self.totals();
            Ok((s, n, b))
        })
    }

    // --- with the catalogue open ---

    fn put_in(&self, cat: &Catalogue, key: &Key, bytes: &[u8]) -> Result<(), StoreError> {
        let delta = self.write_entry(key, bytes)?;
        cat.record_put(key, delta, now_secs())?;
        self.enforce_limit(cat, Some(key))
    }

    fn remove_in(&self, cat: &Catalogue, key: &Key) -> Result<bool, StoreError> {
        let size = std::fs::metadata(self.object_path(key)).map(|m| m.len()).ok();
        let removed = self.remove_object(key);
        cat.record_remove(key, size.filter(|_| removed))?;
        Ok(removed)
    }

    fn enforce_limit(&self, cat: &Catalogue, keep: Option<&Key>) -> Result<(), StoreError> {
        if cat.size()? > self.max_size {
            self.gc_keeping(cat, self.max_size - self.max_size / 10, keep)?;
        }
        Ok(())
    }

    /// [`gc`](Self::gc) that never evicts `keep` (the entry being written: stamps are in
    /// seconds, so entries written in the same second tie).
    fn gc_keeping(&self, cat: &Catalogue, target: u64, keep: Option<&Key>) -> Result<(u64, u64), StoreError> {
        self.sweep_temporaries();
        let mut records = self.records();
        cat.fill_access(&mut records)?;
        let mut total: u64 = records.iter().map(|r| r.size).sum();
        records.sort_by_key(|r| (r.accessed, r.key));
        let mut removed = Vec::new();
        let mut freed = 0;
        for r in records {
            if total <= target {
                break;
            }
            if Some(&r.key) != keep && self.remove_object(&r.key) {
                total -= r.size;
                freed += r.size;
                removed.push(r.key);
            }
        }
        cat.resync(total, &removed)?;
        crate::logging::debug!("evicted {} entries ({freed} bytes) down to {total} bytes (limit {target})", removed.len());
        Ok((removed.len() as u64, freed))
    }
}
