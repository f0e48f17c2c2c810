//! The local store, under `$KACHE_DIR/v<schema>/`.
//!
//! Entries are content-addressed files, `objects/<2 hex>/<64 hex>`, each a self-verifying
//! envelope, written atomically (a temporary file renamed into place). A lookup reads one file:
//! no lock, no waiting for another process, the same cost with ten entries or ten thousand. The
//! catalogue around the entries lives in sled (`db/`): last-access stamps for eviction, the
//! statistics, the approximate size, the store's format version.
//!
//! sled takes an exclusive lock on its folder, and cargo runs build scripts in parallel, so no
//! process holds it across a compile: every catalogue operation opens it, does its work and
//! closes it (threads of one process share the open handle). Waiting for another process's lock
//! is bounded; past the deadline the operation reports [`StoreError::Busy`]. Writers do not wait
//! at all ([`LocalStore::try_with`]): an entry's file needs no catalogue, so a writer that finds
//! the catalogue open elsewhere writes its file and parks the bookkeeping (size change, access
//! stamp, counts) in a small file that the next process to open the catalogue merges. A catalogue that cannot be opened is moved aside and recreated; an entry
//! that does not verify is a miss and is rewritten. Nothing here ever fails a compile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

const ACCESS: &str = "access";
const STATS: &str = "stats";
const META: &str = "meta";

/// Unix seconds now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

thread_local! {
    /// Whether the operation running on this thread wrote to the catalogue (so only writes pay
    /// for a flush to disk).
    static DIRTY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn mark_dirty() {
    DIRTY.with(|d| d.set(true));
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<sled::Db>>> {
    static R: OnceLock<Mutex<HashMap<PathBuf, Weak<sled::Db>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The local store: entry files and their sled catalogue.
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

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl LocalStore {
    /// The store under `base` (the cache folder). Creates the folders and the `CACHEDIR.TAG`.
    pub fn new(base: &Path, lock_timeout: Duration, max_size: u64) -> Result<LocalStore, StoreError> {
        let versioned = base.join(format!("v{KEY_SCHEMA}"));
        let objects = versioned.join("objects");
        std::fs::create_dir_all(&objects).map_err(|e| StoreError::Failed(format!("{}: {e}", objects.display())))?;
        let tag = base.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = std::fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by kache.\n# For information about cache directory tags see https://bford.info/cachedir/\n",
            );
        }
        Ok(LocalStore { base: base.to_path_buf(), db_path: versioned.join("db"), objects, lock_timeout, max_size })
    }

    /// The cache folder.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The catalogue's sled folder.
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
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".tmp-{}-{}-{n}",
            std::process::id(),
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
        ));
        std::fs::write(&tmp, bytes)?;
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(old)
    }

    /// Deletes an entry's file; whether there was one.
    pub fn remove_object(&self, key: &Key) -> bool {
        std::fs::remove_file(self.object_path(key)).is_ok()
    }

    /// Every entry file: key and size, with its file time as the access time (see
    /// [`fill_access`](Self::fill_access) for the catalogue's stamps).
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
                if f.file_name().to_string_lossy().starts_with(".tmp-") && stale && std::fs::remove_file(f.path()).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }

    // --- the catalogue: sled ---

    fn open_once(&self) -> Result<sled::Db, sled::Error> {
        let path = self.db_path.clone();
        let r = std::panic::catch_unwind(move || sled::Config::new().path(path).flush_every_ms(None).cache_capacity(4 << 20).open());
        match r {
            Ok(r) => r,
            Err(_) => Err(sled::Error::Corruption { at: None, bt: () }),
        }
    }

    fn is_lock_error(e: &sled::Error) -> bool {
        matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock") || io.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Moves a catalogue that cannot be used aside (keeping it for inspection) so a fresh one
    /// can be created. The entries stay: they verify themselves.
    fn move_aside(&self, why: &str) {
        let aside = self.db_path.with_file_name(format!("db.broken-{}-{}", now_secs(), std::process::id()));
        match std::fs::rename(&self.db_path, &aside) {
            Ok(()) => crate::warn(&format!(
                "the cache store at {} could not be opened ({why}); moved it to {} and started a new one",
                self.db_path.display(),
                aside.display()
            )),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&self.db_path);
                let _ = std::fs::remove_file(&self.db_path);
                crate::warn(&format!("the cache store at {} could not be opened ({why}); started a new one", self.db_path.display()));
            }
        }
    }

    fn handle(&self, wait: Duration) -> Result<Arc<sled::Db>, StoreError> {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(db) = reg.get(&self.db_path).and_then(Weak::upgrade) {
            return Ok(db);
        }
        let deadline = Instant::now() + wait;
        let mut recovered = false;
        let mut delay = Duration::from_micros(500);
        loop {
            // A non-directory where the catalogue should be (garbage written over it).
            if self.db_path.exists() && !self.db_path.is_dir() {
                self.move_aside("not a directory");
                recovered = true;
            }
            match self.open_once() {
                Ok(db) => match check_format(&db) {
                    Ok(()) => {
                        let db = Arc::new(db);
                        reg.insert(self.db_path.clone(), Arc::downgrade(&db));
                        return Ok(db);
                    }
                    Err(why) if !recovered => {
                        drop(db);
                        self.move_aside(&why);
                        recovered = true;
                    }
                    Err(why) => return Err(StoreError::Failed(why)),
                },
                Err(e) if Self::is_lock_error(&e) => {
                    if Instant::now() >= deadline {
                        return Err(StoreError::Busy);
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_millis(20));
                }
                Err(e) if !recovered => {
                    self.move_aside(&e.to_string());
                    recovered = true;
                }
                Err(e) => return Err(StoreError::Failed(e.to_string())),
            }
        }
    }

    /// Runs `f` with the catalogue open, waiting up to the lock timeout for another process to
    /// close it; it is closed again when no other thread of this process uses it, and flushed
    /// to disk only if `f` wrote.
    pub fn with<R>(&self, f: impl FnOnce(&sled::Db) -> Result<R, sled::Error>) -> Result<R, StoreError> {
        self.with_wait(self.lock_timeout, f)
    }

    /// [`with`](Self::with) without waiting: [`StoreError::Busy`] at once if another process
    /// has the catalogue open. For bookkeeping that can be parked instead
    /// ([`park`](Self::park)): a writer never waits for another's catalogue work.
    pub fn try_with<R>(&self, f: impl FnOnce(&sled::Db) -> Result<R, sled::Error>) -> Result<R, StoreError> {
        self.with_wait(Duration::ZERO, f)
    }

    fn with_wait<R>(&self, wait: Duration, f: impl FnOnce(&sled::Db) -> Result<R, sled::Error>) -> Result<R, StoreError> {
        let was_dirty = DIRTY.with(|d| d.replace(false));
        let db = match self.handle(wait) {
            Ok(db) => db,
            Err(e) => {
                DIRTY.with(|d| d.set(was_dirty));
                return Err(e);
            }
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&db)));
        let r = match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(StoreError::Failed(e.to_string())),
            Err(_) => Err(StoreError::Failed("the store library panicked".into())),
        };
        if DIRTY.with(|d| d.replace(was_dirty)) {
            let _ = db.flush();
        }
        drop(db);
        r
    }

    /// Stores an entry (its file, its access stamp and size in the catalogue) and evicts least
    /// recently used entries past the size limit.
    pub fn put(&self, db: &sled::Db, key: &Key, bytes: &[u8]) -> Result<(), sled::Error> {
        let delta = self.write_entry(key, bytes).map_err(sled::Error::Io)?;
        self.record_put(db, key, delta, now_secs())?;
        self.enforce_limit(db, Some(key))
    }

    /// Writes an entry's file; returns how much it changed the store's size.
    pub fn write_entry(&self, key: &Key, bytes: &[u8]) -> std::io::Result<i64> {
        let old = self.write_object(key, bytes)?;
        Ok(bytes.len() as i64 - old.map(|o| o as i64).unwrap_or(0))
    }

    fn record_put(&self, db: &sled::Db, key: &Key, delta: i64, when: u64) -> Result<(), sled::Error> {
        mark_dirty();
        add_counter(&db.open_tree(META)?, "bytes", delta)?;
        db.open_tree(ACCESS)?.insert(key.0, &when.to_le_bytes())?;
        Ok(())
    }

    fn enforce_limit(&self, db: &sled::Db, keep: Option<&Key>) -> Result<(), sled::Error> {
        if counter(&db.open_tree(META)?, "bytes")? > self.max_size {
            self.gc_keeping(db, self.max_size - self.max_size / 10, keep)?;
        }
        Ok(())
    }

    /// Removes an entry; whether there was one.
    pub fn remove(&self, db: &sled::Db, key: &Key) -> Result<bool, sled::Error> {
        let size = std::fs::metadata(self.object_path(key)).map(|m| m.len()).ok();
        let removed = self.remove_object(key);
        mark_dirty();
        db.open_tree(ACCESS)?.remove(key.0)?;
        if let (true, Some(s)) = (removed, size) {
            add_counter(&db.open_tree(META)?, "bytes", -(s as i64))?;
        }
        Ok(removed)
    }

    /// Records accesses, writing a stamp only if the stored one is older than an hour (a hit
    /// does not write every time).
    pub fn touch(db: &sled::Db, keys: &[Key]) -> Result<(), sled::Error> {
        let access = db.open_tree(ACCESS)?;
        let now = now_secs();
        for k in keys {
            let old = access.get(k.0)?.map(|v| read_u64(&v)).unwrap_or(0);
            if now.saturating_sub(old) > 3600 {
                mark_dirty();
                access.insert(k.0, &now.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Replaces each record's file time by the catalogue's access stamp, where there is one.
    pub fn fill_access(db: &sled::Db, records: &mut [Record]) -> Result<(), sled::Error> {
        let access = db.open_tree(ACCESS)?;
        for r in records {
            if let Some(v) = access.get(r.key.0)? {
                r.accessed = read_u64(&v);
            }
        }
        Ok(())
    }

    fn parked_dir(&self) -> PathBuf {
        self.db_path.with_file_name("parked-stats")
    }

    /// Keeps counter deltas in a small file when the catalogue is busy, or when a process only
    /// had hits and opening the catalogue again just to count them is not worth it; the next
    /// process that opens the catalogue merges them.
    pub fn park_stats(&self, deltas: &Counts) {
        self.park(deltas, &[], &[]);
    }

    /// Parks counter deltas, accessed keys, and the catalogue records of entries written
    /// without it (key and size change), for the next process that opens the catalogue (see
    /// [`park_stats`](Self::park_stats)).
    pub fn park(&self, deltas: &Counts, touched: &[Key], stored: &[(Key, i64)]) {
        let mut text: String = deltas.iter().filter(|(_, v)| *v != 0).map(|(c, v)| format!("{} {v}\n", c.name())).collect();
        for k in touched {
            text.push_str(&format!("touch {}\n", k.hex()));
        }
        let now = now_secs();
        for (k, delta) in stored {
            text.push_str(&format!("put {} {delta} {now}\n", k.hex()));
        }
        if text.is_empty() {
            return;
        }
        let dir = self.parked_dir();
        let _ = std::fs::create_dir_all(&dir);
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{}-{}-{}-{n}",
            std::process::id(),
            now_secs(),
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
        );
        let tmp = dir.join(format!(".{name}"));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, dir.join(name));
        }
    }

    /// Merges parked counter deltas and access stamps (call with the catalogue open).
    pub fn merge_parked(&self, db: &sled::Db) -> Result<(), sled::Error> {
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return Ok(()) };
        let mut wrote = false;
        for e in rd.flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let text = std::fs::read(&p);
            // Remove first: a crash after this loses the counts rather than doubling them. What
            // cannot be read as text (garbage written over it) goes too.
            if std::fs::remove_file(&p).is_err() {
                continue;
            }
            let Ok(text) = text.map(|b| String::from_utf8_lossy(&b).into_owned()) else { continue };
            let mut deltas = Counts::default();
            let mut touched = Vec::new();
            for l in text.lines() {
                let Some((n, v)) = l.split_once(' ') else { continue };
                if n == "touch" {
                    touched.extend(Key::from_hex(v));
                } else if n == "put" {
                    let mut f = v.split(' ');
                    if let (Some(k), Some(Ok(delta)), Some(Ok(when))) =
                        (f.next().and_then(Key::from_hex), f.next().map(str::parse), f.next().map(str::parse))
                    {
                        self.record_put(db, &k, delta, when)?;
                        wrote = true;
                    }
                } else if let (Some(c), Ok(v)) = (Counter::from_name(n), v.trim().parse()) {
                    deltas.add(c, v);
                }
            }
            Self::add_stats(db, &deltas)?;
            Self::touch(db, &touched)?;
        }
        if wrote {
            self.enforce_limit(db, None)?;
        }
        Ok(())
    }

    /// Adds counter deltas to the persistent statistics.
    pub fn add_stats(db: &sled::Db, deltas: &Counts) -> Result<(), sled::Error> {
        let t = db.open_tree(STATS)?;
        for (c, d) in deltas.iter() {
            if d != 0 {
                add_counter(&t, c.name(), d.min(i64::MAX as u64) as i64)?;
            }
        }
        Ok(())
    }

    /// The persistent statistics (names this build does not count are left out).
    pub fn stats(db: &sled::Db) -> Result<Counts, sled::Error> {
        let mut out = Counts::default();
        for kv in db.open_tree(STATS)?.iter() {
            let (k, v) = kv?;
            if let Some(c) = std::str::from_utf8(&k).ok().and_then(Counter::from_name) {
                out.add(c, read_u64(&v));
            }
        }
        Ok(out)
    }

    /// Clears the statistics.
    pub fn reset_stats(db: &sled::Db) -> Result<(), sled::Error> {
        mark_dirty();
        db.open_tree(STATS)?.clear()
    }

    /// Removes every entry; returns how many there were.
    pub fn clear(&self, db: &sled::Db) -> Result<u64, sled::Error> {
        let records = self.records();
        for r in &records {
            self.remove_object(&r.key);
        }
        mark_dirty();
        db.open_tree(ACCESS)?.clear()?;
        db.open_tree(META)?.insert("bytes", &0u64.to_le_bytes())?;
        Ok(records.len() as u64)
    }

    /// Evicts least recently used entries until at most `target` bytes remain; returns how
    /// many were removed and how many bytes they held. Also resynchronises the catalogue's
    /// size with the files and removes stale temporary files.
    pub fn gc(&self, db: &sled::Db, target: u64) -> Result<(u64, u64), sled::Error> {
        self.gc_keeping(db, target, None)
    }

    /// [`gc`](Self::gc) that never evicts `keep` (the entry being written: stamps are in
    /// seconds, so entries written in the same second tie).
    fn gc_keeping(&self, db: &sled::Db, target: u64, keep: Option<&Key>) -> Result<(u64, u64), sled::Error> {
        self.sweep_temporaries();
        let mut records = self.records();
        Self::fill_access(db, &mut records)?;
        let mut total: u64 = records.iter().map(|r| r.size).sum();
        records.sort_by_key(|r| (r.accessed, r.key));
        let mut removed = (0, 0);
        let access = db.open_tree(ACCESS)?;
        for r in records {
            if total <= target {
                break;
            }
            if Some(&r.key) != keep && self.remove_object(&r.key) {
                access.remove(r.key.0)?;
                total -= r.size;
                removed.0 += 1;
                removed.1 += r.size;
            }
        }
        mark_dirty();
        db.open_tree(META)?.insert("bytes", &total.to_le_bytes())?;
        Ok(removed)
    }
}

fn check_format(db: &sled::Db) -> Result<(), String> {
    let meta = db.open_tree(META).map_err(|e| e.to_string())?;
    match meta.get("format").map_err(|e| e.to_string())? {
        None => {
            mark_dirty();
            meta.insert("format", &STORE_FORMAT.to_le_bytes()).map_err(|e| e.to_string())?;
            Ok(())
        }
        Some(v) if v.len() == 4 && u32::from_le_bytes([v[0], v[1], v[2], v[3]]) == STORE_FORMAT => Ok(()),
        Some(v) => Err(format!("store format {:?} is not {STORE_FORMAT} (written by another kache version)", &v[..])),
    }
}

fn read_u64(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = v.len().min(8);
    b[..n].copy_from_slice(&v[..n]);
    u64::from_le_bytes(b)
}

fn counter(t: &sled::Tree, name: &str) -> Result<u64, sled::Error> {
    Ok(t.get(name)?.map(|v| read_u64(&v)).unwrap_or(0))
}

fn add_counter(t: &sled::Tree, name: &str, delta: i64) -> Result<(), sled::Error> {
    mark_dirty();
    let cur = counter(t, name)?;
    let new = (cur as i64).saturating_add(delta).max(0) as u64;
    t.insert(name, &new.to_le_bytes())?;
    Ok(())
}
