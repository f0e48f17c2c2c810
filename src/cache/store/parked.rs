//! Parked bookkeeping, under `parked-stats/`: what a process could not, or did not need to,
//! write to the catalogue itself (counter deltas, access stamps, entries written while another
//! process had the catalogue open), in small text files that the next process to open the
//! catalogue merges.
//!
//! ```text
//! <counter name> <delta>
//! touch <key hex>
//! put <key hex> <size change> <unix seconds>
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::catalogue::Catalogue;
use super::{LocalStore, StoreError, now_secs};
use crate::cache::atomic;
use crate::cache::counters::{Counter, Counts};
use crate::cache::key::Key;

/// Numbers the files one process parks, so their names never collide.
static PARKED: AtomicU64 = AtomicU64::new(0);

impl LocalStore {
    fn parked_dir(&self) -> PathBuf {
        self.db_path.with_file_name("parked-stats")
    }

    /// How many files are parked, waiting to be merged.
    pub(crate) fn parked_count(&self) -> usize {
        std::fs::read_dir(self.parked_dir()).map(|d| d.count()).unwrap_or(0)
    }

    /// Parks counter deltas, accessed keys, and the catalogue records of entries written
    /// without it (key and size change), for the next process that opens the catalogue: when
    /// the catalogue is busy, or when a process only had hits and opening the catalogue again
    /// just to count them is not worth it.
    pub(crate) fn park(&self, deltas: &Counts, touched: &[Key], stored: &[(Key, i64)]) {
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
        let n = PARKED.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{}-{}-{}-{n}",
            std::process::id(),
            now_secs(),
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
        );
        let _ = atomic::write_file(&dir.join(name), text.as_bytes());
    }

    /// Merges every parked file into the open catalogue.
    pub(super) fn merge_parked(&self, cat: &Catalogue) -> Result<(), StoreError> {
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return Ok(()) };
        let mut wrote = false;
        for e in rd.flatten() {
            let p = e.path();
            // Files still being written (see `atomic`).
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
                        cat.record_put(&k, delta, when)?;
                        wrote = true;
                    }
                } else if let (Some(c), Ok(v)) = (Counter::from_name(n), v.trim().parse()) {
                    deltas.add(c, v);
                }
            }
            cat.add_stats(&deltas)?;
            cat.touch(&touched)?;
        }
        if wrote {
            self.enforce_limit(cat, None)?;
        }
        Ok(())
    }
}
