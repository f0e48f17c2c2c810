//! The store's catalogue, in sled (`db/`): last-access stamps for eviction, the statistics, the
//! approximate size, the store's format version. The only file of kache that names sled; what
//! the rest of the store does with the catalogue goes through [`Catalogue`]'s methods, inside
//! [`LocalStore::with`] or [`LocalStore::try_with`].
//!
//! sled takes an exclusive lock on its folder, and cargo runs build scripts in parallel, so no
//! process holds it across a compile: every catalogue operation opens it, does its work and
//! closes it (threads of one process share the open handle). Waiting for another process's lock
//! is bounded; past the deadline the operation reports [`StoreError::Busy`]. A catalogue that
//! cannot be opened is moved aside and recreated.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::{LocalStore, Record, STORE_FORMAT, StoreError, now_secs};
use crate::cache::counters::{Counter, Counts};
use crate::cache::key::Key;

const ACCESS: &str = "access";
const STATS: &str = "stats";
const META: &str = "meta";

impl From<sled::Error> for StoreError {
    fn from(e: sled::Error) -> StoreError {
        StoreError::Failed(e.to_string())
    }
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

/// The open catalogue, handed to the work done inside [`LocalStore::with`].
pub(super) struct Catalogue {
    db: Arc<sled::Db>,
}

impl LocalStore {
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
            Ok(()) => crate::logging::warning!(
                "the cache store at {} could not be opened ({why}); moved it to {} and started a new one",
                self.db_path.display(),
                aside.display()
            ),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&self.db_path);
                let _ = std::fs::remove_file(&self.db_path);
                crate::logging::warning!("the cache store at {} could not be opened ({why}); started a new one", self.db_path.display());
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
    pub(super) fn with<R>(&self, f: impl FnOnce(&Catalogue) -> Result<R, StoreError>) -> Result<R, StoreError> {
        self.with_wait(self.lock_timeout, f)
    }

    /// [`with`](Self::with) without waiting: [`StoreError::Busy`] at once if another process
    /// has the catalogue open. For bookkeeping that can be parked instead
    /// ([`park`](Self::park)): a writer never waits for another's catalogue work.
    pub(super) fn try_with<R>(&self, f: impl FnOnce(&Catalogue) -> Result<R, StoreError>) -> Result<R, StoreError> {
        self.with_wait(Duration::ZERO, f)
    }

    fn with_wait<R>(&self, wait: Duration, f: impl FnOnce(&Catalogue) -> Result<R, StoreError>) -> Result<R, StoreError> {
        let was_dirty = DIRTY.with(|d| d.replace(false));
        let db = match self.handle(wait) {
            Ok(db) => db,
            Err(e) => {
                DIRTY.with(|d| d.set(was_dirty));
                return Err(e);
            }
        };
        let catalogue = Catalogue { db };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&catalogue)));
        let r = match r {
            Ok(r) => r,
            Err(_) => Err(StoreError::Failed("the store library panicked".into())),
        };
        if DIRTY.with(|d| d.replace(was_dirty)) {
            let _ = catalogue.db.flush();
        }
        drop(catalogue);
        r
    }
}

impl Catalogue {
    /// Adds counter deltas to the persistent statistics.
    pub(super) fn add_stats(&self, deltas: &Counts) -> Result<(), StoreError> {
        let t = self.db.open_tree(STATS)?;
        for (c, d) in deltas.iter() {
            if d != 0 {
                add_counter(&t, c.name(), d.min(i64::MAX as u64) as i64)?;
            }
        }
        Ok(())
    }

    /// The persistent statistics (names this build does not count are left out).
    pub(super) fn stats(&self) -> Result<Counts, StoreError> {
        let mut out = Counts::default();
        for kv in self.db.open_tree(STATS)?.iter() {
            let (k, v) = kv?;
            if let Some(c) = std::str::from_utf8(&k).ok().and_then(Counter::from_name) {
                out.add(c, read_u64(&v));
            }
        }
        Ok(out)
    }

    /// Clears the statistics.
    pub(super) fn reset_stats(&self) -> Result<(), StoreError> {
        mark_dirty();
        Ok(self.db.open_tree(STATS)?.clear()?)
    }

    /// Records a stored entry: its access stamp, and the change `delta` of the store's size.
    pub(super) fn record_put(&self, key: &Key, delta: i64, when: u64) -> Result<(), StoreError> {
        mark_dirty();
        add_counter(&self.db.open_tree(META)?, "bytes", delta)?;
        self.db.open_tree(ACCESS)?.insert(key.0, &when.to_le_bytes())?;
        Ok(())
    }

    /// Forgets a removed entry: its access stamp, and its `size` if its file was there.
    pub(super) fn record_remove(&self, key: &Key, size: Option<u64>) -> Result<(), StoreError> {
        mark_dirty();
        self.db.open_tree(ACCESS)?.remove(key.0)?;
        if let Some(s) = size {
            add_counter(&self.db.open_tree(META)?, "bytes", -(s as i64))?;
        }
        Ok(())
    }

    /// Records accesses, writing a stamp only if the stored one is older than an hour (a hit
    /// does not write every time).
    pub(super) fn touch(&self, keys: &[Key]) -> Result<(), StoreError> {
        let access = self.db.open_tree(ACCESS)?;
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
    pub(super) fn fill_access(&self, records: &mut [Record]) -> Result<(), StoreError> {
        let access = self.db.open_tree(ACCESS)?;
        for r in records {
            if let Some(v) = access.get(r.key.0)? {
                r.accessed = read_u64(&v);
            }
        }
        Ok(())
    }

    /// The store's size as the catalogue counts it.
    pub(super) fn size(&self) -> Result<u64, StoreError> {
        counter(&self.db.open_tree(META)?, "bytes")
    }

    /// Sets the store's size (after counting the files), and forgets the access stamps of
    /// `removed` entries.
    pub(super) fn resync(&self, size: u64, removed: &[Key]) -> Result<(), StoreError> {
        mark_dirty();
        let access = self.db.open_tree(ACCESS)?;
        for k in removed {
            access.remove(k.0)?;
        }
        self.db.open_tree(META)?.insert("bytes", &size.to_le_bytes())?;
        Ok(())
    }

    /// Forgets every entry: no stamps, size 0.
    pub(super) fn clear_entries(&self) -> Result<(), StoreError> {
        mark_dirty();
        self.db.open_tree(ACCESS)?.clear()?;
        self.db.open_tree(META)?.insert("bytes", &0u64.to_le_bytes())?;
        Ok(())
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

fn counter(t: &sled::Tree, name: &str) -> Result<u64, StoreError> {
    Ok(t.get(name)?.map(|v| read_u64(&v)).unwrap_or(0))
}

fn add_counter(t: &sled::Tree, name: &str, delta: i64) -> Result<(), StoreError> {
    mark_dirty();
    let cur = counter(t, name)?;
    let new = (cur as i64).saturating_add(delta).max(0) as u64;
    t.insert(name, &new.to_le_bytes())?;
    Ok(())
}
