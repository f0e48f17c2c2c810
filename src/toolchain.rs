//! Finding NVIDIA's tools: libdevice (transcendental math on the GPU) and ptxas (PTX to cubin
//! ahead of time, and PTX validation in tests).
//!
//! Searched, in order: the explicit variable (`KACHE_LIBDEVICE`, `KACHE_PTXAS`), `CUDA_HOME`
//! (and `CUDA_PATH`), `/usr/local/cuda`, `PATH` (ptxas), and the `nvidia-cuda-nvcc-cu12` wheel
//! in any Python site-packages folder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// libdevice, loaded.
#[derive(Clone, Debug)]
pub struct Libdevice {
    /// Where it was found.
    pub path: PathBuf,
    /// Its bitcode.
    pub bytes: Arc<[u8]>,
    /// blake3 of the bitcode (part of the key of kernels that link it).
    pub hash: [u8; 32],
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
            if let Ok(o) = r {
                if o.status.success() {
                    for l in String::from_utf8_lossy(&o.stdout).lines() {
                        let p = PathBuf::from(l.trim());
                        if !l.trim().is_empty() && p.is_dir() && !out.contains(&p) {
                            out.push(p);
                        }
                    }
                    break;
                }
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
    wheel_file("nvvm/libdevice/libdevice.10.bc")
}

/// libdevice loaded and hashed, once per process (`None` if not found or unreadable).
pub fn libdevice() -> Option<Libdevice> {
    static LIB: OnceLock<Option<Libdevice>> = OnceLock::new();
    LIB.get_or_init(|| {
        let path = find_libdevice()?;
        let bytes = std::fs::read(&path).ok()?;
        let hash = *blake3::hash(&bytes).as_bytes();
        Some(Libdevice { path, bytes: bytes.into(), hash })
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
    wheel_file("bin/ptxas")
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
