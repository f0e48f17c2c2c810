//! The persistent kernel cache: content keys, an in-process memory tier, the local store, an
//! optional Redis tier, statistics, and the operations the `kache` command offers on them
//! ([`ops`], [`archive`], [`LocalStore`]'s `gc`, `clear` and `reset_stats`).
//!
//! A cache failure never fails a compile: an entry that does not verify is counted and treated
//! as a miss, a store that cannot be opened is recreated, a store held by another process past
//! the lock timeout is skipped (counted as `busy`), an unreachable remote is skipped.

pub mod archive;
pub mod atomic;
mod books;
mod counters;
pub mod envelope;
pub mod key;
pub mod mac;
pub mod ops;
#[cfg(feature = "remote")]
pub mod remote;
#[cfg(not(feature = "remote"))]
#[path = "remote_disabled.rs"]
pub mod remote;
pub mod store;
pub mod trust;
pub mod tuning;

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

pub use counters::{Counter, Counters, Counts, Stats};
pub use envelope::{ArtifactKind, Meta};
pub use key::{
    Assembler, CubinInputs, Derivation, Key, KeyInputs, Manifest, ManifestInputs, ManifestKernel, ManifestSite, TUNING_COMPONENTS,
    Toolchain, TuningInputs, derive, derive_cubin, derive_manifest, derive_record, derive_tuning, encode_capture, encode_globals,
    encode_root,
};
pub use store::{Batch, LocalStore, Record, StoreError};
pub use tuning::{RecordedCandidate, TuningRecord};

use crate::library::Persistable;

/// A verified cache entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its envelope fields.
    pub meta: Meta,
    /// The artifact.
    pub payload: Arc<[u8]>,
}

impl Entry {
    /// Serialised with its envelope.
    pub fn encode(&self) -> Vec<u8> {
        envelope::encode(&self.meta, &self.payload)
    }
}

/// Which tier answered a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Tier {
    /// This process's memory.
    Memory,
    /// The local store (entry files on disk).
    Local,
    /// The remote (Redis) store.
    Remote,
}

/// The answer of a lookup.
pub enum Lookup {
    /// A verified entry.
    Hit(Arc<Entry>, Tier),
    /// A live in-process object registered with [`Cache::pin`] (kernels that may not be
    /// persisted).
    Pinned(Arc<dyn Any + Send + Sync>),
    /// Nothing usable.
    Miss,
}

enum MemEntry {
    Entry(Arc<Entry>),
    /// Read from a store ahead of its lookup: the first lookup reports that store's tier.
    Prefetched(Arc<Entry>, Tier),
    Pinned(Weak<dyn Any + Send + Sync>),
}

/// Cache settings (see `Config` for where they come from).
#[derive(Clone, Debug)]
pub struct CacheConfig {
    /// The cache folder; `None` keeps everything in memory.
    pub dir: Option<PathBuf>,
    /// Size limit of the local store in bytes.
    pub max_size: u64,
    /// Longest wait for another process's lock on the store.
    pub lock_timeout: Duration,
    /// The remote tier.
    pub remote: Option<remote::RemoteConfig>,
    /// Threads that write a batch's entry files at once ([`Cache::store_many`]; 0 or 1: the
    /// calling thread alone). Creating a file is mostly the file system's time, so a batch of
    /// compiles run on several threads writes its entries on as many.
    pub write_threads: usize,
}

impl CacheConfig {
    /// The default cache folder: `$KACHE_DIR`, else the platform cache folder
    /// (`~/.cache/kache` on Linux).
    pub fn default_dir() -> Option<PathBuf> {
        match std::env::var_os("KACHE_DIR") {
            Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
            _ => dirs::cache_dir().map(|d| d.join("kache")),
        }
    }
}

/// The kernel cache: memory, local store, remote.
pub struct Cache {
    config: CacheConfig,
    memory: Mutex<HashMap<Key, MemEntry>>,
    local: Option<LocalStore>,
    /// The local store's bookkeeping, written off the compile path.
    books: Option<books::Books>,
    remote: Option<remote::RemoteStore>,
    counters: Arc<Counters>,
    touched: Arc<Mutex<Vec<Key>>>,
    warned: Mutex<HashSet<String>>,
    reasons: Mutex<Vec<String>>,
    /// Front-end records waiting for their writer ([`Cache::store_record`]).
    records: Arc<Mutex<RecordQueue>>,
}

/// Front-end records waiting to be written, and the thread writing them.
#[derive(Default)]
struct RecordQueue {
    pending: Vec<(Key, Vec<u8>)>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Whether the writer still takes from `pending` (it clears this, under the lock, when it
    /// finds nothing left, then ends).
    running: bool,
}

/// Writes a front-end record into the store (losing one costs the next process a front end).
fn write_record(store: &LocalStore, key: &Key, bytes: &[u8]) {
    if let Err(e) = store.write_manifest(key, bytes) {
        crate::logging::debug!("front-end record {key} could not be written ({e}): the front end runs next time");
    }
}

/// The writer thread: writes what is queued until nothing is.
fn write_records(queue: &Mutex<RecordQueue>, store: &LocalStore) {
    loop {
        let batch = {
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.pending.is_empty() {
                q.running = false;
                return;
            }
            std::mem::take(&mut q.pending)
        };
        for (key, bytes) in batch {
            write_record(store, &key, &bytes);
        }
    }
}

impl Cache {
    /// Opens (lazily) the stores described by `config`.
    pub fn new(config: CacheConfig) -> crate::Result<Cache> {
        let local = match &config.dir {
            Some(d) => match LocalStore::new(d, config.lock_timeout, config.max_size) {
                Ok(s) => Some(s),
                Err(e) => {
                    crate::logging::warning!("{e}; continuing without the local cache");
                    None
                }
            },
            None => None,
        };
        let remote = match &config.remote {
            Some(rc) => Some(remote::RemoteStore::new(rc.clone())?),
            None => None,
        };
        let counters = Arc::new(Counters::default());
        let touched = Arc::new(Mutex::new(Vec::new()));
        let books = local.as_ref().map(|l| books::Books::new(l.clone(), counters.clone(), touched.clone()));
        Ok(Cache {
            config,
            memory: Mutex::new(HashMap::new()),
            local,
            books,
            remote,
            counters,
            touched,
            warned: Mutex::new(HashSet::new()),
            reasons: Mutex::new(Vec::new()),
            records: Arc::default(),
        })
    }

    /// A cache that keeps everything in this process's memory.
    pub fn in_memory() -> Cache {
        Cache {
            config: CacheConfig { dir: None, max_size: 0, lock_timeout: Duration::ZERO, remote: None, write_threads: 1 },
            memory: Mutex::new(HashMap::new()),
            local: None,
            books: None,
            remote: None,
            counters: Arc::default(),
            touched: Arc::default(),
            warned: Mutex::new(HashSet::new()),
            reasons: Mutex::new(Vec::new()),
            records: Arc::default(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The local store, if any.
    pub fn local(&self) -> Option<&LocalStore> {
        self.local.as_ref()
    }

    /// The remote store, if any.
    pub fn remote(&self) -> Option<&remote::RemoteStore> {
        self.remote.as_ref()
    }

    pub(crate) fn count(&self, c: Counter, v: u64) {
        self.counters.add(c, v);
    }

    /// Prints `msg` once per process for each distinct `id`.
    pub fn warn_once(&self, id: &str, msg: &str) {
        let mut w = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if w.insert(id.to_string()) {
            crate::logging::warning!("{msg}");
        }
    }

    fn memory_get(&self, key: &Key) -> Option<Lookup> {
        let mut mem = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        match mem.get(key) {
            Some(MemEntry::Entry(e)) => Some(Lookup::Hit(e.clone(), Tier::Memory)),
            Some(MemEntry::Prefetched(e, tier)) => {
                let (e, tier) = (e.clone(), *tier);
                mem.insert(*key, MemEntry::Entry(e.clone()));
                self.touched.lock().unwrap_or_else(|e| e.into_inner()).push(*key);
                Some(Lookup::Hit(e, tier))
            }
            Some(MemEntry::Pinned(w)) => match w.upgrade() {
                Some(a) => Some(Lookup::Pinned(a)),
                None => {
                    mem.remove(key);
                    None
                }
            },
            None => None,
        }
    }

    fn verify(&self, key: &Key, bytes: &[u8]) -> Option<Arc<Entry>> {
        match envelope::decode(bytes, Some(key)) {
            Ok((meta, payload)) => Some(Arc::new(Entry { meta, payload: payload.into() })),
            Err(e) => {
                crate::logging::debug!("entry {key} does not verify ({e}): a miss");
                self.count(Counter::BadEntries, 1);
                None
            }
        }
    }

    /// Looks `key` up in memory, then the local store, then the remote (backfilling the local
    /// store). Bad entries are counted, removed and reported as misses.
    pub fn lookup(&self, key: &Key) -> Lookup {
        self.lookup_many(std::slice::from_ref(key)).pop().unwrap_or(Lookup::Miss)
    }

    /// [`lookup`](Self::lookup) for several keys with one opening of the store and one round
    /// trip to the remote (for the keys the local tiers miss).
    pub fn lookup_many(&self, keys: &[Key]) -> Vec<Lookup> {
        self.lookup_prefetch(keys, &[])
    }

    /// Looks up a cubin: as [`lookup`](Self::lookup), but counted as the cubin tier's own
    /// figures (`cubin_hits`, `cubin_misses`), so that a kernel counts one lookup however many
    /// tiers of code it has.
    pub fn lookup_cubin(&self, key: &Key) -> Lookup {
        self.lookup_counted(std::slice::from_ref(key), &[], Counting::Cubin).pop().unwrap_or(Lookup::Miss)
    }

    /// Looks up direct mode's manifest `key` in the memory tier, then the local store (never
    /// the remote: manifests are local only); one that does not verify is counted in
    /// `bad_entries` and removed. Counted nowhere else: the
    /// request counts in `direct_hits` or `direct_misses`, its kernels' lookups in `hits`.
    pub fn lookup_manifest(&self, key: &Key) -> Option<Arc<Entry>> {
        let e = match self.memory_get(key) {
            Some(Lookup::Hit(e, _)) => e,
            Some(Lookup::Pinned(_)) => return None,
            Some(Lookup::Miss) | None => {
                let local = self.local.as_ref()?;
                let bytes = local.get_manifest(key)?;
                let Some(e) = self.verify(key, &bytes) else {
                    // Counted by `verify`; removed so the next full compile rewrites it.
                    local.remove_manifest(key);
                    return None;
                };
                self.remember(*key, e.clone());
                e
            }
        };
        (e.meta.kind == ArtifactKind::Manifest).then_some(e)
    }

    /// [`lookup_cubin`](Self::lookup_cubin) for several keys with one opening of the store and
    /// one round trip to the remote.
    pub fn lookup_cubins(&self, keys: &[Key]) -> Vec<Lookup> {
        self.lookup_counted(keys, &[], Counting::Cubin)
    }

    /// Looks up `keys`, and in the same opening of the local store loads `prefetch` into the
    /// memory tier without counting them (a later lookup of one of them counts then).
    pub fn lookup_prefetch(&self, keys: &[Key], prefetch: &[Key]) -> Vec<Lookup> {
        self.lookup_counted(keys, prefetch, Counting::Kernel)
    }

    fn lookup_counted(&self, keys: &[Key], prefetch: &[Key], counting: Counting) -> Vec<Lookup> {
        let counted = keys.len();
        let keys: Vec<Key> = keys.iter().chain(prefetch).copied().collect();
        let keys = &keys[..];
        let mut out: Vec<Option<Lookup>> = keys.iter().map(|k| self.memory_get(k)).collect();
        let missing: Vec<usize> = (0..keys.len()).filter(|i| out[*i].is_none()).collect();
        // The local store's entries are files: reading one needs no lock and no catalogue.
        if let Some(local) = &self.local {
            for i in missing {
                let Some(bytes) = local.get(&keys[i]) else { continue };
                match self.verify(&keys[i], &bytes) {
                    Some(e) if i >= counted => {
                        self.memory.lock().unwrap_or_else(|e| e.into_inner()).insert(keys[i], MemEntry::Prefetched(e, Tier::Local));
                    }
                    Some(e) => {
                        self.remember(keys[i], e.clone());
                        self.touched.lock().unwrap_or_else(|e| e.into_inner()).push(keys[i]);
                        out[i] = Some(Lookup::Hit(e, Tier::Local));
                    }
                    // Counted by `verify`; removed so it is recompiled and rewritten.
                    None => {
                        local.remove_object(&keys[i]);
                    }
                }
            }
        }
        out.truncate(counted);
        let keys = &keys[..counted];
        if let Some(remote) = &self.remote {
            // Every key that missed locally, in one round trip.
            let missing: Vec<usize> = (0..keys.len()).filter(|i| out[*i].is_none()).collect();
            let asked: Vec<Key> = missing.iter().map(|i| keys[*i]).collect();
            let mut backfill = Vec::new();
            for (i, found) in missing.into_iter().zip(remote.get_many(&self.counters, &asked)) {
                if let Some(bytes) = found
                    && let Some(e) = self.verify(&keys[i], &bytes)
                {
                    self.remember(keys[i], e.clone());
                    backfill.push((keys[i], bytes));
                    out[i] = Some(Lookup::Hit(e, Tier::Remote));
                }
            }
            if let (Some(local), false) = (&self.local, backfill.is_empty()) {
                self.write_local(local, &backfill);
            }
        }
        out.into_iter()
            .zip(keys)
            .map(|(o, key)| {
                self.count_lookup(key, o.as_ref(), counting);
                o.unwrap_or(Lookup::Miss)
            })
            .collect()
    }

    /// Counts one lookup's outcome in the figures `counting` names.
    fn count_lookup(&self, key: &Key, o: Option<&Lookup>, counting: Counting) {
        match (o, counting) {
            (Some(Lookup::Hit(e, tier)), Counting::Kernel) => {
                crate::logging::debug!("hit {key} ({tier:?}): {}, {} bytes", e.meta.kernel, e.payload.len());
                self.count(Counter::Hits, 1);
                self.count(
                    match tier {
                        Tier::Memory => Counter::HitsMemory,
                        Tier::Local => Counter::HitsLocal,
                        Tier::Remote => Counter::HitsRemote,
                    },
                    1,
                );
                self.count(Counter::CompileMsSaved, e.meta.compile_ms as u64);
            }
            (Some(Lookup::Hit(e, tier)), Counting::Cubin) => {
                crate::logging::debug!("cubin hit {key} ({tier:?}): {}, {} bytes", e.meta.kernel, e.payload.len());
                self.count(Counter::CubinHits, 1);
                self.count(Counter::CompileMsSaved, e.meta.compile_ms as u64);
            }
            (Some(_), Counting::Kernel) => {
                crate::logging::debug!("hit {key} (Memory): a kernel kept in this process only");
                self.count(Counter::Hits, 1);
                self.count(Counter::HitsMemory, 1);
            }
            (Some(_), Counting::Cubin) => self.count(Counter::CubinHits, 1),
            (Some(_), Counting::Quiet) => crate::logging::debug!("found {key}"),
            (None, Counting::Quiet) => crate::logging::debug!("not found: {key}"),
            (None, Counting::Kernel) => {
                crate::logging::debug!("miss {key}");
                self.count(Counter::Misses, 1);
            }
            (None, Counting::Cubin) => {
                crate::logging::debug!("cubin miss {key}");
                self.count(Counter::CubinMisses, 1);
            }
        }
    }

    /// Counts `lookup` of a kernel's code found without counting ([`lookup_quiet`](Self::lookup_quiet)),
    /// as [`lookup`](Self::lookup) counts it.
    pub(crate) fn count_kernel_lookup(&self, key: &Key, lookup: &Lookup) {
        self.count_lookup(key, Some(lookup), Counting::Kernel);
    }

    /// Looks `keys` up as [`lookup_many`](Self::lookup_many) does, counting nothing but bad
    /// entries: direct mode counts its kernels' hits only once all of them are found.
    pub(crate) fn lookup_quiet(&self, keys: &[Key]) -> Vec<Lookup> {
        self.lookup_counted(keys, &[], Counting::Quiet)
    }

    /// Writes encoded entries to the local store: each entry's file now (atomically: visible
    /// whole or not at all, to this process and every other), their bookkeeping later, off the
    /// compile path (see `books.rs`). Writers never wait for the catalogue.
    fn write_local(&self, local: &LocalStore, encoded: &[(Key, Vec<u8>)]) {
        let mut written = Vec::with_capacity(encoded.len());
        let results = crate::parallel::map(self.config.write_threads, encoded, |(k, b)| local.write_entry(k, b));
        for ((k, b), r) in encoded.iter().zip(results) {
            match r {
                Ok(Ok(delta)) => {
                    written.push((*k, delta, store::now_secs()));
                    self.count(Counter::BytesWritten, b.len() as u64);
                }
                Ok(Err(e)) => self.warn_once(
                    "entry-write",
                    &format!("a cache entry could not be written ({}: {e}); continuing without it", local.objects_dir().display()),
                ),
                Err(panic) => self.warn_once("entry-write", &format!("writing a cache entry panicked ({panic}); continuing without it")),
            }
        }
        if let Some(books) = &self.books {
            books.wrote(written);
        }
    }

    fn remember(&self, key: Key, e: Arc<Entry>) {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key, MemEntry::Entry(e));
    }

    /// Persists an entry (memory, local store, remote). The [`Persistable`] proves the library
    /// it was compiled from references no device array.
    pub fn store(&self, proof: Persistable<'_>, entry: Entry) {
        let _ = proof.library();
        self.store_many(vec![(proof, entry)]);
    }

    /// Keeps an entry in this process's memory tier only, for a kernel whose module opted out
    /// of persisting (`Module::persist(false)`): later lookups in this process hit it, nothing
    /// is written to the local store or the remote.
    pub fn store_in_memory(&self, proof: Persistable<'_>, entry: Entry) {
        let _ = proof.library();
        self.remember(entry.meta.key, Arc::new(entry));
    }

    /// [`store`](Self::store) for several entries with one opening of the store and one round
    /// trip to the remote.
    pub fn store_many(&self, items: Vec<(Persistable<'_>, Entry)>) {
        // One file per key, even where a batch asked for a kernel twice (the files are written
        // on several threads at once).
        let mut seen = std::collections::HashSet::new();
        let encoded: Vec<(Key, Vec<u8>)> =
            items.iter().filter(|(_, e)| seen.insert(e.meta.key)).map(|(_, e)| (e.meta.key, e.encode())).collect();
        for (_, e) in &items {
            crate::logging::debug!("store {} ({:?}): {}, {} bytes", e.meta.key, e.meta.kind, e.meta.kernel, e.payload.len());
        }
        for (_, e) in items {
            self.remember(e.meta.key, Arc::new(e));
        }
        if let Some(local) = &self.local {
            self.write_local(local, &encoded);
        }
        if let Some(remote) = &self.remote {
            remote.put_many(&self.counters, &encoded);
        }
    }

    /// Looks up the tuning result `key` in memory, the local store, then the remote
    /// (backfilling the local store), and checks it: a payload that does not decode and verify
    /// against `key` ([`TuningRecord::decode`]), or that `expect` refuses (its candidates are not
    /// the ones asked about), is a bad entry, removed and a miss. Counted in `tuning_hits` or,
    /// where `count_miss`, `tuning_misses`; never in `hits`. (A lookup whose miss another lookup
    /// of the same launch follows does not count it.)
    pub fn lookup_tuning(
        &self,
        key: &Key,
        expect: &dyn Fn(&TuningRecord) -> Result<(), String>,
        count_miss: bool,
    ) -> Option<(TuningRecord, Tier)> {
        let found = self.lookup_counted(std::slice::from_ref(key), &[], Counting::Quiet).pop();
        let hit = match found {
            Some(Lookup::Hit(e, tier)) => {
                let checked = match e.meta.kind {
                    ArtifactKind::Tuning => TuningRecord::decode(&e.payload, key).and_then(|r| expect(&r).map(|()| r)),
                    other => Err(format!("a {other:?} entry where a tuning result belongs")),
                };
                match checked {
                    Ok(r) => Some((r, tier)),
                    Err(why) => {
                        crate::logging::debug!("tuning result {key} does not verify ({why}): a miss");
                        self.count(Counter::BadEntries, 1);
                        self.memory.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
                        if let Some(local) = &self.local {
                            local.remove_object(key);
                        }
                        None
                    }
                }
            }
            _ => None,
        };
        match &hit {
            Some((r, tier)) => {
                crate::logging::debug!("tuning hit {key} ({tier:?}): {}", r.describe(r.chosen_config()));
                self.count(Counter::TuningHits, 1);
            }
            None if count_miss => {
                crate::logging::debug!("tuning miss {key}");
                self.count(Counter::TuningMisses, 1);
            }
            None => crate::logging::debug!("not found: tuning result {key}"),
        }
        hit
    }

    /// Stores a tuning result (memory, local store, remote). It holds configurations and
    /// timings, never code and never a device pointer, so it needs no [`Persistable`].
    pub fn store_tuning(&self, meta: Meta, record: &TuningRecord) {
        let entry = Entry { meta, payload: record.encode().into() };
        let key = entry.meta.key;
        let encoded = vec![(key, entry.encode())];
        crate::logging::debug!("store tuning result {key}: {}, {}", entry.meta.kernel, record.describe(record.chosen_config()));
        self.remember(key, Arc::new(entry));
        if let Some(local) = &self.local {
            self.write_local(local, &encoded);
        }
        if let Some(remote) = &self.remote {
            remote.put_many(&self.counters, &encoded);
        }
    }

    /// Stores direct mode's manifest. It holds keys and kernel interfaces, never code and never
    /// a device pointer, so it needs no [`Persistable`]; the JIT records one only for kernels
    /// whose entries it stored.
    pub(crate) fn store_manifest(&self, entry: Entry) {
        let key = entry.meta.key;
        let bytes = entry.encode();
        self.remember(key, Arc::new(entry));
        if let Some(local) = &self.local
            && let Err(e) = local.write_manifest(&key, &bytes)
        {
            crate::logging::debug!("manifest {key} could not be written ({e}): direct mode misses it next time");
        }
    }

    /// Stores a front-end record (`jit/records.rs`: what lets a load skip the parse and a kernel
    /// the check): remembered at once, written into the local store off the calling thread, by
    /// one writer that runs while records are queued (here, if no thread can start). A record
    /// only spares the next process the front end, so one lost to a crash is a miss; the
    /// cache's drop waits for the writer.
    pub(crate) fn store_record(&self, entry: Entry) {
        let key = entry.meta.key;
        let bytes = entry.encode();
        self.remember(key, Arc::new(entry));
        let Some(local) = &self.local else { return };
        let mut q = self.records.lock().unwrap_or_else(|e| e.into_inner());
        q.pending.push((key, bytes));
        if q.running {
            return;
        }
        // The last writer found nothing left and is ending (or none ran): a new one.
        if let Some(done) = q.writer.take() {
            let _ = done.join();
        }
        let (queue, store) = (self.records.clone(), local.clone());
        match std::thread::Builder::new().name("kache-records".into()).spawn(move || write_records(&queue, &store)) {
            Ok(h) => {
                q.running = true;
                q.writer = Some(h);
            }
            Err(_) => {
                let pending = std::mem::take(&mut q.pending);
                drop(q);
                for (key, bytes) in pending {
                    write_record(local, &key, &bytes);
                }
            }
        }
    }

    /// Keeps a kernel that may not be persisted in this process's memory only, keyed by its
    /// key (which includes the identity of the device arrays it captured). The cache holds it
    /// weakly: it lives as long as the kernel does.
    pub fn pin(&self, key: Key, object: &Arc<dyn Any + Send + Sync>, reason: String) {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key, MemEntry::Pinned(Arc::downgrade(object)));
        self.count(Counter::NotPersisted, 1);
        let mut r = self.reasons.lock().unwrap_or_else(|e| e.into_inner());
        if !r.contains(&reason) {
            r.push(reason);
        }
    }

    /// Forgets the memory tier's entry for a pinned kernel once nothing holds the kernel any
    /// more (called as the kernel is dropped; an entry pinned again since is kept).
    pub fn unpin(&self, key: &Key) {
        let mut mem = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(MemEntry::Pinned(w)) = mem.get(key)
            && w.strong_count() == 0
        {
            mem.remove(key);
        }
    }

    /// The number of entries in the memory tier (pinned kernels included).
    pub fn memory_entries(&self) -> usize {
        self.memory.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Writes this process's bookkeeping (counters, access stamps, the records of the entries
    /// it wrote) into the store's catalogue now, or parks it if another process has the
    /// catalogue open. The cache does this by itself, off the compile path, after writes and
    /// when it is dropped.
    pub fn flush_stats(&self) {
        if let Some(books) = &self.books {
            books.settle();
        }
    }

    /// Zeroes the statistics of the local store (waiting for its catalogue like
    /// [`stats`](Self::stats)) and this process's counts.
    pub fn reset_stats(&self) -> Result<(), StoreError> {
        self.flush_stats();
        self.counters.take();
        match &self.local {
            Some(local) => local.reset_stats(),
            None => Ok(()),
        }
    }

    /// Statistics: the store's (all processes) plus this process's unflushed counts. When the
    /// catalogue cannot be had (another process holds it past the lock timeout), what can be
    /// read without it: the number of entries and their size from the files, and the counts
    /// parked in files; [`Stats::unavailable`] then says what is missing and why.
    pub fn stats(&self) -> Stats {
        let mut counts = Counts::default();
        let mut entries = 0;
        let mut bytes = 0;
        let mut catalogue_bytes = 0;
        let mut unavailable = None;
        if let Some(local) = &self.local {
            // Entries this process wrote reach the catalogue first (the size limit with them).
            self.flush_stats();
            let deltas = self.counters.take();
            catalogue_bytes = local.catalogue_size();
            match local.statistics(&deltas) {
                Ok((s, n, b)) => {
                    counts = s;
                    entries = n;
                    bytes = b;
                }
                Err(e) => {
                    self.counters.restore(&deltas);
                    let (parked, files, n, b) = local.statistics_without_catalogue();
                    counts = parked;
                    entries = n;
                    bytes = b;
                    unavailable = Some(format!(
                        "{e}: the counters kept in the catalogue could not be read; those shown are the {files} parked file{} and this process's",
                        if files == 1 { "" } else { "s" }
                    ));
                }
            }
        }
        counts.add_all(&self.counters.peek());
        let mut s = Stats::new(&counts, entries, bytes, catalogue_bytes, self.reasons.lock().unwrap_or_else(|e| e.into_inner()).clone());
        s.unavailable = unavailable;
        s
    }
}

/// Which figures a lookup counts in.
#[derive(Clone, Copy)]
enum Counting {
    /// A kernel's code (PTX or host code): `hits`, `misses`.
    Kernel,
    /// The cubin tier: `cubin_hits`, `cubin_misses`.
    Cubin,
    /// Nothing but bad entries: direct mode's manifests (the request counts in `direct_hits`
    /// or `direct_misses`), and its kernels' lookups until all of them are found.
    Quiet,
}

impl Drop for Cache {
    /// Writes what bookkeeping is left: into the catalogue if this process wrote entries since
    /// it last did, else parked in a file (a process that only had hits never opens the
    /// catalogue).
    fn drop(&mut self) {
        // The front-end records queued: written before the process goes (a writer takes every
        // record queued while it runs, and none is queued without one running).
        let writer = self.records.lock().unwrap_or_else(|e| e.into_inner()).writer.take();
        if let Some(w) = writer {
            let _ = w.join();
        }
        if let Some(books) = &self.books {
            books.finish();
        }
    }
}
