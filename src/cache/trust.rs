//! Whether a cache folder may be loaded from. Host-backend entries are machine code that runs
//! in the user's process, and entries verify by an unkeyed hash, so whoever can write the cache
//! folder can run code as its user. Like git's `safe.directory` (its answer to CVE-2022-24765)
//! and ssh's `StrictModes`, kache neither loads from nor writes into a folder owned by another
//! user, or writable by its group or by others, unless the user trusts it by name in
//! `KACHE_TRUSTED_DIRS` (see docs/cache.md): a list of folders separated like `PATH`, where
//! `DIR/*` trusts `DIR` and every folder under it, and `*` trusts every folder.

use std::fmt;
use std::path::{Path, PathBuf};

/// A folder kache will not load code from, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Untrusted {
    /// The folder.
    pub path: PathBuf,
    /// Who else can write it: "owned by user 1001", "writable by its group", ...
    pub why: String,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the cache folder {} is {}: kache does not load code from, or write to, a cache folder that others can write \
             (trust it by name with KACHE_TRUSTED_DIRS, see docs/cache.md)",
            self.path.display(),
            self.why
        )
    }
}

/// Whether `KACHE_TRUSTED_DIRS` names `dir` (or a folder it is under, with `DIR/*`, or
/// everything, with `*`).
pub fn trusted_by_name(dir: &Path) -> bool {
    let Some(list) = std::env::var_os("KACHE_TRUSTED_DIRS") else { return false };
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let dir = canon(dir);
    std::env::split_paths(&list).any(|entry| {
        if entry.as_os_str() == "*" {
            return true;
        }
        if entry.file_name().is_some_and(|n| n == "*") {
            return entry.parent().is_some_and(|p| !p.as_os_str().is_empty() && dir.starts_with(canon(p)));
        }
        !entry.as_os_str().is_empty() && canon(&entry) == dir
    })
}

/// The effective user id of this process.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Who besides this user can write the file or folder whose metadata is `m`, in words; `None`
/// when nobody (but root) can.
pub fn others_can_write(m: &std::fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if m.uid() != euid() {
            return Some(format!("owned by user {} (this is user {})", m.uid(), euid()));
        }
        match (m.mode() & 0o020 != 0, m.mode() & 0o002 != 0) {
            (true, true) => return Some("writable by its group and by others".into()),
            (true, false) => return Some("writable by its group".into()),
            (false, true) => return Some("writable by others".into()),
            (false, false) => {}
        }
    }
    #[cfg(not(unix))]
    let _ = m;
    None
}

/// Checks that nobody but this user can write `dirs` (those that exist), unless `root` is
/// trusted by name; the first that others can write is the answer.
pub fn check(root: &Path, dirs: &[PathBuf]) -> Result<(), Untrusted> {
    let mut first = None;
    for d in dirs {
        let Ok(m) = std::fs::metadata(d) else { continue };
        if let Some(why) = others_can_write(&m) {
            first = Some(Untrusted { path: d.clone(), why });
            break;
        }
    }
    match first {
        Some(u) if !trusted_by_name(root) => Err(u),
        _ => Ok(()),
    }
}
