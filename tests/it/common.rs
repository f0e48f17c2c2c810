//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository root (`KACHE_TEST_ROOT` when set, for binaries run elsewhere).
pub fn root() -> PathBuf {
    std::env::var_os("KACHE_TEST_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// A file under `cache-fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("cache-fixtures").join(rel)
}

/// A JIT that keeps everything in memory.
pub fn memory_jit() -> kache::Jit {
    kache::Jit::new(kache::Config::in_memory()).expect("in-memory jit")
}

/// A JIT with its own fresh cache folder.
pub fn disk_jit(dir: &Path) -> kache::Jit {
    kache::Jit::new(kache::Config::in_memory().with_cache_dir(dir)).expect("disk jit")
}

/// ptxas, or `None` with a printed reason; panics under `KACHE_REQUIRE_PTXAS=1`.
pub fn ptxas() -> Option<PathBuf> {
    match kache::toolchain::find_ptxas() {
        Some(p) => Some(p),
        None => {
            if std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
                panic!(
                    "ptxas not found and KACHE_REQUIRE_PTXAS=1: `make deps` installs it (the nvidia-cuda-nvcc-cu12 wheel, into target/toolchain/), and the Makefile sets KACHE_PTXAS"
                );
            }
            eprintln!("skipping: ptxas not found (`make deps` installs it; KACHE_REQUIRE_PTXAS=1 makes this a failure)");
            None
        }
    }
}

/// libdevice, or `None` with a printed reason; panics under `KACHE_REQUIRE_PTXAS=1` (CI has
/// both, from the same wheel).
pub fn libdevice() -> Option<PathBuf> {
    match kache::toolchain::find_libdevice() {
        Some(p) => Some(p),
        None => {
            if std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
                panic!(
                    "libdevice not found and KACHE_REQUIRE_PTXAS=1: `make deps` installs it (the nvidia-cuda-nvcc-cu12 wheel, into target/toolchain/), and the Makefile sets KACHE_LIBDEVICE"
                );
            }
            eprintln!("skipping: libdevice not found (`make deps` installs it; KACHE_REQUIRE_PTXAS=1 makes this a failure)");
            None
        }
    }
}

/// Assembles PTX with ptxas for sm_90 (sm_90a for PTX of that target); panics with ptxas's message on rejection.
pub fn assemble(ptxas: &Path, ptx: &str, what: &str) {
    let arch = if ptx.contains(".target sm_90a") { "sm_90a" } else { "sm_90" };
    if let Err(e) = kache::toolchain::ptxas(ptxas, ptx, arch) {
        panic!("ptxas rejected the PTX of {what}:\n{e}\n--- PTX ---\n{ptx}");
    }
}

/// The `kache` binary built for these tests.
pub fn kache_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kache"))
}

/// The globals bound for fixture sources that ask for them (`// test-env: globals`): `PRICES`, a
/// read-only device `&[f32]`, and `RATE`, an `f32`.
pub fn globals_env() -> kache::lang::Env {
    use kache::ir::{ArrayTy, CaptureTy, Layout, Scalar};
    kache::lang::Env {
        globals: vec![
            (
                "PRICES".into(),
                CaptureTy::Array { ty: ArrayTy { elem: Scalar::F32.into(), ndim: 1, writable: false }, device: true, layout: Layout::C },
            ),
            ("RATE".into(), CaptureTy::Scalar(Scalar::F32)),
        ],
        ..Default::default()
    }
}
