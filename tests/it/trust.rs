//! What the cache does not trust: a cache folder that others can write (entries are code that
//! runs), and archives whose hashes were recomputed over tampered entries.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use kache::cache::archive::{self, ArchiveError};
use kache::cache::envelope;
use kache::cache::mac::EntryMac;
use kache::cache::{Key, LocalStore};

use crate::common::{kache_bin, root};

fn kache(cache: &Path) -> Command {
    let mut c = Command::new(kache_bin());
    c.env("KACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .env_remove("KACHE_REMOTE")
        .env_remove("KACHE_ARCH")
        .env_remove("KACHE_SALT")
        .env_remove("KACHE_QUIET")
        .env_remove("KACHE_TRUSTED_DIRS")
        .env_remove("KACHE_ARCHIVE_KEY")
        .env_remove("KACHE_REMOTE_KEY");
    c
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn saxpy() -> PathBuf {
    root().join("examples/kernels/saxpy.rs")
}

/// A planted kernel: saxpy's entry with other (well-formed, verifying) PTX in it.
fn plant(cache: &Path) -> (Vec<u8>, Vec<u8>) {
    let store = LocalStore::new(cache, Duration::from_secs(5), 1 << 30).unwrap();
    let r = &store.records()[0];
    let bytes = store.get(&r.key).unwrap();
    let (meta, payload) = envelope::decode(&bytes, Some(&r.key)).unwrap();
    let planted = String::from_utf8(payload.to_vec()).unwrap().replace(".entry saxpy", ".entry saxpy // planted").into_bytes();
    store.write_object(&r.key, &envelope::encode(&meta, &planted)).unwrap();
    (payload.to_vec(), planted)
}

/// Every file under `dir`, with its size.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(listing(&e.path()));
        } else {
            out.push((e.path(), e.metadata().unwrap().len()));
        }
    }
    out.sort();
    out
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipping: needs root to give a folder to another user; CI and the development machines run the suite as root");
    }
    root
}

#[test]
fn a_cache_folder_others_can_write_is_neither_loaded_from_nor_written_to_unless_trusted_by_name() {
    if !is_root() {
        return;
    }
    type Spoil = (&'static str, &'static str, fn(&Path));
    let cases: [Spoil; 4] = [
        ("owned by another user", "owned by user 65534", |d| std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap()),
        ("group-writable", "writable by its group", |d| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o770)).unwrap()),
        ("world-writable", "writable by others", |d| std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o707)).unwrap()),
        ("an inner folder group-writable", "writable by its group", |d| {
            std::fs::set_permissions(d.join("v2/objects"), std::fs::Permissions::from_mode(0o775)).unwrap()
        }),
    ];
    for (what, says, spoil) in cases {
        let cache = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        ok(&kache(cache.path()).arg("compile").arg(saxpy()).arg("-o").arg(work.path().join("a.ptx")).output().unwrap());
        let (real, planted) = plant(cache.path());
        spoil(cache.path());
        let before = listing(cache.path());
        // Compiled here, with one warning; the planted entry is not loaded, nothing is written.
        let o = kache(cache.path()).arg("compile").arg(saxpy()).args(["-o", "-"]).output().unwrap();
        assert_eq!(o.stdout, real, "{what}: the planted kernel was loaded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches("warning").count(), 1, "{what}: {err}");
        assert!(err.contains(says) && err.contains("KACHE_TRUSTED_DIRS"), "{what}: {err}");
        assert_eq!(listing(cache.path()), before, "{what}: kache wrote into a folder others can write");
        // Commands refuse it, as a user error.
        let o = kache(cache.path()).arg("ls").output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{what}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{what}");
        // Trusted by name (exactly, under a parent, or everything): loaded.
        let parent = format!("{}/*", cache.path().parent().unwrap().display());
        for trusted in [cache.path().to_str().unwrap(), &format!("/nonexistent:{}", cache.path().display()), parent.as_str(), "*"] {
            let o = kache(cache.path()).env("KACHE_TRUSTED_DIRS", trusted).arg("compile").arg(saxpy()).args(["-o", "-"]).output().unwrap();
            assert_eq!(o.stdout, planted, "{what}: KACHE_TRUSTED_DIRS={trusted} is not trusted");
            assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"), "{what}");
        }
        // A name that is not it, or a sibling under `/*` of another folder, trusts nothing.
        let o = kache(cache.path())
            .env("KACHE_TRUSTED_DIRS", format!("{}-other", cache.path().display()))
            .arg("compile")
            .arg(saxpy())
            .args(["-o", "-"])
            .output()
            .unwrap();
        assert_eq!(o.stdout, real, "{what}");
    }
}

#[test]
fn entries_written_under_any_umask_stay_private_and_load() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // umask 0: folders and files would be world-writable if kache left them to it.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 000 && exec '{}' compile '{}' -o '{}'",
            kache_bin().display(),
            saxpy().display(),
            work.path().join("a.ptx").display()
        ))
        .env("KACHE_DIR", cache.path().join("fresh"))
        .env_remove("KACHE_TRUSTED_DIRS")
        .output()
        .unwrap();
    ok(&o);
    for (p, _) in listing(&cache.path().join("fresh")) {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o022, 0, "{} is writable by others ({mode:o})", p.display());
    }
    ok(&kache(&cache.path().join("fresh")).arg("compile").arg(saxpy()).arg("-o").arg(work.path().join("b.ptx")).output().unwrap());
    let s: serde_json::Value =
        serde_json::from_str(&ok(&kache(&cache.path().join("fresh")).args(["stats", "--json"]).output().unwrap())).unwrap();
    assert_eq!(s["hits"], 1, "{s}");
}

/// Rewrites the archive at `path`: the entry under the first key gets `f` applied to its
/// payload, with its envelope's hashes and the archive's checksum recomputed (what anyone who
/// can edit the file can do); a signed archive's MAC is left as it was.
fn tamper(path: &Path, f: impl Fn(&mut Vec<u8>)) {
    let b = std::fs::read(path).unwrap();
    let signed = u16::from_le_bytes([b[8], b[9]]) == 2 && b[10] == 1;
    let mut out = b[..11].to_vec();
    let mut at = 11;
    let mut first = true;
    while b[at] == 1 {
        let key = Key(b[at + 1..at + 33].try_into().unwrap());
        let len = u64::from_le_bytes(b[at + 33..at + 41].try_into().unwrap()) as usize;
        let mut entry = b[at + 41..at + 41 + len].to_vec();
        if first {
            let (meta, payload) = envelope::decode(&entry, Some(&key)).unwrap();
            let mut p = payload.to_vec();
            f(&mut p);
            entry = envelope::encode(&meta, &p);
            first = false;
        }
        out.push(1);
        out.extend_from_slice(&key.0);
        out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
        out.extend_from_slice(&entry);
        at += 41 + len;
        if signed {
            out.extend_from_slice(&b[at..at + 32]);
            at += 32;
        }
    }
    out.push(0);
    let sum = *blake3::hash(&out).as_bytes();
    out.extend_from_slice(&sum);
    std::fs::write(path, out).unwrap();
}

#[test]
fn signed_archives_refuse_tampered_entries_which_hashes_alone_do_not() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for f in ["saxpy.rs", "reduce.rs", "histogram.rs"] {
        ok(&kache(cache.path())
            .arg("compile")
            .arg(root().join("examples/kernels").join(f))
            .arg("-o")
            .arg(work.path().join("x/"))
            .output()
            .unwrap());
    }
    let secret = "a shared secret of some length";
    let signed = work.path().join("signed.kar");
    let unsigned = work.path().join("unsigned.kar");
    let text = ok(&kache(cache.path()).env("KACHE_ARCHIVE_KEY", secret).arg("export").arg(&signed).arg("--key").output().unwrap());
    assert!(text.contains("exported 3 entries") && text.contains("signed"), "{text}");
    ok(&kache(cache.path()).arg("export").arg(&unsigned).output().unwrap());
    // Untouched: a signed archive imports with the secret, also from KACHE_REMOTE_KEY.
    let fresh = tempfile::tempdir().unwrap();
    assert!(
        ok(&kache(fresh.path()).env("KACHE_REMOTE_KEY", secret).arg("import").arg(&signed).arg("--key").output().unwrap())
            .contains("imported 3")
    );
    // Tampered with hashes recomputed: hashes alone let it in (what docs/cache.md warns of) ...
    for a in [&signed, &unsigned] {
        tamper(a, |p| p.extend_from_slice(b"\n// tampered"));
    }
    let fresh = tempfile::tempdir().unwrap();
    assert!(ok(&kache(fresh.path()).arg("import").arg(&unsigned).output().unwrap()).contains("imported 3"));
    // ... a signature does not.
    let fresh = tempfile::tempdir().unwrap();
    let o = kache(fresh.path()).env("KACHE_ARCHIVE_KEY", secret).arg("import").arg(&signed).arg("--key").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 entries of"), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("imported 2 entries"));
    let store = LocalStore::new(fresh.path(), Duration::from_secs(5), 1 << 30).unwrap();
    for r in store.records() {
        let bytes = store.get(&r.key).unwrap();
        let (_, payload) = envelope::decode(&bytes, Some(&r.key)).unwrap();
        assert!(!String::from_utf8_lossy(payload).contains("tampered"), "a tampered entry was stored");
    }
    // An unsigned archive, or another secret, when signatures are asked for.
    let o = kache(fresh.path()).env("KACHE_ARCHIVE_KEY", secret).arg("import").arg(&unsigned).arg("--key").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not signed"));
    let other = tempfile::tempdir().unwrap();
    let lib = LocalStore::new(other.path(), Duration::from_secs(5), 1 << 30).unwrap();
    let done = archive::import_with(&lib, &signed, Some(&EntryMac::new(b"another secret, as long").unwrap()), &mut |_, _| {}).unwrap();
    assert_eq!((done.stored, done.rejected), (0, 3));
    assert!(matches!(
        archive::import_with(&lib, &unsigned, Some(&EntryMac::new(secret.as_bytes()).unwrap()), &mut |_, _| {}),
        Err(ArchiveError::Unsigned { .. })
    ));
    // No secret: a clear error, not an unsigned export.
    let o = kache(cache.path()).arg("export").arg(work.path().join("x.kar")).arg("--key").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!work.path().join("x.kar").exists());
}

/// A toolchain memo (where ptxas was found last) is believed only where nobody but its owner can
/// write it: an older kache wrote memos under the umask, and a memo others can write could name
/// their program, which kache would then run as ptxas. Before, a world-writable memo in a
/// private cache folder was believed and the program it named was run. One its owner alone can
/// write is used (the control: the program runs).
#[test]
fn a_toolchain_memo_others_can_write_is_neither_believed_nor_run() {
    let work = tempfile::tempdir().unwrap();
    let fake = work.path().join("wheel/bin/ptxas");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    let ran = work.path().join("ran");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch '{}'\necho 'not ptxas'\n", ran.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (mode, believed) in [(0o644, true), (0o666, false), (0o664, false)] {
        let cache = tempfile::tempdir().unwrap();
        let memo = cache.path().join("toolchain-ptxas");
        std::fs::write(&memo, fake.to_str().unwrap()).unwrap();
        std::fs::set_permissions(&memo, std::fs::Permissions::from_mode(mode)).unwrap();
        let _ = std::fs::remove_file(&ran);
        let o = kache(cache.path())
            .env_remove("KACHE_PTXAS")
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .env("PATH", "/usr/bin:/bin")
            .arg("compile")
            .arg(saxpy())
            .args(["--kernel", "saxpy", "--emit", "cubin", "--arch", "sm_70", "-o"])
            .arg(work.path().join("k.cubin"))
            .output()
            .unwrap();
        assert_eq!(ran.exists(), believed, "a memo of mode {mode:o}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// A link where the store keeps one of its folders is replaced by the folder, never followed:
/// parked bookkeeping is merged by reading and removing every file of `parked-stats/`, so a
/// link there to another folder (planted by anyone who can write the store, a co-writer of a
/// folder trusted by name among them) made `kache stats` and every compile delete that folder's
/// files. Before, the file in the linked folder here was deleted.
#[test]
fn links_where_the_store_keeps_its_folders_are_replaced_not_followed() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    ok(&kache(cache.path()).arg("compile").arg(saxpy()).arg("-o").arg(work.path().join("a.ptx")).output().unwrap());
    let elsewhere = work.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for folder in ["parked-stats", "manifests"] {
        let at = cache.path().join("v2").join(folder);
        let _ = std::fs::remove_dir_all(&at);
        std::os::unix::fs::symlink(&elsewhere, &at).unwrap();
    }
    std::fs::write(elsewhere.join("precious"), b"not the store's").unwrap();
    std::fs::write(elsewhere.join("1-2-3-4"), b"hits 5\n").unwrap();
    ok(&kache(cache.path()).args(["stats", "--json"]).output().unwrap());
    ok(&kache(cache.path()).arg("compile").arg(saxpy()).arg("-o").arg(work.path().join("b.ptx")).output().unwrap());
    ok(&kache(cache.path()).arg("gc").output().unwrap());
    let mut left: Vec<String> =
        std::fs::read_dir(&elsewhere).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["1-2-3-4", "precious"], "kache wrote or removed files through a link");
    for folder in ["parked-stats", "manifests"] {
        let m = std::fs::symlink_metadata(cache.path().join("v2").join(folder));
        assert!(m.is_err() || m.unwrap().is_dir(), "{folder} is still a link");
    }
}
