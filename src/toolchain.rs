//! Finding NVIDIA's tools: libdevice (transcendental math on the GPU) and ptxas (PTX to cubin
//! ahead of time, and PTX validation in tests).
//!
//! Searched, in order: the explicit variable (`KACHE_LIBDEVICE`, `KACHE_PTXAS`), `CUDA_HOME`
//! (and `CUDA_PATH`), `/usr/local/cuda`, `PATH` (ptxas), and the `nvidia-cuda-nvcc-cu12` wheel
//! in any Python site-packages folder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// libdevice: where it is, its hash (part of the key of kernels that link it), and its
/// bitcode, read only when a kernel that needs it is compiled.
#[derive(Clone, Debug)]
pub struct Libdevice {
    /// Where it was found.
    pub path: PathBuf,
    /// blake3 of the bitcode.
    pub hash: [u8; 32],
    bytes: Arc<OnceLock<Option<Arc<[u8]>>>>,
}

impl Libdevice {
    /// The bitcode (read on first use); `None` if the file became unreadable.
    pub fn bytes(&self) -> Option<Arc<[u8]>> {
        self.bytes.get_or_init(|| std::fs::read(&self.path).ok().map(Into::into)).clone()
    }
}
fn python_site_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let mut out = Vec::new();
        for py in ["python3", "python"] {
            let r = std::process::Command::new(py)
                .args(["-c", "import site,sys; print('\\n'.join(site.getsitepackages()+[site.getusersitepackages()]+sys.path))"])
                .stderr(std::process::Stdio::null())
                .output();
            if let Ok(o) = r
                && o.status.success()
            {
                for l in String::from_utf8_lossy(&o.stdout).lines() {
                    let p = PathBuf::from(l.trim());
                    if !l.trim().is_empty() && p.is_dir() && !out.contains(&p) {
                        out.push(p);
                    }
                }
                break;
            }
        }
        out
    })
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

/// Where a wheel file found by asking Python was last seen, remembered in the cache folder so
/// that later processes do not start Python (which takes tens of milliseconds).
fn memo_path(what: &str) -> Option<PathBuf> {
    crate::cache::CacheConfig::default_dir().map(|d| d.join(format!("toolchain-{what}")))
}

fn wheel_file_memoized(what: &str, rel: &str) -> Option<PathBuf> {
    let memo = memo_path(what);
    if let Some(m) = &memo
        && let Ok(text) = std::fs::read_to_string(m)
    {
        let p = PathBuf::from(text.trim());
        if p.is_file() {
            return Some(p);
        }
    }
    let found = wheel_file(rel)?;
    if let Some(m) = memo {
        if let Some(dir) = m.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(m, found.to_string_lossy().as_bytes());
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

/// libdevice found and hashed, once per process (`None` if not found or unreadable). The hash
/// is remembered in the cache folder with the file's size and modification time, so a cache
/// hit does not read the half-megabyte file.
pub fn libdevice() -> Option<Libdevice> {
    static LIB: OnceLock<Option<Libdevice>> = OnceLock::new();
    LIB.get_or_init(|| {
        let path = find_libdevice()?;
        let meta = std::fs::metadata(&path).ok()?;
        let stamp = format!(
            "{}\n{}\n{}",
            path.display(),
            meta.len(),
            meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0)
        );
        let memo = memo_path("libdevice-hash");
        if let Some(text) = memo.as_ref().and_then(|m| std::fs::read_to_string(m).ok())
            && let Some((head, hash)) = text.rsplit_once('\n')
            && head == stamp
            && let Some(hash) = crate::cache::Key::from_hex(hash)
        {
            return Some(Libdevice { path, hash: hash.0, bytes: Arc::new(OnceLock::new()) });
        }
        let bytes: Arc<[u8]> = std::fs::read(&path).ok()?.into();
        let hash = *blake3::hash(&bytes).as_bytes();
        if let Some(m) = memo {
            let _ = std::fs::write(m, format!("{stamp}\n{}", blake3::Hash::from_bytes(hash).to_hex()));
        }
        let cell = OnceLock::new();
        let _ = cell.set(Some(bytes));
        Some(Libdevice { path, hash, bytes: Arc::new(cell) })
    })
    .clone()
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
