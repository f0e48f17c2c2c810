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
    pub(super) fn parked_dir(&self) -> PathBuf {
        self.db_path.with_file_name("parked-stats")
    }

    /// How many files are parked, waiting to be merged (not counting temporary files, which a
    /// killed writer may leave: they never stop a process from parking).
    pub(crate) fn parked_count(&self) -> usize {
        std::fs::read_dir(self.parked_dir())
            .map(|d| d.flatten().filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count())
            .unwrap_or(0)
    }

    /// Parks counter deltas, accessed keys, and the catalogue records of entries written
    /// without it (key, size change and time), for the next process that opens the catalogue: when
    /// the catalogue is busy, or when a process only had hits (hits never open the catalogue).
    /// A file where the `parked-stats` folder belongs
    /// (garbage written over the store) is replaced by the folder, with a warning. On failure
    /// (a full disk) nothing is left behind and the caller keeps its counts.
    pub(crate) fn park(&self, deltas: &Counts, touched: &[Key], written: &[(Key, i64, u64)]) -> std::io::Result<()> {
        self.write_parked(&parked_text(deltas, touched.iter(), written))
    }

    /// Folds every parked file, with this process's own counts and accessed keys, into one
    /// parked file, without the catalogue: what a process that only had hits does once many
    /// files have piled up, so that hits never open the catalogue and the parked files stay
    /// few (the next writer, `gc` or `stats` merges them). Each file is claimed by renaming it,
    /// so two processes folding at once never count one file twice; the claimed files are
    /// removed once the folded one is written, and put back if it cannot be.
    pub(crate) fn compact_parked(&self, deltas: &Counts, touched: &[Key]) -> std::io::Result<()> {
        let dir = self.parked_dir();
        let mut counts = deltas.clone();
        let mut keys: std::collections::BTreeSet<Key> = touched.iter().copied().collect();
        let mut puts = Vec::new();
        let mut claimed = Vec::new();
        for e in std::fs::read_dir(&dir)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Files still being written, and files other processes have claimed.
            if name.starts_with('.') {
                continue;
            }
            let n = PARKED.fetch_add(1, Ordering::Relaxed);
            let claim = dir.join(format!(".claimed-{}-{n}-{name}", std::process::id()));
            if std::fs::rename(e.path(), &claim).is_err() {
                continue;
            }
            // What cannot be read as text (garbage written over it) is dropped, as a merge does.
            if let Ok(bytes) = crate::files::read_regular(&claim, MAX_PARKED_FILE, false) {
                let (d, t, p) = parse(&String::from_utf8_lossy(&bytes));
                counts.add_all(&d);
                keys.extend(t);
                puts.extend(p);
            }
            claimed.push((e.path(), claim));
        }
        match self.write_parked(&parked_text(&counts, keys.iter(), &puts)) {
            Ok(()) => {
                for (_, claim) in &claimed {
                    let _ = super::remove_any(claim);
                }
                Ok(())
            }
            Err(e) => {
                for (original, claim) in &claimed {
                    let _ = std::fs::rename(claim, original);
                }
                Err(e)
            }
        }
    }

    /// Writes one parked file holding `text` (nothing if it is empty).
    fn write_parked(&self, text: &str) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let dir = self.parked_dir();
        if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            crate::logging::warning!(
                "{} was not a folder (the statistics of other processes parked there are lost); replaced it",
                dir.display()
            );
        }
        super::create_private_dir(&dir)?;
        let n = PARKED.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{}-{}-{}-{n}",
            std::process::id(),
            now_secs(),
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
        );
        atomic::write_private(&dir.join(name), text.as_bytes())
    }

    /// The counts parked so far, read without the catalogue and without removing anything (for
    /// statistics while another process has the catalogue open), and how many files hold them.
    pub(crate) fn parked_counts(&self) -> (Counts, usize) {
        let mut out = Counts::default();
        let mut n = 0;
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return (out, 0) };
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(bytes) = crate::files::read_regular(&e.path(), MAX_PARKED_FILE, false) else { continue };
            n += 1;
            out.add_all(&parse(&String::from_utf8_lossy(&bytes)).0);
        }
        (out, n)
    }

    /// Merges every parked file into the open catalogue; with `counts` false, only the records
    /// of entries and access stamps (`stats --reset` drops the parked counts with the stored
    /// ones). Stale temporary files of killed writers go too. Returns whether records of
    /// entries were merged: the caller then applies the size limit, once it has recorded its own
    /// entries (whose files are in place already, and must not be taken for unrecorded ones).
    pub(super) fn merge_parked(&self, cat: &Catalogue, counts: bool) -> Result<bool, StoreError> {
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return Ok(false) };
        let mut wrote = false;
        for e in rd.flatten() {
            let p = e.path();
            // Files still being written (see `atomic`), unless a killed writer left them.
            if e.file_name().to_string_lossy().starts_with('.') {
                if e.metadata().is_ok_and(|m| m.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a > super::STALE_TEMPORARY))
                {
                    let _ = std::fs::remove_file(&p);
                }
                continue;
            }
            let text = crate::files::read_regular(&p, MAX_PARKED_FILE, false);
            // Remove first: a crash after this loses the counts rather than doubling them. What
            // cannot be read as text (garbage written over it) goes too.
            if super::remove_any(&p).is_err() {
                continue;
            }
            let Ok(text) = text.map(|b| String::from_utf8_lossy(&b).into_owned()) else { continue };
            let (deltas, touched, puts) = parse(&text);
            for (k, delta, when) in puts {
                cat.record_put(&k, delta, when)?;
                wrote = true;
            }
            if counts {
                cat.add_stats(&deltas)?;
            }
            cat.touch(&touched)?;
        }
        Ok(wrote)
    }
}

/// A parked file's text: counter deltas, accessed keys, entry records (key, size change, time).
fn parked_text<'a>(deltas: &Counts, touched: impl Iterator<Item = &'a Key>, puts: &[(Key, i64, u64)]) -> String {
    let mut text: String = deltas.iter().filter(|(_, v)| *v != 0).map(|(c, v)| format!("{} {v}\n", c.name())).collect();
    for k in touched {
        text.push_str(&format!("touch {}\n", k.hex()));
    }
    for (k, delta, when) in puts {
        text.push_str(&format!("put {} {delta} {when}\n", k.hex()));
    }
    text
}

/// A parked file larger than this is garbage (one holds a process's counts and keys).
const MAX_PARKED_FILE: u64 = 16 << 20;

/// A parked file's counts, touched keys and entry records (key, size change, time).
fn parse(text: &str) -> (Counts, Vec<Key>, Vec<(Key, i64, u64)>) {
    let mut deltas = Counts::default();
    let mut touched = Vec::new();
    let mut puts = Vec::new();
    for l in text.lines() {
        let Some((n, v)) = l.split_once(' ') else { continue };
        if n == "touch" {
            touched.extend(Key::from_hex(v));
        } else if n == "put" {
            let mut f = v.split(' ');
            if let (Some(k), Some(Ok(delta)), Some(Ok(when))) =
                (f.next().and_then(Key::from_hex), f.next().map(str::parse), f.next().map(str::parse))
            {
                puts.push((k, delta, when));
            }
        } else if let (Some(c), Ok(v)) = (Counter::from_name(n), v.trim().parse()) {
            deltas.add(c, v);
        }
    }
    (deltas, touched, puts)
}
