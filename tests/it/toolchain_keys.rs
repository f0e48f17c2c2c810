//! Every tier keys every toolchain input by content: for each input (ptxas, libdevice, the
//! salt, kache's version, LLVM's version), flipping it misses, and what the miss produces is
//! what a fresh store produces.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use kache::cache::{Assembler, Toolchain};
use kache::{Arch, Config, Jit, Layout, Origin, Specialization, Target};

use crate::common::{kache_bin, root};

fn kache(cache: &Path) -> Command {
    let mut c = Command::new(kache_bin());
    c.env("KACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .env("KACHE_QUIET", "1")
        .env_remove("KACHE_REMOTE")
        .env_remove("KACHE_ARCH")
        .env_remove("KACHE_SALT");
    c
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "exit {:?}\nstderr: {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stats(cache: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(&kache(cache).args(["stats", "--json"]).output().unwrap())).unwrap()
}

/// `kache compile FILE` with `args`, output to stdout, through the store at `cache`.
fn compile(cache: &Path, file: &Path, args: &[&str], env: &[(&str, &Path)]) -> Vec<u8> {
    let mut c = kache(cache);
    c.arg("compile").arg(file).args(args).args(["-o", "-"]);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    ok(&o);
    o.stdout
}

/// Writes two ptxas wrappers of the same length that assemble differently (-O3, -O0).
fn ptxas_wrappers(real: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let w = |name: &str, opt: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\nexec '{}' {opt} \"$@\"\n", real.display())).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    };
    let (a, b) = (w("ptxas-a", "-O3"), w("ptxas-b", "-O0"));
    assert_eq!(std::fs::metadata(&a).unwrap().len(), std::fs::metadata(&b).unwrap().len());
    (a, b)
}

#[test]
fn a_ptxas_of_the_same_length_with_other_content_misses_and_matches_a_fresh_store() {
    let Some(real) = crate::common::ptxas() else { return };
    let work = tempfile::tempdir().unwrap();
    let (a, b) = ptxas_wrappers(&real, work.path());
    let saxpy = root().join("examples/kernels/saxpy.rs");
    let args = ["--emit", "cubin", "--arch", "sm_90"];
    let cache = tempfile::tempdir().unwrap();
    let with_a = compile(cache.path(), &saxpy, &args, &[("KACHE_PTXAS", &a)]);
    let with_b = compile(cache.path(), &saxpy, &args, &[("KACHE_PTXAS", &b)]);
    let fresh_b = compile(tempfile::tempdir().unwrap().path(), &saxpy, &args, &[("KACHE_PTXAS", &b)]);
    assert_ne!(with_a, fresh_b, "-O3 and -O0 give the same cubin: the test shows nothing");
    assert_eq!(with_b, fresh_b, "the second ptxas was served the first one's cubin");
    let s = stats(cache.path());
    assert_eq!((s["cubin_misses"].as_u64(), s["cubin_hits"].as_u64()), (Some(2), Some(0)), "{s}");
    // Replaced in place with the same size and modification time (`cp -p`): a miss too.
    let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
    std::fs::write(&a, std::fs::read(&b).unwrap()).unwrap();
    std::fs::File::options().write(true).open(&a).unwrap().set_modified(mtime).unwrap();
    assert_eq!(compile(cache.path(), &saxpy, &args, &[("KACHE_PTXAS", &a)]), fresh_b);
}

/// A libdevice that defines `__nv_expf(x)` as `x * factor`, padded (inside an LLVM bitcode
/// wrapper, which LLVM reads past) to exactly `size` bytes.
fn fake_libdevice(dir: &Path, factor: &str, size: usize) -> Vec<u8> {
    let ll = dir.join(format!("ld-{factor}.ll"));
    std::fs::write(
        &ll,
        format!(
            "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\
             define float @__nv_expf(float %x) {{\n  %r = fmul float %x, {factor}\n  ret float %r\n}}\n"
        ),
    )
    .unwrap();
    let bc = dir.join(format!("ld-{factor}.bc"));
    let llvm = std::env::var_os("LLVM_SYS_191_PREFIX").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-19"));
    let o =
        Command::new(llvm.join("bin/llvm-as")).arg(&ll).arg("-o").arg(&bc).output().expect("llvm-as from LLVM 19 (what kache builds with)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let code = std::fs::read(&bc).unwrap();
    let mut out = Vec::new();
    for w in [0x0B17_C0DEu32, 0, 20, code.len() as u32, 0] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&code);
    assert!(out.len() <= size);
    out.resize(size, 0);
    out
}

#[test]
fn a_libdevice_replaced_in_place_with_the_same_size_and_time_misses_and_matches_a_fresh_store() {
    let work = tempfile::tempdir().unwrap();
    let (two, three) = (fake_libdevice(work.path(), "2.0", 4096), fake_libdevice(work.path(), "3.0", 4096));
    let lib = work.path().join("libdevice.10.bc");
    std::fs::write(&lib, &two).unwrap();
    let mtime = std::fs::metadata(&lib).unwrap().modified().unwrap();
    let exp = work.path().join("exp.rs");
    std::fs::write(&exp, "#[kernel]\npub fn e(x: &mut [f32]) { x[0] = x[0].exp(); }\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let env = [("KACHE_LIBDEVICE", lib.as_path())];
    let first = compile(cache.path(), &exp, &[], &env);
    assert_eq!(compile(cache.path(), &exp, &[], &env), first, "a hit");
    // `cp -p` of another libdevice of the same size over it: same inode, size and mtime.
    std::fs::write(&lib, &three).unwrap();
    std::fs::File::options().write(true).open(&lib).unwrap().set_modified(mtime).unwrap();
    let second = compile(cache.path(), &exp, &[], &env);
    let fresh_store = tempfile::tempdir().unwrap();
    let fresh = compile(fresh_store.path(), &exp, &[], &env);
    assert_ne!(first, fresh, "the two libdevices give the same PTX: the test shows nothing");
    assert_eq!(second, fresh, "the old libdevice's PTX was served");
    let s = stats(cache.path());
    assert_eq!((s["misses"].as_u64(), s["hits"].as_u64()), (Some(2), Some(1)), "{s}");
    // And the entry the miss stored is what the fresh store stored, under the same key.
    let keys = |c: &Path| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(&ok(&kache(c).args(["ls", "--json"]).output().unwrap())).unwrap();
        v.as_array().unwrap().iter().map(|e| e["key"].as_str().unwrap().to_string()).collect()
    };
    assert!(keys(cache.path()).contains(&keys(fresh_store.path())[0]));
}

#[test]
fn the_salt_reaches_every_tier() {
    let saxpy = root().join("examples/kernels/saxpy.rs");
    let cache = tempfile::tempdir().unwrap();
    let salted = |salt: &str, args: &[&str]| {
        let o = kache(cache.path()).env("KACHE_SALT", salt).arg("compile").arg(&saxpy).args(args).args(["-o", "-"]).output().unwrap();
        ok(&o);
        o.stdout
    };
    let ptx = salted("one", &[]);
    assert_eq!(salted("two", &[]), ptx, "the salt changes keys, not code");
    let s = stats(cache.path());
    assert_eq!(s["misses"], 2, "{s}");
    // The cubin tier: `compile --emit cubin`, and the driver's key.
    if let Some(_ptxas) = crate::common::ptxas() {
        let args = ["--emit", "cubin", "--arch", "sm_90"];
        let one = salted("one", &args);
        let two = salted("two", &args);
        assert_eq!(one, two);
        let s = stats(cache.path());
        assert_eq!((s["cubin_misses"].as_u64(), s["cubin_hits"].as_u64()), (Some(2), Some(0)), "{s}");
    }
    let k = |salt: &str| {
        let jit = Jit::new(Config { salt: salt.into(), ..Config::in_memory() }).unwrap();
        let k = jit.load_file(&saxpy).unwrap().kernel("saxpy").unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        k.explain_cubin(Arch::parse("sm_90").unwrap(), &spec, Assembler::Driver(13000)).unwrap().key
    };
    assert_ne!(k("one"), k("two"), "the salt does not reach the driver's cubins");
}

/// Compiles saxpy for sm_90 and the host with `toolchain` through the store at `dir`; whether
/// each was compiled (not found), and the artifacts.
fn with_toolchain(dir: &Path, toolchain: Toolchain) -> Vec<(bool, Vec<u8>)> {
    let jit = Jit::new(Config { toolchain, ..Config::in_memory().with_cache_dir(dir) }).unwrap();
    let k = jit.load_file(root().join("examples/kernels/saxpy.rs")).unwrap().kernel("saxpy").unwrap();
    [Target::Nvptx(Arch::parse("sm_90").unwrap()), Target::Host]
        .into_iter()
        .map(|t| {
            let c = k.compile(t, &Specialization::uniform(k.program(), Layout::C)).unwrap();
            (matches!(c.origin(), Origin::Compiled { .. }), c.artifact().bytes().to_vec())
        })
        .collect()
}

#[test]
fn another_kache_or_llvm_version_misses_and_matches_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let current = Toolchain::current();
    let first = with_toolchain(dir.path(), current.clone());
    assert!(first.iter().all(|(compiled, _)| *compiled));
    assert!(with_toolchain(dir.path(), current.clone()).iter().all(|(compiled, _)| !compiled), "the same toolchain hits");
    for other in [
        Toolchain { kache: format!("{}-other", current.kache), ..current.clone() },
        Toolchain { llvm: format!("{}.1", current.llvm), ..current.clone() },
    ] {
        let flipped = with_toolchain(dir.path(), other.clone());
        let fresh = with_toolchain(tempfile::tempdir().unwrap().path(), other.clone());
        for (i, ((compiled, bytes), (_, fresh_bytes))) in flipped.iter().zip(&fresh).enumerate() {
            assert!(compiled, "{other:?}: target {i} was served another toolchain's entry");
            assert_eq!(bytes, fresh_bytes, "{other:?}: target {i}");
        }
        // The cubin keys too.
        let key = |t: &Toolchain| {
            let jit = Jit::new(Config { toolchain: t.clone(), ..Config::in_memory() }).unwrap();
            let k = jit.load_file(root().join("examples/kernels/saxpy.rs")).unwrap().kernel("saxpy").unwrap();
            k.explain_cubin(Arch::parse("sm_90").unwrap(), &Specialization::uniform(k.program(), Layout::C), Assembler::Driver(13000))
                .unwrap()
                .key
        };
        assert_ne!(key(&current), key(&other), "{other:?}");
    }
}

#[test]
fn explain_shows_the_cubin_keys_components() {
    let Some(_ptxas) = crate::common::ptxas() else { return };
    let cache = tempfile::tempdir().unwrap();
    let saxpy = root().join("examples/kernels/saxpy.rs");
    let text = ok(&kache(cache.path()).arg("explain").arg(&saxpy).args(["--arch", "sm_90"]).output().unwrap());
    assert!(text.contains("cubin by ptxas for sm_90"), "{text}");
    for c in ["artifact", "ptx", "arch", "assembler", "salt"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(c)), "{c}: {text}");
    }
    // The cubin key explain shows is the key `compile --emit cubin` stores.
    let cubin_key = text.lines().skip_while(|l| !l.contains("cubin by ptxas")).find(|l| l.trim_start().starts_with("key")).unwrap();
    let cubin_key = cubin_key.split_whitespace().last().unwrap().to_string();
    ok(&kache(cache.path()).arg("compile").arg(&saxpy).args(["--emit", "cubin", "--arch", "sm_90", "-o", "-"]).output().unwrap());
    let ls: serde_json::Value = serde_json::from_str(&ok(&kache(cache.path()).args(["ls", "--json"]).output().unwrap())).unwrap();
    let stored: Vec<&str> = ls.as_array().unwrap().iter().filter(|e| e["kind"] == "Cubin").map(|e| e["key"].as_str().unwrap()).collect();
    assert_eq!(stored, [cubin_key.as_str()], "{text}");
}
