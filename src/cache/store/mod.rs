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
use super::envelope;
use super::key::{KEY_SCHEMA, Key};
use super::trust;
use crate::files;

/// Largest entry file read: the largest payload an envelope may hold, with room for its header.
pub(crate) const MAX_ENTRY_FILE: u64 = envelope::MAX_PAYLOAD + (1 << 20);

/// Temporary files older than this belong to writers that were killed.
const STALE_TEMPORARY: Duration = Duration::from_secs(60);

/// Catalogues moved aside (`db.broken-*`) are kept this long for inspection.
const KEEP_BROKEN: Duration = Duration::from_secs(24 * 3600);

/// Creates the folder `path` and its parents, with permissions that let nobody but the owner
/// write (umask permitting: it can only take permissions away), and replaces a non-folder where
/// it should be (garbage written over the store).
pub(crate) fn create_private_dir(path: &Path) -> std::io::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path)
        && !m.is_dir()
    {
        std::fs::remove_file(path)?;
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o755);
    }
    b.create(path)
}

/// Removes whatever is at `path`: a folder with everything in it, or anything else.
fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    }
}

fn older_than(m: &std::fs::Metadata, age: Duration) -> bool {
    m.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|e| e > age)
}

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
    /// Others can write the cache folder: nothing is loaded from it or written into it.
    #[error("{0}")]
    Untrusted(trust::Untrusted),
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
#[derive(Clone, Debug)]
pub struct LocalStore {
    base: PathBuf,
    db_path: PathBuf,
    objects: PathBuf,
    /// Direct mode's manifests: beside the entries, never counted, listed or exported as one.
    manifests: PathBuf,
    lock_timeout: Duration,
    max_size: u64,
    /// Whether each entry's file and shard folder are checked to be writable by this user only
    /// (not when the folder is trusted by name).
    check_entries: bool,
    /// Shard folders this process made or found, so that a batch of writes does not ask the
    /// file system again for each entry (a folder removed since, by `clear` in another
    /// process, is made again when a write finds it gone).
    shards: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

/// Something under `objects/` that is not an entry: a folder, FIFO, link or other special file
/// where an entry belongs, a file where a shard folder belongs, a file whose name is no key.
/// Temporary files of writers are not strays (they are swept when stale).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stray {
    /// Where it is.
    pub path: PathBuf,
    /// What it is, in words ("directory", "FIFO", ...).
    pub kind: &'static str,
}

/// What [`LocalStore::clear`] removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Entries removed.
    pub entries: u64,
    /// Other things removed from where entries belong ([`Stray`]s).
    pub strays: u64,
    /// Entries, strays and folders that could not be removed (`failed_paths` names them). What
    /// another process removed or renamed first is gone, not failed.
    pub failed: u64,
    /// The paths that could not be removed, with why.
    pub failed_paths: Vec<(PathBuf, String)>,
}

/// Whether a removal left the path gone: done, or already gone (another process was first).
fn gone(r: std::io::Result<()>) -> Result<(), String> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.to_string()),
    }
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
    /// A folder that others can write is refused ([`StoreError::Untrusted`], see
    /// [`trust`]) before anything is created in it.
    pub fn new(base: &Path, lock_timeout: Duration, max_size: u64) -> Result<LocalStore, StoreError> {
        let versioned = base.join(format!("v{KEY_SCHEMA}"));
        let objects = versioned.join("objects");
        let manifests = versioned.join("manifests");
        let db_path = versioned.join("db");
        let by_name = trust::trusted_by_name(base);
        let folders =
            [base.to_path_buf(), versioned.clone(), objects.clone(), manifests.clone(), versioned.join("parked-stats"), db_path.clone()];
        if !by_name {
            trust::check(base, &folders).map_err(StoreError::Untrusted)?;
        }
        // The store never follows a link where one of its folders belongs: its bookkeeping
        // reads and removes every file of `parked-stats/`, and writes go into `manifests/`, so
        // a link there would have them remove or write another folder's files. The link goes
        // (what it points to stays); the folder is made where it is needed.
        for f in &folders[1..] {
            if std::fs::symlink_metadata(f).is_ok_and(|m| m.file_type().is_symlink()) && std::fs::remove_file(f).is_ok() {
                crate::logging::warning!("{} was a link; the cache keeps its own folder there and never follows a link", f.display());
            }
        }
        create_private_dir(&objects).map_err(|e| StoreError::Failed(format!("{}: {e}", objects.display())))?;
        let tag = base.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = atomic::write_private(
                &tag,
                b"Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by kache.\n# For information about cache directory tags see https://bford.info/cachedir/\n",
            );
        }
        Ok(LocalStore {
            base: base.to_path_buf(),
            db_path,
            objects,
            manifests,
            lock_timeout,
            max_size,
            check_entries: !by_name,
            shards: Default::default(),
        })
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

    /// Reads the entry under `key` (unverified; the caller verifies the envelope). Only a
    /// regular file is read: a FIFO, a folder or a link where the entry belongs is no entry (and
    /// never blocks the reader).
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        self.read_regular(&self.object_path(key))
    }

    fn read_regular(&self, path: &Path) -> Option<Vec<u8>> {
        let f = files::open_regular(path, false).ok()?;
        // An entry that others can write is no entry (it is rewritten, by this user).
        if self.check_entries
            && (f.metadata().ok().is_none_or(|m| trust::others_can_write(&m).is_some())
                || std::fs::metadata(path.parent()?).ok().is_none_or(|m| trust::others_can_write(&m).is_some()))
        {
            return None;
        }
        files::read_limited(f, MAX_ENTRY_FILE).ok()
    }

    /// Writes an entry atomically; returns the size of the entry it replaced, if any. Whatever
    /// is in the way (a file where the shard folder belongs, a folder or a FIFO where the entry
    /// belongs) is removed first.
    pub fn write_object(&self, key: &Key, bytes: &[u8]) -> std::io::Result<Option<u64>> {
        self.write_file_at(&self.object_path(key), bytes)
    }

    fn write_file_at(&self, path: &Path, bytes: &[u8]) -> std::io::Result<Option<u64>> {
        let dir = path.parent().unwrap_or(&self.objects);
        let known = self.shards.lock().unwrap_or_else(|e| e.into_inner()).contains(dir);
        if !known {
            self.make_shard(dir)?;
        }
        let old = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_file() => Some(m.len()),
            Ok(_) => {
                remove_any(path)?;
                None
            }
            Err(_) => None,
        };
        match atomic::write_private(path, bytes) {
            // The folder went away since this process last made it: make it again, once.
            Err(e) if known && e.kind() == std::io::ErrorKind::NotFound => {
                self.make_shard(dir)?;
                atomic::write_private(path, bytes)?;
            }
            r => r?,
        }
        Ok(old)
    }

    fn make_shard(&self, dir: &Path) -> std::io::Result<()> {
        create_private_dir(dir)?;
        self.make_private(dir);
        self.shards.lock().unwrap_or_else(|e| e.into_inner()).insert(dir.to_path_buf());
        Ok(())
    }

    fn manifest_path(&self, key: &Key) -> PathBuf {
        let h = key.hex();
        self.manifests.join(&h[..2]).join(h)
    }

    /// Reads direct mode's manifest under `key` (unverified, as [`get`](Self::get)).
    /// Manifests live in their own folder: they are no entries (neither counted, listed,
    /// exported nor evicted as one); [`clear`](Self::clear) removes them.
    pub fn get_manifest(&self, key: &Key) -> Option<Vec<u8>> {
        self.read_regular(&self.manifest_path(key))
    }

    /// Writes direct mode's manifest atomically (no catalogue, no lock: it is rebuilt by the
    /// next full compile of its request when lost).
    pub fn write_manifest(&self, key: &Key, bytes: &[u8]) -> std::io::Result<()> {
        self.write_file_at(&self.manifest_path(key), bytes).map(|_| ())
    }

    /// Deletes a manifest's file; whether there was one.
    pub fn remove_manifest(&self, key: &Key) -> bool {
        let path = self.manifest_path(key);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) && std::fs::remove_file(path).is_ok()
    }

    /// Takes write permission away from the group and others on a folder of this user's that
    /// has it (made under a permissive umask by an older kache), so its entries can be loaded.
    fn make_private(&self, dir: &Path) {
        #[cfg(unix)]
        if self.check_entries
            && let Ok(m) = std::fs::metadata(dir)
            && trust::others_can_write(&m).is_some()
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(m.permissions().mode() & !0o022));
        }
        #[cfg(not(unix))]
        let _ = dir;
    }

    /// Writes an entry's file; returns how much it changed the store's size.
    pub fn write_entry(&self, key: &Key, bytes: &[u8]) -> std::io::Result<i64> {
        let old = self.write_object(key, bytes)?;
        Ok(bytes.len() as i64 - old.map(|o| o as i64).unwrap_or(0))
    }

    /// Deletes an entry's file; whether there was one.
    pub fn remove_object(&self, key: &Key) -> bool {
        let path = self.object_path(key);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) && std::fs::remove_file(path).is_ok()
    }

    /// Walks `objects/`: every entry (a regular file named by its key in the shard its key
    /// names), and every [`Stray`].
    fn scan(&self) -> (Vec<Record>, Vec<Stray>) {
        let mut records = Vec::new();
        let mut strays = Vec::new();
        let Ok(rd) = std::fs::read_dir(&self.objects) else { return (records, strays) };
        for sub in rd.flatten() {
            let shard = sub.file_name().to_string_lossy().into_owned();
            let Ok(t) = sub.file_type() else { continue };
            if shard.starts_with(TEMP_PREFIX) {
                continue;
            }
            if !t.is_dir() || shard.len() != 2 || !shard.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
                strays.push(Stray { path: sub.path(), kind: files::kind_of(t) });
                continue;
            }
            let Ok(files) = std::fs::read_dir(sub.path()) else { continue };
            for f in files.flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if name.starts_with(TEMP_PREFIX) {
                    continue;
                }
                let Ok(t) = f.file_type() else { continue };
                let key = Key::from_hex(&name).filter(|k| k.hex() == name && name.starts_with(&shard));
                match key {
                    Some(key) if t.is_file() => {
                        let Ok(m) = f.metadata() else { continue };
                        let accessed = m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_secs()).unwrap_or(0);
                        records.push(Record { key, size: m.len(), accessed });
                    }
                    _ => strays.push(Stray { path: f.path(), kind: files::kind_of(t) }),
                }
            }
        }
        records.sort_by_key(|r| r.key);
        strays.sort_by(|a, b| a.path.cmp(&b.path));
        (records, strays)
    }

    /// Every entry file: key and size, with its file time as the access time (see
    /// [`records_with_access`](Self::records_with_access) for the catalogue's stamps). Only
    /// regular files named by a key count (see [`strays`](Self::strays) for the rest).
    pub fn records(&self) -> Vec<Record> {
        self.scan().0
    }

    /// What is under `objects/` and is neither an entry nor a writer's temporary file.
    pub fn strays(&self) -> Vec<Stray> {
        self.scan().1
    }

    /// Removes a [`Stray`]; whether it went.
    pub fn remove_stray(&self, stray: &Stray) -> bool {
        stray.path.starts_with(&self.objects) && remove_any(&stray.path).is_ok()
    }

    /// Number of entries and their total size.
    pub fn totals(&self) -> (u64, u64) {
        let r = self.records();
        (r.len() as u64, r.iter().map(|r| r.size).sum())
    }

    /// Removes what killed or failed writers left behind: temporary files older than a minute
    /// (in `objects/`, `parked-stats/`, the catalogue's folder, the store's and the cache
    /// folder), and catalogues moved aside (`db.broken-*`) more than a day ago; and recovers the
    /// claims of parked files that a process killed while folding them left (folded back into
    /// the bookkeeping, never dropped: `parked.rs`). Returns how many things it handled.
    pub fn sweep_temporaries(&self) -> usize {
        // Claims a killed fold left: folded back into the bookkeeping, never dropped.
        let mut n = self.recover_claims();
        let mut sweep_dir = |dir: &Path| {
            let Ok(rd) = std::fs::read_dir(dir) else { return };
            for f in rd.flatten() {
                let stale =
                    f.file_name().to_string_lossy().starts_with(TEMP_PREFIX) && f.metadata().is_ok_and(|m| older_than(&m, STALE_TEMPORARY));
                if stale && remove_any(&f.path()).is_ok() {
                    n += 1;
                }
            }
        };
        if let Ok(rd) = std::fs::read_dir(&self.objects) {
            for sub in rd.flatten() {
                if sub.file_type().is_ok_and(|t| t.is_dir()) {
                    sweep_dir(&sub.path());
                }
            }
        }
        let versioned = self.objects.parent().unwrap_or(&self.base).to_path_buf();
        for dir in [self.objects.clone(), self.parked_dir(), self.db_path.clone(), versioned.clone(), self.base.clone()] {
            sweep_dir(&dir);
        }
        if let Ok(rd) = std::fs::read_dir(&versioned) {
            for f in rd.flatten() {
                let old =
                    f.file_name().to_string_lossy().starts_with("db.broken-") && f.metadata().is_ok_and(|m| older_than(&m, KEEP_BROKEN));
                if old && remove_any(&f.path()).is_ok() {
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
            // A full disk loses this count; the entries are gone all the same.
            let _ = self.park(&counts, &[], &[]);
        }
    }

    /// Zeroes the statistics, the parked counts of other processes included (their records of
    /// entries and access stamps are merged).
    pub fn reset_stats(&self) -> Result<(), StoreError> {
        self.with(|cat| {
            if self.merge_parked(cat, false)? {
                self.enforce_limit(cat, None)?;
            }
            cat.reset_stats()
        })
    }

    /// Removes every entry, and every [`Stray`] where entries belong; says how many of each it
    /// removed (and how many it could not). Direct mode's manifests go too.
    pub fn clear(&self) -> Result<Cleared, StoreError> {
        self.with(|cat| {
            let (records, strays) = self.scan();
            let mut done = Cleared::default();
            let mut failed = |path: PathBuf, why: String| {
                done.failed += 1;
                done.failed_paths.push((path, why));
            };
            let mut entries = 0;
            for r in &records {
                let path = self.object_path(&r.key);
                match gone(std::fs::remove_file(&path)) {
                    Ok(()) => entries += 1,
                    Err(why) => failed(path, why),
                }
            }
            let mut removed_strays = 0;
            for s in &strays {
                if !s.path.starts_with(&self.objects) {
                    continue;
                }
                match gone(remove_any(&s.path)) {
                    Ok(()) => removed_strays += 1,
                    Err(why) => failed(s.path.clone(), why),
                }
            }
            cat.clear_entries()?;
            // Manifests name entries just removed; the next full compile records them again.
            if let Err((path, why)) = self.remove_manifests() {
                failed(path, why);
            }
            done.entries = entries;
            done.strays = removed_strays;
            Ok(done)
        })
    }

    /// Evicts least recently used entries until the store (its entries and its catalogue) holds
    /// at most `target` bytes; returns how many were removed and how many bytes they held. Also
    /// resynchronises the catalogue's size with the files and sweeps what killed writers left
    /// ([`sweep_temporaries`](Self::sweep_temporaries)).
    /// Every manifest goes too: they are not in the size the catalogue keeps, and the next full
    /// compile of a request records its manifest again.
    pub fn gc(&self, target: u64) -> Result<(u64, u64), StoreError> {
        self.with(|cat| {
            let _ = self.remove_manifests();
            self.gc_keeping(cat, target, None)
        })
    }

    /// Removes the manifests' folder, while other processes may be writing manifests into it
    /// (they take no lock: a manifest is a hint). The folder is first renamed aside, in one
    /// step, to a temporary name (`.tmp-manifests-…`, which [`sweep_temporaries`]
    /// (Self::sweep_temporaries) removes if this process dies here); writers then make a new
    /// folder, and a write that was under way fails harmlessly. The renamed folder is then
    /// removed, retried while a late writer's file appears in it. `Err` names what could not be
    /// removed.
    fn remove_manifests(&self) -> Result<(), (PathBuf, String)> {
        if std::fs::symlink_metadata(&self.manifests).is_err() {
            return Ok(());
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let aside = self.manifests.with_file_name(format!("{TEMP_PREFIX}manifests-{}-{nanos}", std::process::id()));
        let target = match std::fs::rename(&self.manifests, &aside) {
            Ok(()) => aside,
            // Another clear or gc renamed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // Renaming failed (a file system without it): removed in place, retried the same.
            Err(_) => self.manifests.clone(),
        };
        let mut last = String::new();
        for _ in 0..8 {
            match gone(remove_any(&target)) {
                Ok(()) => return Ok(()),
                Err(why) => last = why,
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err((target, last))
    }

    // --- the cache's bookkeeping ---

    /// Writes this process's bookkeeping into the catalogue in one transaction, merging parked
    /// bookkeeping, without waiting: [`StoreError::Busy`] at once if another process has the
    /// catalogue open (the caller parks it instead). `counts` are counter deltas, `touched` the
    /// keys read (access stamps), `written` the entries written since the last time (key, size
    /// change, unix seconds; their files are already in place). The size limit is applied once,
    /// never evicting the newest entry written. An error means nothing was written.
    pub(crate) fn write_bookkeeping(&self, counts: &Counts, touched: &[Key], written: &[(Key, i64, u64)]) -> Result<(), StoreError> {
        self.try_with(|cat| {
            let merged = self.merge_parked(cat, true)?;
            for (k, delta, when) in written {
                cat.record_put(k, *delta, *when)?;
            }
            if merged || !written.is_empty() {
                self.enforce_limit(cat, written.last().map(|(newest, _, _)| newest))?;
            }
            cat.touch(touched)?;
            cat.add_stats(counts)
        })
    }

    /// Writes `counts`, merges parked bookkeeping, and returns the statistics with the number
    /// of entries and their size.
    pub(crate) fn statistics(&self, counts: &Counts) -> Result<(Counts, u64, u64), StoreError> {
        self.with(|cat| {
            if self.merge_parked(cat, true)? {
                self.enforce_limit(cat, None)?;
            }
            cat.add_stats(counts)?;
            let s = cat.stats()?;
            let (n, b) = self.totals();
            Ok((s, n, b))
        })
    }

    /// What can be read of the statistics without the catalogue (another process has it open):
    /// the counts parked in files and how many files hold them, and the number of entries and
    /// their size, from the entries' files.
    pub(crate) fn statistics_without_catalogue(&self) -> (Counts, usize, u64, u64) {
        let (parked, files) = self.parked_counts();
        let (n, b) = self.totals();
        (parked, files, n, b)
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
        if cat.size()?.saturating_add(self.catalogue_size()) > self.max_size {
            self.gc_keeping(cat, self.max_size - self.max_size / 10, keep)?;
        }
        Ok(())
    }

    /// Bytes of the catalogue's files and of parked bookkeeping: part of the store's size,
    /// which the size limit bounds.
    pub fn catalogue_size(&self) -> u64 {
        fn size(dir: &Path, depth: u32) -> u64 {
            let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
            rd.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() && depth > 0 => size(&e.path(), depth - 1),
                    Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
                    _ => 0,
                })
                .sum()
        }
        size(&self.db_path, 1) + size(&self.parked_dir(), 0)
    }

    /// [`gc`](Self::gc) that never evicts `keep` (the entry being written: stamps are in
    /// seconds, so entries written in the same second tie). `target` counts the catalogue.
    fn gc_keeping(&self, cat: &Catalogue, target: u64, keep: Option<&Key>) -> Result<(u64, u64), StoreError> {
        self.sweep_temporaries();
        let target = target.saturating_sub(self.catalogue_size());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard folder removed by another process (`kache clear`) after this one wrote into it
    /// is made again by the next write there; the entries are whole.
    #[test]
    fn a_write_makes_a_shard_folder_removed_since_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path(), Duration::from_secs(5), 1 << 30).unwrap();
        let (a, b) = (
            Key([0xab; 32]),
            Key({
                let mut k = [0xab; 32];
                k[31] = 0;
                k
            }),
        );
        store.write_entry(&a, b"first").unwrap();
        let shard = store.object_path(&a).parent().unwrap().to_path_buf();
        assert_eq!(shard, store.object_path(&b).parent().unwrap());
        std::fs::remove_dir_all(&shard).unwrap();
        store.write_entry(&b, b"second").unwrap();
        assert_eq!(store.get(&b).as_deref(), Some(&b"second"[..]));
        assert_eq!(store.get(&a), None);
        store.write_entry(&a, b"again").unwrap();
        assert_eq!(store.get(&a).as_deref(), Some(&b"again"[..]));
    }
}
