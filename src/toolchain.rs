//! Finding NVIDIA's tools: libdevice (transcendental math on the GPU), ptxas (PTX to cubin
//! ahead of time, and PTX validation in tests) and libnvrtc (CUDA C to PTX: only the benchmarks
//! and the comparisons with NVRTC use it; kache never does).
//!
//! Searched, in order: the explicit variable (`KACHE_LIBDEVICE`, `KACHE_PTXAS`, `KACHE_NVRTC`),
//! `CUDA_HOME` (and `CUDA_PATH`), `/usr/local/cuda`, `PATH` (ptxas), and the
//! `nvidia-cuda-nvcc-cu12` (ptxas, libdevice) or `nvidia-cuda-nvrtc-cu12` (libnvrtc) wheel in
//! any Python site-packages folder. This repository's `make` commands set the three variables to
//! the pinned wheels that `scripts/deps.sh` installs under `target/toolchain/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::cache::{CacheConfig, atomic, trust};

/// libdevice: where it is, and the hash of its content (part of the key of kernels that link
/// it). Its bitcode is read only when a kernel that needs it is compiled ([`load`](Self::load)).
#[derive(Clone, Debug)]
pub struct Libdevice {
    /// Where it was found.
    pub path: PathBuf,
    /// blake3 of the bitcode, as the file is now (see [`content_hash`]).
    pub hash: [u8; 32],
}

impl Libdevice {
    /// The bitcode and the blake3 of exactly those bytes: what a miss links and keys its entry
    /// by (the file may have changed since [`hash`](Self::hash) was taken). Read once per
    /// process while the file's stamp stays the same. `None` if the file became unreadable.
    pub fn load(&self) -> Option<(Arc<[u8]>, [u8; 32])> {
        read_hashed("libdevice", &self.path)
    }
}

/// What identifies a file's content without reading it, as strongly as the file system allows:
/// its device and inode, its size, and its modification and status-change times in
/// nanoseconds. A file replaced in place with the same size and modification time (`cp -p`,
/// `rsync -t`, tar) gets a new status-change time, and usually a new inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
            Stamp {
                dev: m.dev(),
                ino: m.ino(),
                size: m.size(),
                mtime_ns: ns(m.mtime(), m.mtime_nsec()),
                ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            }
        }
        #[cfg(not(unix))]
        {
            let ns = |t: std::io::Result<std::time::SystemTime>| {
                t.ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos() as i128).unwrap_or(0)
            };
            Stamp { dev: 0, ino: 0, size: m.len(), mtime_ns: ns(m.modified()), ctime_ns: ns(m.created()) }
        }
    }

    fn text(&self) -> String {
        format!("{} {} {} {} {}", self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
    }
}

/// What this process knows of a toolchain file: its stamp and hash, and its bytes if it read
/// them.
struct Known {
    stamp: Stamp,
    hash: [u8; 32],
    bytes: Option<Arc<[u8]>>,
}

fn known() -> &'static Mutex<HashMap<PathBuf, Known>> {
    static K: OnceLock<Mutex<HashMap<PathBuf, Known>>> = OnceLock::new();
    K.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The cache folder, if it may be read and written (see [`trust`]): toolchain memos in a folder
/// others can write could name another file, or another hash.
fn memo_dir() -> Option<PathBuf> {
    let dir = CacheConfig::default_dir()?;
    trust::check(&dir, std::slice::from_ref(&dir)).ok()?;
    Some(dir)
}

fn memo_path(what: &str) -> Option<PathBuf> {
    memo_dir().map(|d| d.join(format!("toolchain-{what}")))
}

/// A memo's bytes, if nobody but this user can write the file, as the store asks of its
/// entries: a memo others can write (an older kache wrote them under the umask) could name
/// another program, which would then run as ptxas. In a folder trusted by name, any memo.
fn read_memo(path: &Path) -> Option<Vec<u8>> {
    let f = crate::files::open_regular(path, false).ok()?;
    if trust::others_can_write(&f.metadata().ok()?).is_some() && !path.parent().is_some_and(trust::trusted_by_name) {
        return None;
    }
    crate::files::read_limited(f, 64 << 10).ok()
}

/// Writes a memo into the cache folder, atomically (creating the folder).
fn write_memo(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        let _ = crate::cache::store::create_private_dir(dir);
    }
    let _ = atomic::write_private(path, text.as_bytes());
}

/// Largest toolchain file hashed (ptxas is about 35 MB).
const MAX_TOOL_FILE: u64 = 1 << 30;

/// The blake3 of the file at `path`, without reading it when it is known under its current
/// stamp: remembered in this process, and in the cache folder (`toolchain-<what>-hash`, so a
/// cache hit in a new process reads no toolchain file). Re-hashed whenever the stamp differs.
/// `None` if it cannot be read.
pub fn content_hash(what: &str, path: &Path) -> Option<[u8; 32]> {
    let stamp = Stamp::of(&std::fs::metadata(path).ok()?);
    if let Some(k) = known().lock().unwrap_or_else(|e| e.into_inner()).get(path)
        && k.stamp == stamp
    {
        return Some(k.hash);
    }
    let memo = memo_path(&format!("{what}-hash"));
    let head = format!("{}\n{}\n", path.display(), stamp.text());
    if let Some(text) = memo.as_deref().and_then(read_memo)
        && let Some(hash) = String::from_utf8_lossy(&text).strip_prefix(&head).and_then(crate::cache::Key::from_hex)
    {
        known().lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf(), Known { stamp, hash: hash.0, bytes: None });
        return Some(hash.0);
    }
    read_hashed(what, path).map(|(_, h)| h)
}

/// Reads the file at `path` and hashes the bytes read (the hash is always of those bytes);
/// remembers both under its stamp when the file did not change while it was read.
fn read_hashed(what: &str, path: &Path) -> Option<(Arc<[u8]>, [u8; 32])> {
    let f = crate::files::open_regular(path, true).ok()?;
    let before = Stamp::of(&f.metadata().ok()?);
    if let Some(k) = known().lock().unwrap_or_else(|e| e.into_inner()).get(path)
        && k.stamp == before
        && let Some(b) = &k.bytes
    {
        return Some((b.clone(), k.hash));
    }
    let bytes: Arc<[u8]> = crate::files::read_limited(f, MAX_TOOL_FILE).ok()?.into();
    let hash = *blake3::hash(&bytes).as_bytes();
    let after = std::fs::metadata(path).ok().map(|m| Stamp::of(&m));
    if after == Some(before) {
        known()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), Known { stamp: before, hash, bytes: Some(bytes.clone()) });
        if let Some(m) = memo_path(&format!("{what}-hash")) {
            write_memo(&m, &format!("{}\n{}\n{}", path.display(), before.text(), blake3::Hash::from_bytes(hash).to_hex()));
        }
    }
    Some((bytes, hash))
}

/// The Python package folders a pip wheel may be in, found without starting Python (which
/// costs tens of milliseconds, over a hundred through a pyenv shim): `PYTHONPATH`, the active
/// virtual environment or conda environment, the prefix of every `python3` or `python` on
/// `PATH` (the link followed too, so a venv's or a framework's interpreter finds its prefix;
/// a pyenv shims folder finds pyenv's versions), pyenv's versions, the user's site folder, and
/// the system's. In each prefix, `lib/python3.*/site-packages` (and `dist-packages`, `lib64`,
/// Windows' `Lib/site-packages`).
fn python_site_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| site_dirs_in(&|v| std::env::var_os(v)))
}

/// [`python_site_dirs`] under the environment `var` gives.
fn site_dirs_in(var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let nonempty = |v: Option<std::ffi::OsString>| v.filter(|p| !p.is_empty()).map(PathBuf::from);
    let home = nonempty(var("HOME"));
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(pp) = var("PYTHONPATH") {
        dirs.extend(std::env::split_paths(&pp).filter(|p| !p.as_os_str().is_empty()));
    }
    let mut prefixes: Vec<PathBuf> = Vec::new();
    prefixes.extend(nonempty(var("VIRTUAL_ENV")));
    prefixes.extend(nonempty(var("CONDA_PREFIX")));
    let pyenv_root = nonempty(var("PYENV_ROOT")).or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    if let Some(path) = var("PATH") {
        for dir in std::env::split_paths(&path) {
            for exe in ["python3", "python"] {
                let bin = dir.join(exe);
                if !bin.is_file() {
                    continue;
                }
                if dir.ends_with("shims") && dir.parent().is_some_and(|p| p.join("versions").is_dir()) {
                    prefixes.extend(sorted_entries(&dir.with_file_name("versions"), |_| true));
                }
                prefixes.extend(dir.parent().map(Path::to_path_buf));
                if let Ok(real) = std::fs::canonicalize(&bin) {
                    prefixes.extend(real.parent().and_then(Path::parent).map(Path::to_path_buf));
                }
            }
        }
    }
    if let Some(root) = pyenv_root {
        prefixes.extend(sorted_entries(&root.join("versions"), |_| true));
    }
    prefixes.extend(home.map(|h| h.join(".local")));
    prefixes.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));
    for prefix in &prefixes {
        for lib in ["lib", "lib64"] {
            for py in sorted_entries(&prefix.join(lib), |n| n.starts_with("python3")) {
                dirs.push(py.join("site-packages"));
                dirs.push(py.join("dist-packages"));
            }
        }
        dirs.push(prefix.join("lib/python3/dist-packages"));
        dirs.push(prefix.join("Lib/site-packages"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if d.is_dir() && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The entries of `dir` whose names pass `keep`, newest version first (names sorted
/// descending, `python3.12` before `python3.9` by their numbers).
fn sorted_entries(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<(Vec<u64>, String, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !keep(&name) {
                return None;
            }
            let nums = name.split(|c: char| !c.is_ascii_digit()).filter_map(|x| x.parse().ok()).collect();
            Some((nums, name, e.path()))
        })
        .collect();
    v.sort();
    v.into_iter().rev().map(|(_, _, p)| p).collect()
}

fn cuda_roots() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
            v.push(PathBuf::from(p));
        }
    }
    v.push(PathBuf::from("/usr/local/cuda"));
    v
}

fn wheel_file(rel: &str) -> Option<PathBuf> {
    python_site_dirs().iter().map(|d| d.join("nvidia/cuda_nvcc").join(rel)).find(|p| p.is_file())
}

/// The NVRTC library's file in `dir` (`libnvrtc.so.N`, not the `-builtins` or `alt` ones).
fn nvrtc_in(dir: &Path) -> Option<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            (n.starts_with("libnvrtc.so.") || (n.starts_with("nvrtc64_") && n.ends_with(".dll"))) && !n.contains("alt")
        })
        .filter(|p| p.is_file())
        .collect();
    names.sort();
    names.into_iter().next()
}

/// Where libnvrtc is, if anywhere: `KACHE_NVRTC`, a CUDA toolkit's `lib64` (or `bin` on
/// Windows), or the `nvidia-cuda-nvrtc-cu12` wheel. kache itself never loads it; the speed suite
/// and the NVRTC comparisons do, by this path (cudarc would otherwise look for it by name on the
/// loader's path only, and panic where it is not).
pub fn find_nvrtc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KACHE_NVRTC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    for root in cuda_roots() {
        for lib in ["lib64", "lib", "bin"] {
            if let Some(p) = nvrtc_in(&root.join(lib)) {
                return Some(p);
            }
        }
    }
    python_site_dirs().iter().find_map(|d| nvrtc_in(&d.join("nvidia/cuda_nvrtc/lib")))
}

/// Where a wheel file was last seen, remembered in the cache folder (a trusted one) so that
/// later processes look in one place rather than every Python prefix.
fn wheel_file_memoized(what: &str, rel: &str) -> Option<PathBuf> {
    let memo = memo_path(what);
    if let Some(m) = &memo
        && let Some(text) = read_memo(m)
    {
        let p = PathBuf::from(String::from_utf8_lossy(&text).trim());
        if p.ends_with(rel) && p.is_file() {
            return Some(p);
        }
    }
    let found = wheel_file(rel)?;
    if let Some(m) = memo {
        write_memo(&m, &found.to_string_lossy());
    }
    Some(found)
}

/// Where libdevice is, if anywhere.
pub fn find_libdevice() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KACHE_LIBDEVICE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    for root in cuda_roots() {
        let p = root.join("nvvm/libdevice/libdevice.10.bc");
        if p.is_file() {
            return Some(p);
        }
    }
    wheel_file_memoized("libdevice", "nvvm/libdevice/libdevice.10.bc")
}

/// libdevice, found and identified by its content (`None` if not found or unreadable). Asked at
/// every key derivation: it costs one `stat` while the file's stamp stays what it was (see
/// [`content_hash`]), and re-hashes the file when it changed.
pub fn libdevice() -> Option<Libdevice> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    let path = PATH.get_or_init(find_libdevice).clone()?;
    let hash = content_hash("libdevice", &path)?;
    Some(Libdevice { path, hash })
}

/// ptxas, identified by its content and what it says it is: the blake3 of the binary and its
/// `--version` output (a wrapper script that runs another ptxas says so there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    /// Where it is.
    pub path: PathBuf,
    /// blake3 of the file.
    pub hash: [u8; 32],
    /// What `ptxas --version` printed.
    pub version: String,
}

impl Ptxas {
    /// The ptxas at `path`, identified; why not, if it cannot be read or run.
    pub fn at(path: &Path) -> Result<Ptxas, String> {
        let hash = content_hash("ptxas", path).ok_or_else(|| format!("cannot read {}", path.display()))?;
        let out = std::process::Command::new(path)
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("could not run {}: {e}", path.display()))?;
        if !out.status.success() {
            return Err(format!("{} --version failed: {}", path.display(), String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Ptxas { path: path.to_path_buf(), hash, version: String::from_utf8_lossy(&out.stdout).trim().to_string() })
    }

    /// The ptxas [`find_ptxas`] finds, identified.
    pub fn find() -> Option<Result<Ptxas, String>> {
        find_ptxas().map(|p| Ptxas::at(&p))
    }

    /// Assembles PTX for `arch`; the cubin, or ptxas's error output.
    pub fn assemble(&self, ptx: &str, arch: &str) -> Result<Vec<u8>, String> {
        ptxas(&self.path, ptx, arch)
    }
}

/// Where ptxas is, if anywhere.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KACHE_PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    for root in cuda_roots() {
        let p = root.join("bin/ptxas");
        if p.is_file() {
            return Some(p);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    wheel_file_memoized("ptxas", "bin/ptxas")
}

/// Assembles PTX with ptxas for `arch`; returns the cubin or ptxas's error output.
pub fn ptxas(ptxas: &Path, ptx: &str, arch: &str) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = dir.path().join("kernel.ptx");
    let output = dir.path().join("kernel.cubin");
    std::fs::write(&input, ptx).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    std::fs::read(&output).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use super::site_dirs_in;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }

    #[test]
    fn site_packages_are_found_without_python() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        // A virtual environment, a pyenv install reached through its shims folder (the newest
        // version first), an interpreter linked from a bin folder, and PYTHONPATH.
        let venv = root.join("venv");
        touch(&venv.join("bin/python3"));
        std::fs::create_dir_all(venv.join("lib/python3.12/site-packages")).unwrap();
        let pyenv = root.join("pyenv");
        touch(&pyenv.join("shims/python3"));
        for v in ["3.9.1", "3.11.7"] {
            std::fs::create_dir_all(pyenv.join(format!("versions/{v}/lib/python{}/site-packages", &v[..v.rfind('.').unwrap()]))).unwrap();
        }
        let framework = root.join("fw");
        touch(&framework.join("bin/python3.10"));
        std::fs::create_dir_all(framework.join("lib/python3.10/site-packages")).unwrap();
        std::fs::create_dir_all(root.join("links")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(framework.join("bin/python3.10"), root.join("links/python3")).unwrap();
        let extra = root.join("extra");
        std::fs::create_dir_all(&extra).unwrap();
        let path = std::env::join_paths([pyenv.join("shims"), root.join("links")]).unwrap();
        let env = |v: &str| -> Option<OsString> {
            match v {
                "VIRTUAL_ENV" => Some(venv.clone().into()),
                "PATH" => Some(path.clone()),
                "PYTHONPATH" => Some(extra.clone().into()),
                "HOME" => Some(root.join("home").into()),
                _ => None,
            }
        };
        let dirs = site_dirs_in(&env);
        let at = |p: PathBuf| dirs.iter().position(|d| *d == p).unwrap_or_else(|| panic!("{} not in {dirs:?}", p.display()));
        let e = at(extra.clone());
        let v = at(venv.join("lib/python3.12/site-packages"));
        let new = at(pyenv.join("versions/3.11.7/lib/python3.11/site-packages"));
        let old = at(pyenv.join("versions/3.9.1/lib/python3.9/site-packages"));
        assert!(e < v && v < new && new < old, "{dirs:?}");
        #[cfg(unix)]
        at(framework.join("lib/python3.10/site-packages"));
        let mut unique = dirs.clone();
        unique.dedup();
        assert_eq!(unique.len(), dirs.len());
    }
}
