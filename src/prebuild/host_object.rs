//! Host object code for the crate being built: what it is compiled for (the crate's own target
//! triple and CPU, as cargo tells the build script), the symbol each kernel's entry gets (unique
//! to the crate, its version and the kernel's compiled code), and the static library the
//! objects go into, linked through cargo.
//!
//! The CPU is the one rustc compiles the crate's Rust code for: `-C target-cpu` from the
//! crate's flags (`x86-64`, the portable baseline, when there is none; `native` is resolved
//! here, on the build machine, as rustc does), with exactly the target features rustc enables
//! (`CARGO_CFG_TARGET_FEATURE`). Kernels thus never need a CPU feature the rest of the program
//! does not already need, whatever machine built them; a crate asks for a newer CPU the way it
//! does for its Rust code, with `RUSTFLAGS=-C target-cpu=...` (or `.cargo/config.toml`).

use std::path::Path;

use crate::build_script;
use crate::codegen::ObjectTarget;
use crate::error::{Error, Result};
use crate::target::HostCpu;

/// The environment cargo gives a build script that decides the host objects.
struct CargoTarget {
    triple: Option<String>,
    arch: Option<String>,
    rustflags: Option<String>,
    features: Option<String>,
}

impl CargoTarget {
    fn from_env() -> CargoTarget {
        let var = |n: &str| std::env::var(n).ok();
        CargoTarget {
            triple: var("TARGET"),
            arch: var("CARGO_CFG_TARGET_ARCH"),
            rustflags: var("CARGO_ENCODED_RUSTFLAGS"),
            features: var("CARGO_CFG_TARGET_FEATURE"),
        }
    }
}

/// What host objects are compiled for: the crate's target when it is an x86-64 one (the only
/// host architecture kache generates code for), else `None` with the reason. Outside a build
/// script, this machine's triple and the baseline CPU.
pub(super) fn object_target() -> std::result::Result<ObjectTarget, String> {
    object_target_from(&CargoTarget::from_env(), &crate::codegen::default_triple)
}

fn object_target_from(env: &CargoTarget, default_triple: &dyn Fn() -> String) -> std::result::Result<ObjectTarget, String> {
    let triple = env.triple.clone().unwrap_or_else(default_triple);
    let arch = env.arch.clone().unwrap_or_else(|| triple.split('-').next().unwrap_or("").to_string());
    if arch != "x86_64" {
        return Err(format!("target {triple}: kache generates host code for x86-64 only"));
    }
    let mut cpu = "x86-64".to_string();
    let mut native = false;
    if let Some(flags) = &env.rustflags {
        let flags: Vec<&str> = flags.split('\u{1f}').collect();
        for (i, f) in flags.iter().enumerate() {
            let value = match f.strip_prefix("-C").or_else(|| f.strip_prefix("--codegen")) {
                Some("") => flags.get(i + 1).copied().unwrap_or(""),
                Some(rest) => rest.trim_start_matches('='),
                None => continue,
            };
            if let Some(c) = value.strip_prefix("target-cpu=") {
                cpu = c.to_string();
            }
        }
    }
    if cpu == "native" {
        cpu = crate::codegen::host_cpu_name();
        native = true;
    }
    let features = match &env.features {
        Some(list) => llvm_features(list),
        // Outside a build script: the baseline's own features, or this machine's for native.
        None if native => crate::codegen::host_cpu_features(),
        None => String::new(),
    };
    Ok(ObjectTarget { triple, cpu, features })
}

/// Rust's names of target features (`CARGO_CFG_TARGET_FEATURE`) as LLVM's feature list, the way
/// rustc passes them to LLVM; features that are not LLVM's (`crt-static`) are left out.
fn llvm_features(rust: &str) -> String {
    let mut out = Vec::new();
    for f in rust.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        let llvm: &[&str] = match f {
            "crt-static" => &[],
            "bmi1" => &["bmi"],
            "cmpxchg16b" => &["cx16"],
            "lahfsahf" => &["sahf"],
            "pclmulqdq" => &["pclmul"],
            "rdrand" => &["rdrnd"],
            "sse4.2" => &["sse4.2", "crc32"],
            "avx512vaes" => &["vaes"],
            "avx512gfni" => &["gfni"],
            "avx512vpclmulqdq" => &["vpclmulqdq"],
            other => {
                out.push(format!("+{other}"));
                continue;
            }
        };
        out.extend(llvm.iter().map(|l| format!("+{l}")));
    }
    out.join(",")
}

/// The CPU host objects are compiled for, as code generation options name it.
pub(super) fn host_cpu(target: &ObjectTarget) -> HostCpu {
    HostCpu::Named { cpu: target.cpu.clone(), features: target.features.clone() }
}

/// What makes this crate's symbols its own: its package name and version, and cargo's hash for
/// this build of it (the folder `OUT_DIR` is in), so two crates, two versions of a crate, or
/// two sources of one version never define the same symbol.
pub(super) fn crate_identity(out_dir: &Path) -> String {
    let var = |n: &str| std::env::var(n).unwrap_or_default();
    let unit = out_dir.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{}\n{}\n{unit}", var("CARGO_PKG_NAME"), var("CARGO_PKG_VERSION"))
}

/// The symbol of a kernel's entry in the crate's object code: `kache_`, 16 hex digits of a hash
/// of the crate's identity, the kernel's cache key and its place in the crate, then the kernel's
/// name in symbol characters (for reading a backtrace).
pub(super) fn entry_symbol(crate_identity: &str, key: &crate::cache::Key, module: &str, kernel: &str) -> String {
    let mut h = blake3::Hasher::new();
    for part in [crate_identity.as_bytes(), &key.0, module.as_bytes(), kernel.as_bytes()] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let hex = h.finalize().to_hex();
    format!("kache_{}_{}", &hex[..16], crate::abi::symbol_name(kernel))
}

/// Archives `objects` into the static library `lib<name>.a` in `dir` with the `cc` crate's
/// archiver (the target's `ar`, as cargo's C builds use it) and, in a build script, tells cargo
/// to link it into the crate.
pub(super) fn archive(name: &str, dir: &Path, objects: &[std::path::PathBuf], target: &ObjectTarget) -> Result<()> {
    let mut build = cc::Build::new();
    build.out_dir(dir).target(&target.triple).opt_level(0).cargo_metadata(build_script::running());
    match std::env::var("HOST") {
        Ok(host) => build.host(&host),
        Err(_) => build.host(&crate::codegen::default_triple()),
    };
    build.try_create_archive(name, objects).map_err(|e| Error::Prebuild(format!("archiving the kernels' host code: {e}")))?;
    if build_script::running() {
        build_script::instruction("rustc-link-search", &format!("native={}", dir.display()));
        build_script::instruction("rustc-link-lib", &format!("static={name}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(triple: &str, flags: &str, features: &str) -> CargoTarget {
        CargoTarget {
            triple: Some(triple.into()),
            arch: Some(triple.split('-').next().unwrap_or("").into()),
            rustflags: Some(flags.into()),
            features: Some(features.into()),
        }
    }

    #[test]
    fn the_crates_cpu_and_features_are_followed() {
        let host = || "x86_64-unknown-linux-gnu".to_string();
        let t = object_target_from(&env("x86_64-unknown-linux-gnu", "", "fxsr,sse,sse2,crt-static"), &host).unwrap();
        assert_eq!((t.cpu.as_str(), t.features.as_str()), ("x86-64", "+fxsr,+sse,+sse2"));
        let flags = "-C\u{1f}target-cpu=znver3\u{1f}-Copt-level=3";
        let t = object_target_from(&env("x86_64-unknown-linux-gnu", flags, "avx2,bmi1,sse4.2"), &host).unwrap();
        assert_eq!((t.cpu.as_str(), t.features.as_str()), ("znver3", "+avx2,+bmi,+sse4.2,+crc32"));
        let t = object_target_from(&env("x86_64-unknown-linux-gnu", "-Ctarget-cpu=x86-64-v3", ""), &host).unwrap();
        assert_eq!(t.cpu, "x86-64-v3");
        let t = object_target_from(&env("x86_64-unknown-linux-gnu", "--codegen=target-cpu=native", "sse2"), &host).unwrap();
        assert_eq!(t.cpu, crate::codegen::host_cpu_name());
        assert!(object_target_from(&env("aarch64-unknown-linux-gnu", "", "neon"), &host).unwrap_err().contains("x86-64 only"));
    }

    #[test]
    fn symbols_differ_by_crate_code_and_place() {
        let k = crate::cache::Key([7; 32]);
        let s = entry_symbol("a\n0.1.0\na-0123", &k, "m", "saxpy");
        assert!(s.starts_with("kache_") && s.ends_with("_saxpy") && s.len() == "kache_".len() + 16 + "_saxpy".len(), "{s}");
        for other in [
            entry_symbol("b\n0.1.0\nb-0123", &k, "m", "saxpy"),
            entry_symbol("a\n0.2.0\na-0123", &k, "m", "saxpy"),
            entry_symbol("a\n0.1.0\na-4567", &k, "m", "saxpy"),
            entry_symbol("a\n0.1.0\na-0123", &crate::cache::Key([8; 32]), "m", "saxpy"),
            entry_symbol("a\n0.1.0\na-0123", &k, "n", "saxpy"),
        ] {
            assert_ne!(s, other);
        }
        assert!(entry_symbol("a", &k, "m", "café").ends_with("_caf_u00e9"));
    }
}
