//! The `kache` command, run as a process.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{kache_bin, root};

fn kache(cache: &Path) -> Command {
    let mut c = Command::new(kache_bin());
    c.env("KACHE_DIR", cache).env("NO_COLOR", "1").env_remove("KACHE_REMOTE").env_remove("KACHE_ARCH").env_remove("KACHE_SALT");
    c
}

fn stats(cache: &Path) -> serde_json::Value {
    let o = kache(cache).args(["stats", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
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

#[test]
fn compile_miss_then_hit_and_renamed_reformatted_files_keep_hits() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let saxpy = root().join("examples/kernels/saxpy.rs");
    let out1 = work.path().join("a.ptx");
    ok(&kache(cache.path()).arg("compile").arg(&saxpy).arg("-o").arg(&out1).output().unwrap());
    let s = stats(cache.path());
    assert_eq!((s["misses"].as_u64(), s["hits"].as_u64(), s["entries"].as_u64()), (Some(1), Some(0), Some(1)), "{s}");
    // The same kernel, moved, renamed, reformatted and commented: a hit with the same PTX.
    let text = std::fs::read_to_string(&saxpy).unwrap();
    let moved = work.path().join("elsewhere/renamed.rs");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::write(&moved, format!("// moved here\n\n{}\n/* trailing */", text.replace("    ", "\t"))).unwrap();
    let out2 = work.path().join("b.ptx");
    ok(&kache(cache.path()).arg("compile").arg(&moved).arg("-o").arg(&out2).output().unwrap());
    let s = stats(cache.path());
    assert_eq!(s["hits"].as_u64(), Some(1), "{s}");
    assert_eq!(std::fs::read(&out1).unwrap(), std::fs::read(&out2).unwrap());
    // A real change misses.
    std::fs::write(&moved, text.replace("a * x[i]", "a * x[i] * 2.0")).unwrap();
    ok(&kache(cache.path()).arg("compile").arg(&moved).arg("-o").arg(&out2).output().unwrap());
    assert_eq!(stats(cache.path())["misses"].as_u64(), Some(2));
    assert_ne!(std::fs::read(&out1).unwrap(), std::fs::read(&out2).unwrap());
}

#[test]
fn compile_every_kernel_of_a_file_or_one_and_emit_each_format() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = root().join("examples/kernels/activation.rs");
    let dir = work.path().join("out");
    let text = ok(&kache(cache.path()).arg("compile").arg(&file).arg("-o").arg(&dir).output().unwrap());
    assert!(text.contains("gelu_inplace") && text.contains("softplus"), "{text}");
    assert!(dir.join("gelu_inplace.ptx").is_file() && dir.join("softplus.ptx").is_file());
    let one = work.path().join("one.ptx");
    ok(&kache(cache.path()).arg("compile").arg(&file).args(["--kernel", "softplus", "--arch", "sm_80", "-o"]).arg(&one).output().unwrap());
    let ptx = std::fs::read_to_string(&one).unwrap();
    assert!(ptx.contains(".target sm_80") && ptx.contains(".entry softplus") && !ptx.contains("gelu"));
    let ir = work.path().join("k.ll");
    ok(&kache(cache.path()).arg("compile").arg(&file).args(["--kernel", "softplus", "--emit", "llvm-ir", "-o"]).arg(&ir).output().unwrap());
    assert!(std::fs::read_to_string(&ir).unwrap().contains("define"));
    // Stdout.
    let o = kache(cache.path()).arg("compile").arg(root().join("examples/kernels/saxpy.rs")).args(["-o", "-"]).output().unwrap();
    assert!(ok(&o).contains(".entry saxpy"));
    // KACHE_ARCH is the default architecture.
    let o = kache(cache.path())
        .env("KACHE_ARCH", "sm_86")
        .arg("compile")
        .arg(root().join("examples/kernels/saxpy.rs"))
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(ok(&o).contains(".target sm_86"));
}

/// `--emit llvm-ir` prints the module `compile` emits PTX from, so a kernel calling `exp` has
/// libdevice's `__nv_expf` linked in (here inlined), not left as a declaration.
#[test]
fn emitted_llvm_ir_has_libdevice_linked_in() {
    if crate::common::libdevice().is_none() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("exp.rs");
    std::fs::write(
        &file,
        "#[kernel]\npub fn exp_all(x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    if i < y.len() { y[i] = x[i].exp(); }\n}\n",
    )
    .unwrap();
    let o = kache(cache.path()).arg("compile").arg(&file).args(["--arch", "sm_80", "--emit", "llvm-ir", "-o", "-"]).output().unwrap();
    let ir = ok(&o);
    assert!(ir.contains("define ptx_kernel void @exp_all("), "{ir}");
    let undefined: Vec<&str> = ir.lines().filter(|l| l.starts_with("declare") && l.contains("@__nv_")).collect();
    assert!(undefined.is_empty(), "libdevice functions declared but not linked in: {undefined:#?}");
    // Bounds checks end a failing thread with an inline `exit`, the one call that stays.
    let external_calls: Vec<&str> =
        ir.lines().filter(|l| l.contains("call ") && !l.contains("@llvm.") && !l.contains("asm sideeffect \"exit;\"")).collect();
    assert!(external_calls.is_empty(), "calls left to functions outside the module: {external_calls:#?}");
    // kache's lowering never emits ex2; libdevice's expf computes with it.
    assert!(ir.contains("@llvm.nvvm.ex2.approx"), "libdevice's expf is not in the module:\n{ir}");
}

#[test]
fn cubin_is_assembled_with_ptxas_through_the_cache() {
    if crate::common::ptxas().is_none() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("saxpy.cubin");
    for _ in 0..2 {
        ok(&kache(cache.path())
            .arg("compile")
            .arg(root().join("examples/kernels/saxpy.rs"))
            .args(["--emit", "cubin", "--arch", "sm_90", "-o"])
            .arg(&out)
            .output()
            .unwrap());
        let b = std::fs::read(&out).unwrap();
        assert_eq!(&b[..4], b"\x7fELF", "a cubin is an ELF file");
    }
    let s = stats(cache.path());
    assert_eq!(s["entries"].as_u64(), Some(2), "PTX and cubin entries: {s}");
    // One lookup per kernel and run: the PTX's in `hits` and `misses`, the cubin's in the cubin
    // tier's own figures.
    assert_eq!((s["misses"].as_u64(), s["hits"].as_u64()), (Some(1), Some(1)), "{s}");
    assert_eq!((s["cubin_misses"].as_u64(), s["cubin_hits"].as_u64()), (Some(1), Some(1)), "{s}");

    // The runtime accepts the file: a compiled kernel that holds machine code, not PTX, and
    // keeps it through serialisation. (tests/gpu.rs launches it on a GPU.)
    let jit = crate::common::memory_jit();
    let k = jit.load_file(root().join("examples/kernels/saxpy.rs")).unwrap().kernel("saxpy").unwrap();
    let image = std::fs::read(&out).unwrap();
    // SAFETY: `kache compile --emit cubin` of this very kernel, with its default (checked) options.
    let c = unsafe { k.with_cubin(kache::Arch::parse("sm_90").unwrap(), image.clone()) }.unwrap();
    assert_eq!(c.origin(), kache::Origin::Prebuilt);
    assert!(c.ptx().is_none(), "a cubin kernel has no PTX");
    assert_eq!(c.artifact().bytes(), &image[..]);
    // SAFETY: `serialize`'s output, in this process.
    let back = unsafe { kache::CompiledKernel::deserialize(&c.serialize().unwrap()) }.unwrap();
    assert!(matches!(back.artifact(), kache::codegen::Artifact::Cubin(b) if b == &image));
    // Machine code for a GPU does not run on the host backend: a typed error, nothing runs.
    let dev = kache::Device::host();
    let x = dev.upload(&[1.0f32; 4]).unwrap();
    let mut y = dev.upload(&[1.0f32; 4]).unwrap();
    let e = c.launch(&dev, kache::Grid::linear(4, 4), (2.0f32, &x, &mut y)).unwrap_err();
    assert!(e.to_string().contains("compiled for nvptx sm_90"), "{e}");
    assert_eq!(y.download().unwrap(), vec![1.0; 4]);
    // Anything that is not an ELF image is refused up front.
    // SAFETY: refused before anything could run it.
    let e = unsafe { k.with_cubin(kache::Arch::parse("sm_90").unwrap(), b".version 8.0".to_vec()) }.unwrap_err();
    assert!(e.to_string().contains("not an ELF image"), "{e}");
}

#[test]
fn define_binds_host_scalar_globals_with_suffix_types() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let f = work.path().join("tax.rs");
    std::fs::write(
        &f,
        "#[kernel] pub fn k(x: &mut [f32], n: &mut [u32]) { x[0] = x[0] * (1.0 + RATE); n[0] = COUNT; if FLAG { n[1] = 1; } }",
    )
    .unwrap();
    let out = work.path().join("k.ptx");
    ok(&kache(cache.path())
        .arg("compile")
        .arg(&f)
        .args(["--define", "RATE=0.08f32", "--define", "COUNT=3u32", "-D", "FLAG=true", "-o"])
        .arg(&out)
        .output()
        .unwrap());
    // Unsuffixed literals are i64/f64: a mismatch is a located diagnostic, exit 1.
    let o = kache(cache.path())
        .arg("compile")
        .arg(&f)
        .args(["--define", "RATE=0.08", "--define", "COUNT=3u32", "-D", "FLAG=true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tax.rs:1:") && err.contains("f64"), "{err}");
    // A missing global lists the bound ones.
    let o = kache(cache.path()).arg("check").arg(&f).args(["--define", "RATE=0.08f32"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("COUNT") && err.contains("globals bound on this module: RATE"), "{err}");
    // Bad --define syntax.
    let o = kache(cache.path()).arg("check").arg(&f).args(["--define", "RATE"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let o = kache(cache.path()).arg("check").arg(&f).args(["--define", "RATE=1.0f16"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn check_reports_the_module_and_exit_codes_are_right() {
    let cache = tempfile::tempdir().unwrap();
    let text = ok(&kache(cache.path()).arg("check").arg(root().join("examples/kernels/matmul.rs")).output().unwrap());
    assert!(text.contains("ok (1 kernel, 0 kernel factories, 1 device function)"), "{text}");
    assert!(text.contains("kernel matmul(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>)"), "{text}");
    let o = kache(cache.path()).arg("check").arg("/no/such/file.rs").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let o = kache(cache.path()).args(["compile", "x.rs", "--arch", "sm_61"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "an unreadable file or unsupported arch is the user's error");
    let o = kache(cache.path()).arg("frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "clap's usage errors exit 2");
    // A kernel with an error: the diagnostic has file:line:col and the caret.
    let work = tempfile::tempdir().unwrap();
    let f = work.path().join("bad.rs");
    std::fs::write(&f, "#[kernel]\npub fn k(x: &mut [f32]) {\n    x[0] = 1.0f64;\n}\n").unwrap();
    let o = kache(cache.path()).arg("compile").arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.rs:3:12") && err.contains('^') && !err.contains("panicked"), "{err}");
}

#[test]
fn cache_management_commands() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for f in ["saxpy.rs", "reduce.rs", "histogram.rs"] {
        ok(&kache(cache.path())
            .arg("compile")
            .arg(root().join("examples/kernels").join(f))
            .arg("-o")
            .arg(work.path().join(format!("{f}.ptx")))
            .output()
            .unwrap());
    }
    assert_eq!(ok(&kache(cache.path()).arg("dir").output().unwrap()).trim(), cache.path().display().to_string());
    let ls: serde_json::Value = serde_json::from_str(&ok(&kache(cache.path()).args(["ls", "--json"]).output().unwrap())).unwrap();
    let entries = ls.as_array().unwrap();
    assert_eq!(entries.len(), 3);
    let key = entries[0]["key"].as_str().unwrap().to_string();
    let show = ok(&kache(cache.path()).args(["show", &key[..12]]).output().unwrap());
    assert!(show.contains(&key) && show.contains(".version"), "{show}");
    assert_eq!(kache(cache.path()).args(["show", "zz"]).output().unwrap().status.code(), Some(1));
    assert!(ok(&kache(cache.path()).arg("verify").output().unwrap()).contains("3 entries checked, 0 bad"));
    let explain = ok(&kache(cache.path()).arg("explain").arg(root().join("examples/kernels/saxpy.rs")).output().unwrap());
    for c in ["schema", "toolchain", "target", "code", "specialization", "captures", "libdevice", "salt", "key"] {
        assert!(explain.contains(c), "{explain}");
    }
    assert!(
        explain.contains(&entries.iter().find(|e| e["kernel"] == "saxpy").unwrap()["key"].as_str().unwrap().to_string()),
        "explain's key is the stored key:\n{explain}"
    );
    // Export, clear, import: the entries come back and verify.
    let archive = work.path().join("cache.kar");
    assert!(ok(&kache(cache.path()).arg("export").arg(&archive).output().unwrap()).contains("exported 3 entries"));
    assert!(ok(&kache(cache.path()).arg("clear").output().unwrap()).contains("removed 3 entries"));
    assert_eq!(stats(cache.path())["entries"].as_u64(), Some(0));
    let other = tempfile::tempdir().unwrap();
    assert!(ok(&kache(other.path()).arg("import").arg(&archive).output().unwrap()).contains("imported 3 entries"));
    assert_eq!(stats(other.path())["entries"].as_u64(), Some(3));
    // The imported entries serve hits.
    ok(&kache(other.path())
        .arg("compile")
        .arg(root().join("examples/kernels/saxpy.rs"))
        .arg("-o")
        .arg(work.path().join("x.ptx"))
        .output()
        .unwrap());
    assert_eq!(stats(other.path())["hits"].as_u64(), Some(1));
    // A damaged archive is refused whole.
    let mut bytes = std::fs::read(&archive).unwrap();
    let n = bytes.len() / 2;
    bytes[n] ^= 1;
    std::fs::write(&archive, &bytes).unwrap();
    let o = kache(other.path()).arg("import").arg(&archive).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    // gc to a tiny size evicts; stats --reset zeroes the counters.
    assert!(ok(&kache(other.path()).args(["gc", "--max-size", "1k"]).output().unwrap()).contains("evicted"));
    assert!(stats(other.path())["bytes"].as_u64().unwrap() <= 1024);
    ok(&kache(other.path()).args(["stats", "--reset"]).output().unwrap());
    assert_eq!(stats(other.path())["hits"].as_u64(), Some(0));
    let human = ok(&kache(other.path()).arg("stats").output().unwrap());
    assert!(human.contains("entries") && human.contains("hits"), "{human}");
}

#[test]
fn statistics_are_counted_across_processes() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let f = root().join("examples/kernels/saxpy.rs");
    for i in 0..4 {
        ok(&kache(cache.path()).arg("compile").arg(&f).arg("-o").arg(work.path().join(format!("{i}.ptx"))).output().unwrap());
    }
    let s = stats(cache.path());
    assert_eq!((s["misses"].as_u64(), s["hits"].as_u64()), (Some(1), Some(3)), "{s}");
    assert!(s["compile_ms_saved"].as_u64().is_some());
}

/// A file's kernels compiled on one thread or several (`KACHE_COMPILE_THREADS`): the same
/// outputs, byte for byte, in the same order; a file with two bad kernels reports both, in
/// source order, the same way, and writes nothing.
#[test]
fn compile_threads_change_neither_outputs_nor_errors() {
    let work = tempfile::tempdir().unwrap();
    let good: String = (0..12)
        .map(|i| {
            format!(
                "#[kernel] pub fn k{i}(x: &[f32], y: &mut [f32]) {{ let j = global_id_x(); if j < y.len() {{ y[j] = x[j] * {i}.5; }} }}\n"
            )
        })
        .collect();
    let file = work.path().join("many.rs");
    std::fs::write(&file, &good).unwrap();
    let run = |threads: &str, file: &Path, out: &str| {
        let cache = work.path().join(format!("cache-{out}"));
        kache(&cache).env("KACHE_COMPILE_THREADS", threads).arg("compile").arg(file).arg("-o").arg(work.path().join(out)).output().unwrap()
    };
    let serial = ok(&run("1", &file, "one"));
    let parallel = ok(&run("4", &file, "four"));
    assert_eq!(serial.replace("/one/", "/four/"), parallel, "outputs listed in another order");
    for i in 0..12 {
        let name = format!("k{i}.ptx");
        assert_eq!(
            std::fs::read(work.path().join("one").join(&name)).unwrap(),
            std::fs::read(work.path().join("four").join(&name)).unwrap()
        );
    }
    let bad = work.path().join("bad.rs");
    std::fs::write(&bad, good.replace("x[j] * 3.5", "x[j] * undefined_a").replace("x[j] * 9.5", "x[j] * undefined_b")).unwrap();
    let (one, four) = (run("1", &bad, "bad-one"), run("4", &bad, "bad-four"));
    assert_eq!(one.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&one.stderr).into_owned();
    let (a, b) = (stderr.find("undefined_a"), stderr.find("undefined_b"));
    assert!(a.is_some() && b.is_some() && a < b, "both errors, in source order: {stderr}");
    assert_eq!((four.status.code(), String::from_utf8_lossy(&four.stderr).into_owned()), (Some(1), stderr));
    assert!(!work.path().join("bad-one").exists() && !work.path().join("bad-four").exists(), "a failed compile wrote outputs");
    let o = run("0", &file, "zero");
    assert_eq!(o.status.code(), Some(1), "a setting is the user's to fix: {}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KACHE_COMPILE_THREADS=0 is not a number of threads"));
}

/// A `const` with the name of a bound global is an error whose remedy speaks of the interface
/// that bound it: `--define` on the command line, `with_global` in a program.
#[test]
fn a_const_shadowing_a_global_names_the_remedy_of_each_interface() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let src = "const RATE: f32 = 0.5;\n#[kernel] pub fn k(o: &mut [f32]) { o[0] = RATE; }\n";
    let file = dir.path().join("c.rs");
    std::fs::write(&file, src).unwrap();
    for cmd in ["check", "compile"] {
        let o = kache(cache.path()).arg(cmd).arg(&file).args(["--define", "RATE=2.0f32", "-o", "/dev/null"]).output().unwrap();
        let o =
            if cmd == "check" { kache(cache.path()).arg(cmd).arg(&file).args(["--define", "RATE=2.0f32"]).output().unwrap() } else { o };
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("`RATE` is both the `const`") && err.contains("--define RATE="), "{cmd}: {err}");
        assert!(!err.contains("with_global"), "{cmd}: {err}");
    }
    let m = crate::common::memory_jit().load_source("c.rs", src).unwrap().with_global("RATE", 2.0f32).unwrap();
    let err = m.kernel("k").map(|_| ()).unwrap_err().to_string();
    let rendered = match m.kernel("k") {
        Err(kache::Error::Source(d)) => d.render(false),
        other => panic!("{other:?}"),
    };
    assert!(err.contains("`RATE` is both the `const`"), "{err}");
    assert!(rendered.contains("with_global") && !rendered.contains("--define"), "{rendered}");
}
