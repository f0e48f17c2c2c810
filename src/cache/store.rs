//! The local store: sled, under `$KACHE_DIR/v<schema>/db`.
//!
//! sled takes an exclusive lock on its folder, and cargo runs build scripts in parallel, so no
//! process holds the store across a compile: every operation opens it, does its work and
//! closes it (threads of one process share the open handle). Waiting for another process's
//! lock is bounded; past the deadline the operation reports [`StoreError::Busy`] and the
//! caller goes on without the store. A store that cannot be opened is moved aside and
//! recreated. The store is disposable: nothing here ever fails a compile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::key::{KEY_SCHEMA, Key};

/// Version of the store's layout inside sled (trees and their encodings).
pub const STORE_FORMAT: u32 = 1;

/// Why a store operation did not happen.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Another process held the store past the lock timeout.
    #[error("the cache store is busy (locked by another process)")]
    Busy,
    /// The store failed; the caller goes on without it.
    #[error("cache store error: {0}")]
    Failed(String),
}

const ENTRIES: &str = "entries";
const ACCESS: &str = "access";
const STATS: &str = "stats";
const META: &str = "meta";

/// Unix seconds now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<sled::Db>>> {
    static R: OnceLock<Mutex<HashMap<PathBuf, Weak<sled::Db>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The sled-backed local store.
#[derive(Debug)]
pub struct LocalStore {
    base: PathBuf,
    db_path: PathBuf,
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
    /// Last access (unix seconds, updated lazily).
    pub accessed: u64,
}

impl LocalStore {
    /// The store under `base` (the cache folder). Creates the folder and its `CACHEDIR.TAG`.
    pub fn new(base: &Path, lock_timeout: Duration, max_size: u64) -> Result<LocalStore, StoreError> {
        let versioned = base.join(format!("v{KEY_SCHEMA}"));
        std::fs::create_dir_all(&versioned).map_err(|e| StoreError::Failed(format!("{}: {e}", versioned.display())))?;
        let tag = base.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = std::fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by kache.\n# For information about cache directory tags see https://bford.info/cachedir/\n",
            );
        }
        Ok(LocalStore { base: base.to_path_buf(), db_path: versioned.join("db"), lock_timeout, max_size })
    }

    /// The cache folder.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The sled folder.
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// The size limit.
    pub fn max_size(&self) -> u64 {
        self.max_size
    }

    fn open_once(&self) -> Result<sled::Db, sled::Error> {
        let path = self.db_path.clone();
        let r = std::panic::catch_unwind(move || {
            sled::Config::new().path(path).flush_every_ms(None).cache_capacity(16 << 20).open()
        });
        match r {
            Ok(r) => r,
            Err(_) => Err(sled::Error::Corruption { at: None, bt: () }),
        }
    }

    fn is_lock_error(e: &sled::Error) -> bool {
        matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock") || io.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Moves a store that cannot be used aside (keeping it for inspection) so a fresh one can
    /// be created.
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

    fn handle(&self) -> Result<Arc<sled::Db>, StoreError> {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(db) = reg.get(&self.db_path).and_then(Weak::upgrade) {
            return Ok(db);
        }
        let deadline = Instant::now() + self.lock_timeout;
        let mut recovered = false;
        let mut delay = Duration::from_micros(500);
        loop {
            // A non-directory where the store should be (garbage written over it).
            if self.db_path.exists() && !self.db_path.is_dir() {
                self.move_aside("not a directory");
                recovered = true;
            }
            match self.open_once() {
                Ok(db) => {
                    match check_format(&db) {
                        Ok(()) => {
                            let db = Arc::new(db);
                            reg.insert(self.db_path.clone(), Arc::downgrade(&db));
                            return Ok(db);
                        }
                        Err(why) if !recovered => {
                            drop(db);
                            self.move_aside(&why);
                            recovered = true;
                            continue;
                        }
                        Err(why) => return Err(StoreError::Failed(why)),
                    }
                }
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

    /// Runs `f` with the store open; the store is closed again when no other thread of this
    /// process uses it.
    pub fn with<R>(&self, f: impl FnOnce(&sled::Db) -> Result<R, sled::Error>) -> Result<R, StoreError> {
        let db = self.handle()?;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&db)));
        let r = match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(StoreError::Failed(e.to_string())),
            Err(_) => Err(StoreError::Failed("the store library panicked".into())),
        };
        let _ = db.flush();
        drop(db);
        r
    }

    /// Reads the entry under `key`.
    pub fn get(db: &sled::Db, key: &Key) -> Result<Option<Vec<u8>>, sled::Error> {
        Ok(db.open_tree(ENTRIES)?.get(key.0)?.map(|v| v.to_vec()))
    }

    /// Stores an entry and evicts least recently used entries past the size limit.
    pub fn put(&self, db: &sled::Db, key: &Key, bytes: &[u8]) -> Result<(), sled::Error> {
        let entries = db.open_tree(ENTRIES)?;
        let old = entries.insert(key.0, bytes)?;
        let delta = bytes.len() as i64 - old.map(|o| o.len() as i64).unwrap_or(0);
        add_counter(&db.open_tree(META)?, "bytes", delta)?;
        db.open_tree(ACCESS)?.insert(key.0, &now_secs().to_le_bytes())?;
        let total = counter(&db.open_tree(META)?, "bytes")?;
        if total > self.max_size {
            evict(db, self.max_size - self.max_size / 10)?;
        }
        Ok(())
    }

    /// Removes an entry.
    pub fn remove(db: &sled::Db, key: &Key) -> Result<bool, sled::Error> {
        let old = db.open_tree(ENTRIES)?.remove(key.0)?;
        db.open_tree(ACCESS)?.remove(key.0)?;
        if let Some(o) = &old {
            add_counter(&db.open_tree(META)?, "bytes", -(o.len() as i64))?;
        }
        Ok(old.is_some())
    }

    /// Records accesses, writing a stamp only if the stored one is older than an hour (a hit
    /// does not write every time).
    pub fn touch(db: &sled::Db, keys: &[Key]) -> Result<(), sled::Error> {
        let access = db.open_tree(ACCESS)?;
        let now = now_secs();
        for k in keys {
            let old = access.get(k.0)?.map(|v| read_u64(&v)).unwrap_or(0);
            if now.saturating_sub(old) > 3600 {
                access.insert(k.0, &now.to_le_bytes())?;
            }
        }
        Ok(())
    }

    /// Every entry's key, size and last access.
    pub fn records(db: &sled::Db) -> Result<Vec<Record>, sled::Error> {
        let access = db.open_tree(ACCESS)?;
        let mut out = Vec::new();
        for kv in db.open_tree(ENTRIES)?.iter() {
            let (k, v) = kv?;
            if k.len() != 32 {
                continue;
            }
            let mut key = [0u8; 32];
            key.copy_from_slice(&k);
            let accessed = access.get(&k)?.map(|v| read_u64(&v)).unwrap_or(0);
            out.push(Record { key: Key(key), size: v.len() as u64, accessed });
        }
        Ok(out)
    }

    fn parked_dir(&self) -> PathBuf {
        self.db_path.with_file_name("parked-stats")
    }

    /// Keeps counter deltas in a small file when the store itself is busy, so that counts such
    /// as `busy` survive; the next process that opens the store merges them.
    pub fn park_stats(&self, deltas: &[(&str, i64)]) {
        let text: String = deltas.iter().filter(|(_, v)| *v != 0).map(|(n, v)| format!("{n} {v}\n")).collect();
        if text.is_empty() {
            return;
        }
        let dir = self.parked_dir();
        let _ = std::fs::create_dir_all(&dir);
        let name = format!("{}-{}-{}", std::process::id(), now_secs(), SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0));
        let tmp = dir.join(format!(".{name}"));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, dir.join(name));
        }
    }

    /// Merges parked counter deltas into the statistics (call with the store open).
    pub fn merge_parked(&self, db: &sled::Db) -> Result<(), sled::Error> {
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return Ok(()) };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else { continue };
            // Remove first: a crash after this loses the counts rather than doubling them.
            if std::fs::remove_file(&p).is_err() {
                continue;
            }
            let deltas: Vec<(String, i64)> = text
                .lines()
                .filter_map(|l| {
                    let (n, v) = l.split_once(' ')?;
                    Some((n.to_string(), v.trim().parse().ok()?))
                })
                .collect();
            let refs: Vec<(&str, i64)> = deltas.iter().map(|(n, v)| (n.as_str(), *v)).collect();
            Self::add_stats(db, &refs)?;
        }
        Ok(())
    }

    /// Adds counter deltas to the persistent statistics.
    pub fn add_stats(db: &sled::Db, deltas: &[(&str, i64)]) -> Result<(), sled::Error> {
        let t = db.open_tree(STATS)?;
        for (name, d) in deltas {
            if *d != 0 {
                add_counter(&t, name, *d)?;
            }
        }
        Ok(())
    }

    /// The persistent statistics.
    pub fn stats(db: &sled::Db) -> Result<Vec<(String, u64)>, sled::Error> {
        let mut out = Vec::new();
        for kv in db.open_tree(STATS)?.iter() {
            let (k, v) = kv?;
            out.push((String::from_utf8_lossy(&k).into_owned(), read_u64(&v)));
        }
        Ok(out)
    }

    /// Clears the statistics.
    pub fn reset_stats(db: &sled::Db) -> Result<(), sled::Error> {
        db.open_tree(STATS)?.clear()
    }

    /// Bytes stored (sum of entry sizes).
    pub fn total_bytes(db: &sled::Db) -> Result<u64, sled::Error> {
        counter(&db.open_tree(META)?, "bytes")
    }

    /// Removes every entry.
    pub fn clear(db: &sled::Db) -> Result<u64, sled::Error> {
        let entries = db.open_tree(ENTRIES)?;
        let n = entries.len() as u64;
        entries.clear()?;
        db.open_tree(ACCESS)?.clear()?;
        db.open_tree(META)?.insert("bytes", &0u64.to_le_bytes())?;
        Ok(n)
    }

    /// Evicts least recently used entries until at most `target` bytes remain; returns how
    /// many were removed and how many bytes they held.
    pub fn gc(db: &sled::Db, target: u64) -> Result<(u64, u64), sled::Error> {
        evict(db, target)
    }
}

fn check_format(db: &sled::Db) -> Result<(), String> {
    let meta = db.open_tree(META).map_err(|e| e.to_string())?;
    match meta.get("format").map_err(|e| e.to_string())? {
        None => {
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
    let cur = counter(t, name)?;
    let new = (cur as i64).saturating_add(delta).max(0) as u64;
    t.insert(name, &new.to_le_bytes())?;
    Ok(())
}

fn evict(db: &sled::Db, target: u64) -> Result<(u64, u64), sled::Error> {
    let mut records = LocalStore::records(db)?;
    let mut total: u64 = records.iter().map(|r| r.size).sum();
    records.sort_by_key(|r| r.accessed);
    let mut removed = (0, 0);
    for r in records {
        if total <= target {
            break;
        }
        if LocalStore::remove(db, &r.key)? {
            total -= r.size;
            removed.0 += 1;
            removed.1 += r.size;
        }
    }
    db.open_tree(META)?.insert("bytes", &total.to_le_bytes())?;
    Ok(removed)
}
