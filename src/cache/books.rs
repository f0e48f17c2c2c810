//! The bookkeeping a process owes the local store's catalogue (each entry it wrote, with its
//! size and time; access stamps of entries it read; its counts), kept in memory and written
//! off the compile path: a compile writes its entry's file and returns, and a background thread
//! writes what has piled up in one catalogue transaction, at most once per [`THROTTLE`], so
//! that a program compiling kernels one at a time pays neither an opening of the catalogue nor
//! its disk flush per kernel. Whoever asks for figures ([`Books::settle`]) and the end of the
//! cache ([`Books::finish`]) write what is left, and so does the end of the process
//! (`exit`, or returning from `main`) for every cache still alive then: one held in a `static`,
//! or leaked, is never dropped.
//!
//! Nothing here makes an entry visible: its file is in place, atomically and verified on read,
//! before the store returns. What a crash loses is bookkeeping only (the size limit then counts
//! those entries at the next `gc`, which measures the files).

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Once, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::counters::{Counter, Counters};
use super::key::Key;
use super::store::{LocalStore, StoreError};

/// The shortest time between two transactions of the background thread: what a process
/// writes meanwhile goes into the next one.
pub(super) const THROTTLE: Duration = Duration::from_millis(100);

/// Past this many parked files, a process that only had hits folds them into one.
const FOLD_PARKED: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The bookkeeping of every cache of this process, for [`settle_at_exit`].
fn live() -> &'static Mutex<Vec<Weak<Shared>>> {
    static LIVE: OnceLock<Mutex<Vec<Weak<Shared>>>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default)
}

/// Run by the C library when the process exits: writes what every cache still alive owes, as
/// its drop would (after its background thread's transaction in progress, if any). Never
/// unwinds (it runs from C).
extern "C" fn settle_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let all = std::mem::take(&mut *lock(live()));
        for shared in all.iter().filter_map(Weak::upgrade) {
            shared.write(Destination::ParkedUnlessWritten);
        }
    });
}

/// Has [`settle_at_exit`] run at the process's exit, once per process.
fn settle_at_exit_once() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: atexit only stores the pointer; `settle_at_exit` is an `extern "C"` function
        // with no arguments that lives as long as the program and never unwinds into C.
        // Registration can fail only when the C library's table is full: then a cache that is
        // never dropped loses its last bookkeeping, as before, and nothing else.
        let _ = unsafe { libc::atexit(settle_at_exit) };
    });
}

/// What the background thread is asked to do.
#[derive(Default)]
struct Signal {
    /// There is bookkeeping to write.
    due: bool,
    /// The cache is going away: end.
    stop: bool,
}

/// What the cache and its background thread share.
struct Shared {
    store: LocalStore,
    counters: Arc<Counters>,
    /// Keys read from the local store since the last write (access stamps).
    touched: Arc<Mutex<Vec<Key>>>,
    /// Entries written since the last write: key, size change, unix seconds.
    written: Mutex<Vec<(Key, i64, u64)>>,
    /// Held while bookkeeping is taken and written, so that a caller of [`Books::settle`] finds
    /// the background thread's transaction complete.
    writing: Mutex<()>,
    signal: Mutex<Signal>,
    wake: Condvar,
    /// Whether a failure to record bookkeeping was reported (once per cache).
    warned: Mutex<bool>,
}

/// A cache's bookkeeping of its local store, and the thread that writes it.
pub(super) struct Books {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// Where [`Shared::write`] puts the bookkeeping.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// The catalogue, or parked files when another process has it open.
    Catalogue,
    /// Parked files unless entries were written: what a process that only had hits does, so
    /// that a hit never opens the catalogue.
    ParkedUnlessWritten,
}

impl Shared {
    /// Takes everything owed and writes it; what could not be written anywhere is given back.
    fn write(&self, into: Destination) {
        let _writing = lock(&self.writing);
        let written = std::mem::take(&mut *lock(&self.written));
        let mut touched = std::mem::take(&mut *lock(&self.touched));
        touched.sort();
        touched.dedup();
        let mut counts = self.counters.take();
        if written.is_empty() && touched.is_empty() && counts.is_zero() {
            return;
        }
        let catalogue = into == Destination::Catalogue || !written.is_empty();
        let outcome = if catalogue {
            match self.store.write_bookkeeping(&counts, &touched, &written) {
                Ok(()) => return,
                Err(e) => {
                    if matches!(e, StoreError::Busy) {
                        crate::logging::debug!(
                            "the store's catalogue is busy: the bookkeeping of {} entries written is parked",
                            written.len()
                        );
                        counts.add(Counter::Busy, 1);
                    }
                    // Kept for the next process that opens the catalogue: nothing is lost.
                    self.store.park(&counts, &touched, &written)
                }
            }
        } else if self.store.parked_count() < FOLD_PARKED {
            // A process that only had hits never opens the catalogue (sled): it parks its
            // counts and access stamps in a file, and once many files have piled up it folds
            // them into one, still without the catalogue; the next writer, `gc` or `stats`
            // merges them.
            self.store.park(&counts, &touched, &[])
        } else {
            self.store.compact_parked(&counts, &touched)
        };
        if let Err(e) = outcome {
            // The counts stay in this process for a later write; the records of entries
            // written are lost (their files are in place; `gc` counts them).
            self.counters.restore(&counts);
            let mut warned = lock(&self.warned);
            if !*warned {
                *warned = true;
                crate::logging::warning!("this process's cache statistics could not be recorded ({e})");
            }
        }
    }

    /// The background thread: waits for bookkeeping to be due, writes it, and waits
    /// [`THROTTLE`] before the next transaction.
    fn run(&self) {
        loop {
            {
                let mut s = lock(&self.signal);
                while !s.due && !s.stop {
                    s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                if s.stop {
                    return;
                }
                s.due = false;
            }
            self.write(Destination::Catalogue);
            let s = lock(&self.signal);
            let (s, _) = self.wake.wait_timeout_while(s, THROTTLE, |s| !s.stop).unwrap_or_else(|e| e.into_inner());
            if s.stop {
                return;
            }
        }
    }
}

impl Books {
    /// The bookkeeping of `store`, counting into `counters` and stamping `touched`.
    pub(super) fn new(store: LocalStore, counters: Arc<Counters>, touched: Arc<Mutex<Vec<Key>>>) -> Books {
        let shared = Arc::new(Shared {
            store,
            counters,
            touched,
            written: Mutex::new(Vec::new()),
            writing: Mutex::new(()),
            signal: Mutex::new(Signal::default()),
            wake: Condvar::new(),
            warned: Mutex::new(false),
        });
        settle_at_exit_once();
        let mut all = lock(live());
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&shared));
        drop(all);
        Books { shared, worker: Mutex::new(None) }
    }

    /// Records entries whose files were written (key, size change, unix seconds) and has the
    /// background thread write their bookkeeping soon. Without a thread (none can be started),
    /// it is written now.
    pub(super) fn wrote(&self, entries: Vec<(Key, i64, u64)>) {
        if entries.is_empty() {
            return;
        }
        lock(&self.shared.written).extend(entries);
        let mut worker = lock(&self.worker);
        if worker.is_none() {
            let shared = self.shared.clone();
            match std::thread::Builder::new().name("kache-bookkeeping".into()).spawn(move || shared.run()) {
                Ok(handle) => *worker = Some(handle),
                Err(_) => {
                    drop(worker);
                    self.shared.write(Destination::Catalogue);
                    return;
                }
            }
        }
        lock(&self.shared.signal).due = true;
        self.shared.wake.notify_all();
    }

    /// Writes everything owed into the catalogue now (parked if another process has it open),
    /// after the background thread's transaction in progress, if any.
    pub(super) fn settle(&self) {
        self.shared.write(Destination::Catalogue);
    }

    /// The end of the cache: stops the background thread and writes what is left, into the
    /// catalogue when entries were written, else parked (a process that only had hits never
    /// opens the catalogue).
    pub(super) fn finish(&self) {
        lock(&self.shared.signal).stop = true;
        self.shared.wake.notify_all();
        if let Some(handle) = lock(&self.worker).take() {
            let _ = handle.join();
        }
        self.shared.write(Destination::ParkedUnlessWritten);
    }
}
