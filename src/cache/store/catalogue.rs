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
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::{LocalStore, Record, STORE_FORMAT, StoreError, now_secs};
use crate::cache::atomic;
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

/// The `conf` file sled 0.34 keeps in a catalogue's folder: the storage parameters kache opens
/// it with, and their crc32. sled writes it in place, in two writes, and reads it before it takes
/// its lock: a process that read it while another was creating the catalogue, or after a writer
/// was killed between the two writes, found it torn, sled called the whole catalogue corrupt, and
/// it was moved aside (4 times in 500 trials of the fault-injection run). So kache writes it
/// itself, whole, by renaming, under the catalogue's lock, before sled reads it; sled then never
/// writes it. A test checks these are the bytes sled writes.
const SLED_CONF: &[u8] = b"segment_size: 524288\nuse_compression: false\nversion: 0.34\n\x76\x19\x51\xc1";

/// How an attempt to open the catalogue failed.
enum OpenError {
    /// Another process has it open.
    Locked,
    /// The machine's fault, not the catalogue's (a full disk, no permission, a read-only file
    /// system): the catalogue is left where it is.
    Environment(String),
    /// The catalogue itself cannot be used.
    Broken(String),
}

/// Whether an IO error is the environment's (the catalogue may be healthy) rather than damage.
fn environmental(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        StorageFull
            | QuotaExceeded
            | PermissionDenied
            | ReadOnlyFilesystem
            | FileTooLarge
            | OutOfMemory
            | Interrupted
            | TimedOut
            | ResourceBusy
    ) || matches!(
        e.raw_os_error(),
        Some(
            libc::ENOSPC | libc::EDQUOT | libc::EROFS | libc::EACCES | libc::EPERM | libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EIO
        )
    )
}

fn classify(e: &sled::Error) -> OpenError {
    match e {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") || io.kind() == std::io::ErrorKind::WouldBlock => {
            OpenError::Locked
        }
        sled::Error::Io(io) if environmental(io) => OpenError::Environment(e.to_string()),
        _ => OpenError::Broken(e.to_string()),
    }
}

/// Takes sled's own lock (an exclusive `flock` on `db/db`) for as long as the returned file
/// lives; `Ok(None)` when another process (or another handle of this one) has it.
fn lock_catalogue(db_path: &Path, create: bool) -> std::io::Result<Option<File>> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(create);
    #[cfg(unix)]
    {
        // Created here rather than by sled, so it is writable by its owner only whatever the
        // umask (see `cache::trust`).
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o644);
    }
    let f = o.open(db_path.join("db"))?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

impl LocalStore {
    /// Makes the catalogue's folder safe for sled to open, under its lock: nothing but files and
    /// folders in it (no FIFO or link, which sled would open without looking), a whole `conf`
    /// (see [`SLED_CONF`]) and no snapshot left half-written by a killed process (sled takes
    /// the newest `snap.*` file as its snapshot, `.generating` ones included, and calls a torn
    /// one corruption). Nothing else can be writing them: sled writes both only under the lock.
    fn prepare(&self) -> Result<(), OpenError> {
        let env_or_broken = |e: std::io::Error| {
            if environmental(&e) {
                OpenError::Environment(format!("{}: {e}", self.db_path.display()))
            } else {
                OpenError::Broken(e.to_string())
            }
        };
        super::create_private_dir(&self.db_path.join("blobs")).map_err(env_or_broken)?;
        // sled opens its files without looking at what they are: a FIFO where its log, `conf` or
        // newest snapshot belongs held every process that opened the catalogue for ever, and a
        // link would be followed out of the store. Only files and folders belong here; anything
        // else (a FIFO, a device, a socket, a link) goes: the log before it is locked, the rest
        // under the lock. (A folder where a file belongs makes sled fail: moved aside as ever.)
        let odd = |t: std::fs::FileType| !t.is_file() && !t.is_dir();
        let log = self.db_path.join("db");
        if std::fs::symlink_metadata(&log).is_ok_and(|m| odd(m.file_type())) {
            std::fs::remove_file(&log).map_err(env_or_broken)?;
        }
        let Some(_lock) = lock_catalogue(&self.db_path, true).map_err(env_or_broken)? else { return Err(OpenError::Locked) };
        for e in std::fs::read_dir(&self.db_path).map_err(env_or_broken)?.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let half_written = name.starts_with("snap.") && name.ends_with(".generating");
            if half_written || (name != "db" && e.file_type().is_ok_and(odd)) {
                std::fs::remove_file(e.path()).map_err(env_or_broken)?;
            }
        }
        let conf = self.db_path.join("conf");
        let write = match crate::files::read_regular(&conf, 4 << 10, false) {
            // Missing, torn, or empty enough that sled would write it itself.
            Ok(b) => b != SLED_CONF && (SLED_CONF.starts_with(&b) || b.len() <= 8),
            Err(crate::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(crate::files::ReadError::Io(e)) => return Err(env_or_broken(e)),
            // Garbage of another kind: sled judges it (a folder, or a file too large for a conf).
            Err(_) => false,
        };
        if write {
            atomic::write_private(&conf, SLED_CONF).map_err(env_or_broken)?;
        }
        Ok(())
    }

    fn open_once(&self) -> Result<sled::Db, OpenError> {
        self.prepare()?;
        let path = self.db_path.clone();
        let r = std::panic::catch_unwind(move || sled::Config::new().path(path).flush_every_ms(None).cache_capacity(4 << 20).open());
        match r {
            Ok(Ok(db)) => {
                self.make_files_private();
                Ok(db)
            }
            Ok(Err(e)) => Err(classify(&e)),
            Err(_) => Err(OpenError::Broken("the store library panicked while opening it".into())),
        }
    }

    /// Takes write permission away from the group and others on the catalogue's files (sled
    /// creates its snapshots with the umask's permissions).
    fn make_files_private(&self) {
        #[cfg(unix)]
        for e in std::fs::read_dir(&self.db_path).into_iter().flatten().flatten() {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(m) = e.metadata()
                && m.is_file()
                && m.permissions().mode() & 0o022 != 0
            {
                let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(m.permissions().mode() & !0o022));
            }
        }
    }

    /// Moves a catalogue that cannot be used aside (keeping it for inspection) so a fresh one
    /// can be created. The entries stay: they verify themselves. Never one that another process
    /// has open (it opened it, so it is not broken): that is [`StoreError::Busy`].
    fn move_aside(&self, why: &str) -> Result<(), StoreError> {
        // Held across the rename, so nobody opens the catalogue meanwhile.
        let _lock = match lock_catalogue(&self.db_path, false) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => return Err(StoreError::Busy),
            // No lockable `db` file: garbage, or a catalogue never created.
            Err(_) => None,
        };
        let aside = self.db_path.with_file_name(format!("db.broken-{}-{}", now_secs(), std::process::id()));
        std::fs::rename(&self.db_path, &aside).map_err(|e| {
            StoreError::Failed(format!("the cache store at {} could not be opened ({why}), nor moved aside: {e}", self.db_path.display()))
        })?;
        crate::logging::warning!(
            "the cache store at {} could not be opened ({why}); moved it to {} and started a new one",
            self.db_path.display(),
            aside.display()
        );
        Ok(())
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
            if !recovered && std::fs::symlink_metadata(&self.db_path).is_ok_and(|m| !m.is_dir()) {
                self.move_aside("not a directory")?;
                recovered = true;
            }
            let failed = match self.open_once() {
                Ok(db) => match check_format(&db) {
                    Ok(()) => {
                        let db = Arc::new(db);
                        reg.insert(self.db_path.clone(), Arc::downgrade(&db));
                        return Ok(db);
                    }
                    Err(why) => {
                        drop(db);
                        OpenError::Broken(why)
                    }
                },
                Err(e) => e,
            };
            match failed {
                OpenError::Locked => {
                    if Instant::now() >= deadline {
                        return Err(StoreError::Busy);
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_millis(20));
                }
                OpenError::Environment(why) => return Err(StoreError::Failed(why)),
                OpenError::Broken(why) if !recovered => {
                    self.move_aside(&why)?;
                    recovered = true;
                }
                OpenError::Broken(why) => return Err(StoreError::Failed(why)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// kache writes sled's `conf` itself; these must stay the bytes sled writes.
    #[test]
    fn sled_conf_is_what_sled_writes() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path().join("db")).flush_every_ms(None).open().unwrap();
        drop(db);
        assert_eq!(std::fs::read(dir.path().join("db/conf")).unwrap(), SLED_CONF);
    }

    /// A `conf` torn by a killed writer, and a half-written snapshot, used to make sled call the
    /// catalogue corrupt (and kache move it aside); now they are repaired under the lock.
    #[test]
    fn a_torn_conf_and_a_torn_snapshot_do_not_make_a_catalogue_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path(), Duration::from_secs(5), 1 << 30).unwrap();
        let mut counts = Counts::default();
        counts.add(Counter::Hits, 3);
        store.with(|cat| cat.add_stats(&counts)).unwrap();
        // Another writer's stamp after the snapshot: the next opening writes a new snapshot.
        store.with(|cat| cat.add_stats(&counts)).unwrap();
        let db = store.db_path().to_path_buf();
        let snaps: Vec<PathBuf> =
            std::fs::read_dir(&db).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().contains("snap.")).collect();
        assert!(!snaps.is_empty(), "sled wrote no snapshot");
        // Killed between the two writes of `conf`; killed in the middle of a snapshot.
        std::fs::write(db.join("conf"), &SLED_CONF[..SLED_CONF.len() - 4]).unwrap();
        std::fs::write(db.join("snap.FFFFFFFFFFFFFFFF.generating"), b"half a snapshot").unwrap();
        let stats = store.with(|cat| cat.stats()).unwrap();
        assert_eq!(stats.get(Counter::Hits), 6);
        let aside: Vec<_> = std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("db.broken"))
            .collect();
        assert!(aside.is_empty(), "a healthy catalogue was moved aside");
        assert_eq!(std::fs::read(db.join("conf")).unwrap(), SLED_CONF);
    }
}
