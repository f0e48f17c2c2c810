//! The cache's statistics: one list, from which the [`Counter`] enum, the names stored in the
//! catalogue and in parked files, and the fields of [`Stats`] (and so of `kache stats --json`)
//! are all generated. A counter that is not in the list does not compile.

use std::sync::atomic::{AtomicU64, Ordering};

/// Generates [`Counter`] and [`Stats`] from the counters, with the store's totals (which are
/// measured, not counted) between the two groups, where `kache stats --json` has always shown
/// them.
macro_rules! statistics {
    (
        counters { $( $(#[doc = $d1:literal])* $f1:ident => $v1:ident, )* }
        totals { $( $(#[doc = $d2:literal])* $f2:ident, )* }
        counters { $( $(#[doc = $d3:literal])* $f3:ident => $v3:ident, )* }
    ) => {
        /// Something the cache counts. Its [`name`](Counter::name) is its field in [`Stats`] and
        /// `kache stats --json`, and its key in the store's statistics.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Counter {
            $( $(#[doc = $d1])* $v1, )*
            $( $(#[doc = $d3])* $v3, )*
        }

        impl Counter {
            /// Every counter, in the order `kache stats` shows them.
            pub const ALL: &'static [Counter] = &[$(Counter::$v1,)* $(Counter::$v3,)*];

            /// Its name in [`Stats`], `kache stats --json` and the store.
            pub fn name(self) -> &'static str {
                match self {
                    $( Counter::$v1 => stringify!($f1), )*
                    $( Counter::$v3 => stringify!($f3), )*
                }
            }
        }

        /// Aggregated statistics: every [`Counter`] (the store's, counted across processes, plus
        /// this process's unflushed counts) and the store's totals.
        #[derive(Clone, Debug, Default, serde::Serialize)]
        pub struct Stats {
            $( $(#[doc = $d1])* pub $f1: u64, )*
            $( $(#[doc = $d2])* pub $f2: u64, )*
            $( $(#[doc = $d3])* pub $f3: u64, )*
            /// Why kernels were not persisted (this process).
            pub not_persisted_reasons: Vec<String>,
            /// `None` when every figure was read; else what could not be read, and why (another
            /// process held the catalogue): the counters are then only those parked in files
            /// and this process's, and `entries` and `bytes` are counted from the files.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub unavailable: Option<String>,
        }

        impl Stats {
            /// The counts with the store's totals and this process's reasons.
            pub(crate) fn new(counts: &Counts, $($f2: u64,)* not_persisted_reasons: Vec<String>) -> Stats {
                Stats {
                    $( $f1: counts.get(Counter::$v1), )*
                    $( $f2, )*
                    $( $f3: counts.get(Counter::$v3), )*
                    not_persisted_reasons,
                    unavailable: None,
                }
            }
        }
    };
}

statistics! {
    counters {
        /// Hits in any tier.
        hits => Hits,
        /// Hits of this process's memory.
        hits_memory => HitsMemory,
        /// Hits of the local store.
        hits_local => HitsLocal,
        /// Hits of the remote store.
        hits_remote => HitsRemote,
        /// Lookups that found nothing usable.
        misses => Misses,
        /// Kernels kept in memory only because they capture device arrays.
        not_persisted => NotPersisted,
        /// Entries that did not verify.
        bad_entries => BadEntries,
        /// Writes whose bookkeeping was parked because another process had the catalogue open.
        busy => Busy,
    }
    totals {
        /// Entries in the local store.
        entries,
        /// Bytes in the local store's entries.
        bytes,
        /// Bytes of the local store's catalogue (its size limit counts them too).
        catalogue_bytes,
    }
    counters {
        /// Compile time the hits saved, in milliseconds.
        compile_ms_saved => CompileMsSaved,
        /// Bytes written to the local store.
        bytes_written => BytesWritten,
        /// Remote operations that failed or timed out.
        remote_errors => RemoteErrors,
        /// Remote entries rejected (bad MAC or envelope).
        remote_rejected => RemoteRejected,
        /// Bytes read from the remote.
        remote_bytes_read => RemoteBytesRead,
        /// Bytes written to the remote.
        remote_bytes_written => RemoteBytesWritten,
        /// Cubins found (loaded without the driver's JIT or ptxas). A kernel's lookup is
        /// counted once, in `hits` or `misses`; its cubin's here.
        cubin_hits => CubinHits,
        /// Cubins not found (built, then stored).
        cubin_misses => CubinMisses,
        /// Requests served in direct mode: a manifest gave their kernels' keys without parsing
        /// or checking (their kernels' lookups count in `hits` too).
        direct_hits => DirectHits,
        /// Requests whose manifest was absent or out of date: the full path served them and
        /// recorded one.
        direct_misses => DirectMisses,
        /// Tuned launches that found their tuning result (`#[tune]`: the configuration chosen
        /// for the kernel, its tuning key's bucket and the device), in any tier.
        tuning_hits => TuningHits,
        /// Tuned launches that found none (or none that verified) and tuned.
        tuning_misses => TuningMisses,
    }
}

impl Counter {
    /// How many counters there are.
    pub const COUNT: usize = Counter::ALL.len();

    /// The counter called `name` (as [`name`](Counter::name) spells it).
    pub fn from_name(name: &str) -> Option<Counter> {
        Counter::ALL.iter().copied().find(|c| c.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A value for every counter: deltas to add, or totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts([u64; Counter::COUNT]);

impl Counts {
    /// The value of `c`.
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c.index()]
    }

    /// Adds `v` to `c` (saturating).
    pub fn add(&mut self, c: Counter, v: u64) {
        let x = &mut self.0[c.index()];
        *x = x.saturating_add(v);
    }

    /// Adds every value of `other`.
    pub fn add_all(&mut self, other: &Counts) {
        for (c, v) in other.iter() {
            self.add(c, v);
        }
    }

    /// Whether every value is 0.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|v| *v == 0)
    }

    /// Every counter with its value, in [`Counter::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Counter, u64)> + '_ {
        Counter::ALL.iter().map(|c| (*c, self.get(*c)))
    }
}

/// This process's counts, added to from any thread and handed to the store's statistics
/// whenever the store is opened.
#[derive(Default)]
pub struct Counters {
    values: [AtomicU64; Counter::COUNT],
}

impl Counters {
    /// Adds `v` to `c`.
    pub fn add(&self, c: Counter, v: u64) {
        self.values[c.index()].fetch_add(v, Ordering::Relaxed);
    }

    /// The counts so far, leaving zeros (to be written to the store).
    pub(crate) fn take(&self) -> Counts {
        let mut out = Counts::default();
        for c in Counter::ALL {
            out.add(*c, self.values[c.index()].swap(0, Ordering::Relaxed));
        }
        out
    }

    /// Puts back counts that [`take`](Self::take) returned but could not be written.
    pub(crate) fn restore(&self, counts: &Counts) {
        for (c, v) in counts.iter() {
            self.add(c, v);
        }
    }

    /// The counts so far.
    pub fn peek(&self) -> Counts {
        let mut out = Counts::default();
        for c in Counter::ALL {
            out.add(*c, self.values[c.index()].load(Ordering::Relaxed));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_the_fields_of_stats() {
        for c in Counter::ALL {
            assert_eq!(Counter::from_name(c.name()), Some(*c));
        }
        assert_eq!(Counter::from_name("entries"), None, "a total, not a counter");
        let mut counts = Counts::default();
        for (i, c) in Counter::ALL.iter().enumerate() {
            counts.add(*c, i as u64 + 1);
        }
        let json = serde_json::to_value(Stats::new(&counts, 100, 200, 300, Vec::new())).unwrap();
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(json[c.name()], i as u64 + 1, "{}", c.name());
        }
        assert_eq!((json["entries"].as_u64(), json["bytes"].as_u64()), (Some(100), Some(200)));
    }

    #[test]
    fn stats_json_keeps_its_field_order() {
        let json = serde_json::to_string(&Stats::default()).unwrap();
        let order = [
            "hits",
            "hits_memory",
            "hits_local",
            "hits_remote",
            "misses",
            "not_persisted",
            "bad_entries",
            "busy",
            "entries",
            "bytes",
            "compile_ms_saved",
            "bytes_written",
            "remote_errors",
            "remote_rejected",
            "remote_bytes_read",
            "remote_bytes_written",
            "cubin_hits",
            "cubin_misses",
            "direct_hits",
            "direct_misses",
            "tuning_hits",
            "tuning_misses",
            "not_persisted_reasons",
        ];
        let at: Vec<usize> = order.iter().map(|f| json.find(&format!("\"{f}\":")).unwrap_or(usize::MAX)).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
    }

    #[test]
    fn counters_take_restore_and_peek() {
        let c = Counters::default();
        c.add(Counter::Hits, 2);
        c.add(Counter::RemoteBytesRead, 5);
        let taken = c.take();
        assert_eq!((taken.get(Counter::Hits), taken.get(Counter::RemoteBytesRead)), (2, 5));
        assert!(c.peek().is_zero());
        c.restore(&taken);
        assert_eq!(c.peek(), taken);
    }
}
