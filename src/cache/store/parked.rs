//! Parked bookkeeping, under `parked-stats/`: what a process could not, or did not need to,
//! write to the catalogue itself (counter deltas, access stamps, entries written while another
//! process had the catalogue open), in small text files that the next process to open the
//! catalogue merges.
//!
//! ```text
//! <counter name> <delta>
//! touch <key hex>
//! put <key hex> <size change> <unix seconds>
//! covers <claimed file name>
//! ```
//!
//! A process that folds parked files claims each by renaming it to `.claimed-<pid>-…`, writes
//! the folded file (which lists the claims it `covers`), then removes the claims. One killed
//! in between leaves claims behind: [`recover_claims`](LocalStore::recover_claims), run by every
//! fold, merge, `gc` and `verify`, removes a stale claim that a folded file covers (its counts
//! are there) and puts any other back as an ordinary parked file (its counts are nowhere else),
//! so a kill at any moment neither loses nor doubles another process's bookkeeping.

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

/// The name a claimed parked file takes: `.claimed-<pid>-<n>-<its name>`.
const CLAIM_PREFIX: &str = ".claimed-";

/// Whether the claim `name` (at `path`) was left by a process that is gone: its process no
/// longer exists, or (where that cannot be told, or the number was reused) it was made longer
/// than [`STALE_TEMPORARY`](super::STALE_TEMPORARY) ago (a fold takes milliseconds). This
/// process's own claims are never stale.
fn claim_is_stale(path: &std::path::Path, name: &str) -> bool {
    let pid: Option<u32> = name.strip_prefix(CLAIM_PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse().ok());
    if pid == Some(std::process::id()) {
        return false;
    }
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()).filter(|p| *p > 0) {
        // SAFETY: signal 0 sends nothing; kill only reports whether the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            return true;
        }
    }
    // The rename that made the claim set its status-change time.
    #[cfg(unix)]
    let made = std::fs::symlink_metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        UNIX_EPOCH + std::time::Duration::new(m.ctime().max(0) as u64, m.ctime_nsec().clamp(0, 999_999_999) as u32)
    });
    #[cfg(not(unix))]
    let made = std::fs::symlink_metadata(path).ok().and_then(|m| m.modified().ok());
    made.and_then(|t| t.elapsed().ok()).is_some_and(|age| age > super::STALE_TEMPORARY)
}

/// The claims a parked file's text says it covers.
fn covers(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| l.strip_prefix("covers "))
}

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
        self.recover_claims();
        let mut counts = deltas.clone();
        // The claims folded files cover, carried into the new one (while their claimer, alive,
        // has not removed them yet).
        let mut covered: Vec<String> = Vec::new();
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
                let text = String::from_utf8_lossy(&bytes);
                let (d, t, p) = parse(&text);
                counts.add_all(&d);
                keys.extend(t);
                puts.extend(p);
                covered.extend(covers(&text).filter(|c| dir.join(c).exists()).map(str::to_string));
            }
            claimed.push((e.path(), claim));
        }
        let mut text = parked_text(&counts, keys.iter(), &puts);
        if !text.is_empty() {
            for c in covered.iter().map(String::as_str).chain(claimed.iter().filter_map(|(_, c)| c.file_name().and_then(|n| n.to_str()))) {
                text.push_str(&format!("covers {c}\n"));
            }
        }
        match self.write_parked(&text) {
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

    /// Claims that a process killed while folding left in `parked-stats/` (see the module's
    /// documentation): each stale one is removed where a parked file covers it, and otherwise
    /// put back as an ordinary parked file, to be merged or folded like any. Returns how many
    /// it handled.
    pub(crate) fn recover_claims(&self) -> usize {
        let dir = self.parked_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else { return 0 };
        let mut stale = Vec::new();
        let mut parked = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(CLAIM_PREFIX) {
                if claim_is_stale(&e.path(), &name) {
                    stale.push((e.path(), name));
                }
            } else if !name.starts_with('.') {
                parked.push(e.path());
            }
        }
        if stale.is_empty() {
            return 0;
        }
        let mut covered = std::collections::HashSet::new();
        for p in parked {
            if let Ok(bytes) = crate::files::read_regular(&p, MAX_PARKED_FILE, false) {
                covered.extend(covers(&String::from_utf8_lossy(&bytes)).map(str::to_string));
            }
        }
        let mut n = 0;
        for (path, name) in stale {
            let done = if covered.contains(&name) {
                std::fs::remove_file(&path).is_ok()
            } else {
                let k = PARKED.fetch_add(1, Ordering::Relaxed);
                let back = dir.join(format!("{}-recovered-{}-{k}", &name[CLAIM_PREFIX.len()..], std::process::id()));
                std::fs::rename(&path, back).is_ok()
            };
            if done {
                n += 1;
            }
        }
        n
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
        self.recover_claims();
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
        self.recover_claims();
        let Ok(rd) = std::fs::read_dir(self.parked_dir()) else { return Ok(false) };
        let mut wrote = false;
        for e in rd.flatten() {
            let p = e.path();
            // Files still being written (see `atomic`), unless a killed writer left them; claims
            // of a fold under way (its own claims, stale ones were recovered above).
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(CLAIM_PREFIX) {
                continue;
            }
            if name.starts_with('.') {
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
