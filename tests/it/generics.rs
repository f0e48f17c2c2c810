//! Tests: generic kernels and device functions. Launches pick instances from argument types,
//! each instance is checked, compiled and stored once under its own key, names of instances
//! are canonical, keys follow what an instance reaches, the host's mistakes are located
//! errors (snapshots), and every generic instance of the corpus assembles for sm_70/80/90.
// Tests fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kache::cache::Key;
use kache::{Arch, Device, Grid, Kernel, Layout, Module, Specialization, Target};

use crate::common;

const AXPY: &str = r#"
#[kernel]
pub fn axpy<T: Float>(a: T, x: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn unused_helper<U: Num>(v: U) -> U {
    v * v
}

#[kernel]
pub fn conv1d<T: Float, const K: usize>(x: &[T], w: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        let mut acc = T::ZERO;
        for k in 0..K {
            if i + k < x.len() {
                acc += w[k] * x[i + k];
            }
        }
        y[i] = acc;
    }
}

#[kernel]
pub fn fill<T: Num>(x: &mut [T]) {
    let z: T = T::ONE;
    let i = global_id_x();
    if i < x.len() {
        x[i] = z;
    }
}

#[kernel]
pub fn plain(x: &mut [f32]) {
    x[0] = 1.0;
}
"#;

fn module(jit: &kache::Jit, src: &str) -> Module {
    jit.load_source("generic.rs", src).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The rendered diagnostics of an error (its message for errors that are not about source).
fn rendered(e: kache::Error) -> String {
    match e {
        kache::Error::Source(d) => d.render(false),
        other => format!("error: {other}\n"),
    }
}

fn key(k: &Kernel) -> Key {
    k.explain(Target::Host, &Specialization::uniform(k.program(), Layout::C)).unwrap().key
}

#[test]
fn a_generic_kernel_launched_with_several_types_compiles_each_instance_once_and_stores_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let jit = common::disk_jit(dir.path());
    let m = module(&jit, AXPY);
    let axpy = m.kernel("axpy").unwrap();
    assert!(axpy.is_generic());
    let launch32 = |k: &Kernel| {
        let x = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
        let mut y = dev.upload(&[10.0f32, 20.0, 30.0]).unwrap();
        k.launch(&dev, Grid::linear(3, 32), (2.0f32, &x, &mut y)).unwrap();
        assert_eq!(y.download().unwrap(), vec![12.0, 24.0, 36.0]);
    };
    let launch64 = |k: &Kernel| {
        let x = dev.upload(&[1.5f64, -2.0]).unwrap();
        let mut y = dev.upload(&[0.25f64, 1.0]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (4.0f64, &x, &mut y)).unwrap();
        assert_eq!(y.download().unwrap(), vec![6.25, -7.0]);
    };
    let launch16 = |k: &Kernel| {
        use kache::half::f16;
        let x = dev.upload(&[f16::from_f32(1.0), f16::from_f32(0.5)]).unwrap();
        let mut y = dev.upload(&[f16::from_f32(1.0); 2]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (f16::from_f32(3.0), &x, &mut y)).unwrap();
        assert_eq!(y.download().unwrap(), vec![f16::from_f32(4.0), f16::from_f32(2.5)]);
    };
    for _ in 0..3 {
        launch32(&axpy);
        launch64(&axpy);
        launch16(&axpy);
    }
    let s = jit.cache().stats();
    assert_eq!((s.misses, s.hits, s.entries), (3, 0, 3), "three instances, each compiled once and stored once: {s:?}");
    assert_eq!(axpy.instances(), ["axpy::<f16>", "axpy::<f32>", "axpy::<f64>"]);
    // Naming an instance gives the one the launches made, whatever the spelling.
    let named = m.kernel("axpy::< f32 >").unwrap();
    assert_eq!(named.name(), "axpy::<f32>");
    assert!(Arc::ptr_eq(&named.compile_for(&dev).unwrap(), &axpy.instance("f32").unwrap().compile_for(&dev).unwrap()));
    launch32(&named);
    assert_eq!(jit.cache().stats().misses, 3);

    // What is stored: one entry per instance, under the instance's name.
    let store = kache::cache::LocalStore::new(dir.path(), std::time::Duration::from_secs(10), u64::MAX).unwrap();
    let mut names: Vec<String> = kache::cache::ops::list(&store).into_iter().map(|l| l.kernel).collect();
    names.sort();
    assert_eq!(names, ["axpy::<f16>", "axpy::<f32>", "axpy::<f64>"]);
    drop(store);

    // Another process (the counters are the store's, across processes): each instance is a
    // hit, looked up alone when first launched.
    let jit2 = common::disk_jit(dir.path());
    let axpy2 = module(&jit2, AXPY).kernel("axpy").unwrap();
    launch64(&axpy2);
    let s = jit2.cache().stats();
    assert_eq!((s.hits, s.misses), (1, 3), "only the f64 instance is looked up: {s:?}");
    launch32(&axpy2);
    launch16(&axpy2);
    launch32(&axpy2);
    let s = jit2.cache().stats();
    assert_eq!((s.hits, s.misses, s.entries), (3, 3, 3), "{s:?}");
}

#[test]
fn instance_names_ignore_spaces_and_evaluate_constants() {
    let jit = common::memory_jit();
    let m = module(&jit, &format!("const THREE: usize = 3;\n{AXPY}"));
    let canonical = m.kernel("conv1d::<f32, 3>").unwrap();
    assert_eq!(canonical.name(), "conv1d::<f32, 3>");
    for spelling in [
        "conv1d::<f32,3>",
        " conv1d :: < f32 , 3 > ",
        "conv1d::<f32, { 1 + 2 }>",
        "conv1d::<f32, THREE>",
        "conv1d::<f32, { THREE * 2 - 3 }>",
    ] {
        let k = m.kernel(spelling).unwrap_or_else(|e| panic!("{spelling}: {e}"));
        assert_eq!(k.name(), "conv1d::<f32, 3>", "{spelling}");
        assert_eq!(key(&k), key(&canonical), "{spelling}");
    }
    assert_ne!(key(&m.kernel("conv1d::<f32, 4>").unwrap()), key(&canonical));
    // Launched, an instance checks its arguments like any kernel.
    let dev = Device::host();
    let mut y = dev.alloc::<f32>(&[4]).unwrap();
    canonical
        .launch(
            &dev,
            Grid::linear(4, 32),
            (&dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap(), &dev.upload(&[1.0f32, 10.0, 100.0]).unwrap(), &mut y),
        )
        .unwrap();
    assert_eq!(y.download().unwrap(), vec![321.0, 432.0, 43.0, 4.0]);
    let e = canonical.launch(&dev, Grid::linear(4, 32), (&dev.upload(&[1.0f64]).unwrap(), &dev.upload(&[1.0f32]).unwrap(), &mut y));
    assert!(matches!(e, Err(kache::Error::BadArgument { .. })), "{e:?}");
}

#[test]
fn every_instance_is_its_own_key() {
    let jit = common::memory_jit();
    let m = module(&jit, AXPY);
    // The body of `fill` does not depend on T but for the constant it stores: still one key each,
    // and two instances never share one even when their code might.
    let names = [
        "axpy::<f32>",
        "axpy::<f64>",
        "axpy::<f16>",
        "axpy::<bf16>",
        "fill::<u32>",
        "fill::<i32>",
        "fill::<f32>",
        "conv1d::<f32, 3>",
        "conv1d::<f32, 5>",
        "conv1d::<f64, 3>",
    ];
    let keys: Vec<Key> = names.iter().map(|n| key(&m.kernel(n).unwrap())).collect();
    for i in 0..keys.len() {
        for j in 0..i {
            assert_ne!(keys[i], keys[j], "{} and {} share a key", names[i], names[j]);
        }
    }
    // An instance's key does not depend on which other instances exist, or in which order
    // they were made.
    let fresh = common::memory_jit();
    let m2 = module(&fresh, AXPY);
    for (n, k) in names.iter().zip(&keys).rev() {
        assert_eq!(key(&m2.kernel(n).unwrap()), *k, "{n}");
    }
}

#[test]
fn editing_a_generic_body_misses_every_instance_and_unreached_items_keep_every_hit() {
    let jit = common::memory_jit();
    let names = ["axpy::<f32>", "axpy::<f64>", "conv1d::<f32, 3>", "fill::<u8>"];
    let keys = |src: &str| -> Vec<Key> {
        let m = module(&jit, src);
        names.iter().map(|n| key(&m.kernel(n).unwrap())).collect()
    };
    let base = keys(AXPY);
    // An edit of a generic function no instance reaches, a new generic function, comments:
    // every key stays.
    for (what, src) in [
        ("unused generic helper edited", AXPY.replace("v * v", "v + v * v")),
        ("a generic function added", format!("{AXPY}\nfn cube<T: Num>(x: T) -> T {{ x * x * x }}\n")),
        ("a generic kernel added", format!("{AXPY}\n#[kernel] pub fn neg<T: Float>(x: &mut [T]) {{ x[0] = -x[0]; }}\n")),
        ("comments", AXPY.replace("let i = global_id_x();", "let i = global_id_x(); // the thread")),
    ] {
        assert_eq!(keys(&src), base, "{what}");
    }
    // An edit of a generic body misses every instance of it, and only those.
    let edited = keys(&AXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] - y[i];"));
    assert_ne!(edited[0], base[0]);
    assert_ne!(edited[1], base[1]);
    assert_eq!(edited[2..], base[2..]);
    // A generic device function reached by an instance is part of its key.
    let with_helper = AXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i] + unused_helper(T::ZERO);");
    let k1 = keys(&with_helper);
    let k2 = keys(&with_helper.replace("v * v", "v + v * v"));
    assert_ne!(k1[0], k2[0]);
    assert_ne!(k1[1], k2[1]);
    assert_eq!(k1[2..], k2[2..]);
}

#[test]
fn generic_device_functions_are_instantiated_per_argument_type_and_share_nothing() {
    let jit = common::memory_jit();
    let src = r#"
        fn twice<T: Num>(x: T) -> T { x + x }
        fn pick<T>(c: bool, a: T, b: T) -> T { if c { a } else { b } }
        #[kernel]
        pub fn k(xi: &mut [i64], xf: &mut [f32], xb: &mut [bool]) {
            xi[0] = twice(xi[0]);
            xf[0] = twice(xf[0]) + twice::<f32>(0.25);
            xb[0] = pick(xb[0], false, true);
            xi[1] = pick::<i64>(true, xi[1], 0);
        }
    "#;
    let m = module(&jit, src);
    let k = m.kernel("k").unwrap();
    let funcs: Vec<&str> = k.program().funcs.iter().map(|f| f.name.as_str()).collect();
    for want in ["twice::<i64>", "twice::<f32>", "pick::<bool>", "pick::<i64>"] {
        assert_eq!(funcs.iter().filter(|f| **f == want).count(), 1, "{want} in {funcs:?}");
    }
    assert!(!funcs.iter().any(|f| *f == "twice" || *f == "pick"), "a definition leaked into the program: {funcs:?}");
    let dev = Device::host();
    let mut xi = dev.upload(&[21i64, 5]).unwrap();
    let mut xf = dev.upload(&[1.5f32]).unwrap();
    let mut xb = dev.upload(&[true]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&mut xi, &mut xf, &mut xb)).unwrap();
    assert_eq!((xi.download().unwrap(), xf.download().unwrap(), xb.download().unwrap()), (vec![42, 5], vec![3.5], vec![false]));
}

#[test]
fn a_generic_kernel_lists_its_parameters_and_refuses_what_only_instances_have() {
    let jit = common::memory_jit();
    let m = module(&jit, AXPY);
    let sigs: Vec<String> = m.generic_kernels().unwrap().into_iter().map(|g| g.signature).collect();
    assert_eq!(
        sigs,
        [
            "axpy<T: Float>(a: T, x: &[T], y: &mut [T])",
            "conv1d<T: Float, const K: usize>(x: &[T], w: &[T], y: &mut [T])",
            "fill<T: Num>(x: &mut [T])"
        ]
    );
    let g = m.kernel("conv1d").unwrap();
    let sig = g.generic_signature().unwrap();
    assert_eq!(sig.generics.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["T: Float", "const K: usize"]);
    assert!(m.kernel("plain").unwrap().generic_signature().is_none());
    let target = Target::Nvptx(Arch::parse("sm_80").unwrap());
    let spec = Specialization::uniform(g.program(), Layout::C);
    for e in [g.compile(target, &spec).map(|_| ()), g.explain(target, &spec).map(|_| ()), g.serialize(Target::Host).map(|_| ())] {
        let e = e.unwrap_err();
        assert!(matches!(e, kache::Error::GenericKernel { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "kernel `conv1d` is generic over <T: Float, const K: usize>: compile an instance, like `conv1d::<f32, 16>`, or launch it and \
             its argument types choose the instance"
        );
    }
    assert_eq!(m.kernel("conv1d::<f64, 7>").unwrap().program().kernel().name, "conv1d::<f64, 7>");
    let all = m.kernels_to_compile().unwrap();
    assert_eq!(
        all.names,
        ["axpy::<f16>", "axpy::<bf16>", "axpy::<f32>", "axpy::<f64>"]
            .into_iter()
            .chain([
                "fill::<i8>",
                "fill::<i16>",
                "fill::<i32>",
                "fill::<i64>",
                "fill::<u8>",
                "fill::<u16>",
                "fill::<u32>",
                "fill::<u64>",
                "fill::<usize>",
                "fill::<f16>",
                "fill::<bf16>",
                "fill::<f32>",
                "fill::<f64>",
                "plain"
            ])
            .collect::<Vec<_>>()
    );
    assert_eq!(all.left_out.len(), 1);
}

/// Launches of a generic kernel whose arguments do not choose an instance, and instance names
/// that are wrong, as the user sees them.
#[test]
fn host_mistakes_with_generic_kernels_are_located_errors() {
    let jit = common::memory_jit();
    let src = format!(
        "{AXPY}\n#[kernel]\npub fn tile<T: Num, const N: usize>(x: &mut [T]) {{\n    x[0] = x[N];\n}}\n\n#[kernel]\npub fn hidden<T: Float>(out: &mut [f32]) {{\n    let z: T = T::ONE;\n    out[0] = z as f32;\n}}\n\n#[kernel]\npub fn big<T: Num, const N: usize>(x: &mut [T]) {{\n    let s = shared_array::<T, {{ N * 2 }}>();\n    s[0] = x[0];\n    x[1] = s[0];\n}}\n"
    );
    let m = module(&jit, &src);
    let dev = Device::host();
    let x32 = dev.upload(&[1.0f32]).unwrap();
    let x64 = dev.upload(&[1.0f64]).unwrap();
    let mut y32 = dev.alloc::<f32>(&[1]).unwrap();
    let mut yi = dev.alloc::<i32>(&[1]).unwrap();
    let mut cases: Vec<(&str, String)> = vec![
        (
            "generic_launch_conflicting_types",
            rendered(
                m.kernel("axpy")
                    .unwrap()
                    .launch(&dev, Grid::linear(1, 1), (2.0f32, &x32, &mut dev.alloc::<f64>(&[1]).unwrap()))
                    .unwrap_err(),
            ),
        ),
        (
            "generic_launch_violates_bound",
            rendered(
                m.kernel("axpy").unwrap().launch(&dev, Grid::linear(1, 1), (2i32, &dev.upload(&[1i32]).unwrap(), &mut yi)).unwrap_err(),
            ),
        ),
        (
            "generic_launch_const_not_inferable",
            rendered(m.kernel("tile").unwrap().launch(&dev, Grid::linear(1, 1), (&mut y32,)).unwrap_err()),
        ),
        (
            "generic_launch_type_not_inferable",
            rendered(m.kernel("hidden").unwrap().launch(&dev, Grid::linear(1, 1), (&mut y32,)).unwrap_err()),
        ),
        ("generic_instance_violates_bound", rendered(m.kernel("axpy::<i32>").unwrap_err())),
        ("generic_instance_wrong_count", rendered(m.kernel("axpy::<f32, f64>").unwrap_err())),
        ("generic_instance_const_not_constant", rendered(m.kernel("conv1d::<f32, n>").unwrap_err())),
        ("generic_instance_type_for_const", rendered(m.kernel("conv1d::<f32, f64>").unwrap_err())),
        ("generic_instance_malformed", rendered(m.kernel("axpy::<f32").unwrap_err())),
        ("generic_instance_of_plain_kernel", rendered(m.kernel("plain::<f32>").unwrap_err())),
        ("generic_instance_const_too_large", rendered(m.kernel("tile::<u8, { 1 << 70 }>").unwrap_err())),
        ("generic_instance_fails_where_its_definition_passed", rendered(m.kernel("big::<f64, 4096>").unwrap_err())),
    ];
    // Counted arguments come first: no instance is chosen for the wrong number of arguments.
    let e = m.kernel("axpy").unwrap().launch(&dev, Grid::linear(1, 1), (2.0f64, &x64)).unwrap_err();
    assert!(matches!(e, kache::Error::ArgumentCount { expected: 3, got: 2, .. }), "{e:?}");
    for (name, text) in cases.drain(..) {
        insta::assert_snapshot!(name, text);
    }
}

/// Every instance the corpus's generic files compile (`Module::kernels_to_compile`, and the
/// named instances of kernels with const parameters) compiles for sm_70, sm_80 and sm_90, and
/// ptxas accepts each: the instances cover every scalar type, whose code differs by
/// architecture (`f16`/`bf16` natively from sm_80 and sm_90, through `f32` before).
#[test]
fn generic_corpus_instances_assemble_for_sm_70_80_and_90() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    let dir = common::fixture("kernels");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("kernels folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("generic_") && n.ends_with(".rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "only {} generic corpus files", files.len());
    let (mut count, mut generic_kernels, mut failures) = (0, 0, Vec::new());
    for file in &files {
        let m = jit.load_file(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        generic_kernels += m.generic_kernels().unwrap_or_else(|e| panic!("{file}: {e}")).len();
        for name in crate::corpus::compile_names(&m, file) {
            let k = m.kernel(&name).unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
            assert!(!k.is_generic(), "{file}: {name} is not an instance");
            for arch in ["sm_70", "sm_80", "sm_90"] {
                count += 1;
                let target = Target::Nvptx(Arch::parse(arch).expect("supported"));
                let r = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).map_err(|e| e.to_string());
                match r.and_then(|c| c.ptx().map(str::to_owned).ok_or_else(|| "no PTX".to_string())) {
                    Err(e) => failures.push(format!("{file}: {name} ({arch}): {e}")),
                    Ok(text) => {
                        assert!(text.contains(&format!(".entry {}", kache::abi::symbol_name(&name))), "{name}: no entry");
                        if let Some(p) = &ptxas
                            && let Err(e) = kache::toolchain::ptxas(p, &text, arch)
                        {
                            failures.push(format!("{file}: {name} ({arch}): ptxas rejected the PTX:\n{e}"));
                        }
                    }
                }
            }
        }
    }
    eprintln!("generic corpus: {} files, {generic_kernels} generic kernels, {count} instance compiles", files.len());
    assert!(generic_kernels >= 8, "only {generic_kernels} generic kernels in the corpus");
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
}

fn kache(cache: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(common::kache_bin());
    c.env("KACHE_DIR", cache).env("NO_COLOR", "1").env_remove("KACHE_REMOTE").env_remove("KACHE_ARCH").env_remove("KACHE_SALT");
    c
}

#[test]
fn kache_compile_names_instances_and_compiles_every_instance_it_can_without_names() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("gen.rs");
    std::fs::write(&file, AXPY).unwrap();
    let run = |args: &[&str]| kache(cache.path()).arg("compile").arg(&file).args(args).output().unwrap();

    // Named instances, spelled any way, each to its own file.
    let out = work.path().join("named");
    let o = run(&["--arch", "sm_80", "--kernel", "axpy::<f64>", "--kernel", "conv1d::<f32,3>", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("axpy::<f64> ->") && stdout.contains("conv1d::<f32, 3> ->"), "{stdout}");
    let ptx = std::fs::read_to_string(out.join("conv1d-f32-3.ptx")).unwrap();
    assert!(ptx.contains(&format!(".entry {}", kache::abi::symbol_name("conv1d::<f32, 3>"))), "{ptx}");
    assert!(std::fs::read_to_string(out.join("axpy-f64.ptx")).unwrap().contains(".target sm_80"));
    if let Some(p) = common::ptxas() {
        common::assemble(&p, &ptx, "conv1d::<f32, 3>");
    }

    // Without --kernel: every kernel that is not generic and every instance of the generic
    // kernels with only type parameters; conv1d (a const parameter) gets a note.
    let all = work.path().join("all");
    let o = run(&["--arch", "sm_80", "-o", all.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files: Vec<String> = std::fs::read_dir(&all).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files.len(), 4 + 13 + 1, "{files:?}");
    assert!(
        files.contains(&"axpy-bf16.ptx".to_string())
            && files.contains(&"fill-usize.ptx".to_string())
            && files.contains(&"plain.ptx".to_string())
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("note:") && stderr.contains("conv1d<T: Float, const K: usize>") && stderr.contains("--kernel 'conv1d::<f32, 16>'"),
        "{stderr}"
    );

    // A generic kernel named without its arguments, and an instance that breaks a bound.
    let o = run(&["--kernel", "axpy", "-o", "-"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("kernel `axpy` is generic over <T: Float>: compile an instance, like `axpy::<f32>`"), "{stderr}");
    let o = run(&["--kernel", "axpy::<u8>", "-o", "-"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("gen.rs:3:13") && stderr.contains("does not satisfy the bound `T: Float`"), "{stderr}");

    // explain and check know instances and generic kernels.
    let o = kache(cache.path()).args(["explain"]).arg(&file).args(["--kernel", "axpy::< f32 >", "--arch", "host"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("kernel axpy::<f32> (host"), "{}", String::from_utf8_lossy(&o.stdout));
    let o = kache(cache.path()).arg("check").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("(4 kernels,") && stdout.contains("kernel fill<T: Num>(x: &mut [T])"), "{stdout}");
}

/// The prebuild step builds the listed instances of a generic kernel (and every instance of
/// one with only type parameters when none are listed), each a typed launch function named
/// after its arguments; the generated code type-checks.
#[test]
fn prebuild_makes_a_typed_launch_function_per_instance() {
    let work = tempfile::tempdir().unwrap();
    let kernels = work.path().join("kernels");
    std::fs::create_dir_all(&kernels).unwrap();
    std::fs::write(kernels.join("gen.rs"), AXPY).unwrap();
    let out = work.path().join("out");
    let builder = || kache::prebuild::Builder::new().kernels_dir(&kernels).out_dir(&out).arch("sm_80").config(kache::Config::in_memory());
    let generated = builder().instances("conv1d", ["f32, 3", "f64,5"]).instances("fill", ["u8"]).build().unwrap();
    let text = std::fs::read_to_string(&generated).unwrap();
    for f in ["axpy_f16", "axpy_bf16", "axpy_f32", "axpy_f64", "conv1d_f32_3", "conv1d_f64_5", "fill_u8", "plain"] {
        assert!(text.contains(&format!("pub fn {f}(")), "no `{f}` in:\n{text}");
    }
    assert!(!text.contains("fill_u16") && !text.contains("fn conv1d("), "{text}");
    assert!(text.contains("Launches kernel `conv1d::<f64, 5>(x: &[f64], w: &[f64], y: &mut [f64])`"), "{text}");
    assert!(text.contains("x: &::kache::DeviceArray<f64>") && text.contains("a: ::kache::half::bf16"), "{text}");
    let lib = work.path().join("lib.rs");
    std::fs::write(
        &lib,
        format!(
            "#![deny(warnings)]\nextern crate kache;\n#[allow(missing_docs)]\npub mod generated {{ include!({:?}); }}\n\
             pub fn uses() {{\n    let _: fn(&::kache::Device, ::kache::Grid, &::kache::DeviceArray<f32>, &::kache::DeviceArray<f32>, &mut ::kache::DeviceArray<f32>) -> ::kache::Result<()> = generated::gen::conv1d_f32_3;\n    let _: fn(&::kache::Device, ::kache::Grid, ::kache::half::f16, &::kache::DeviceArray<::kache::half::f16>, &mut ::kache::DeviceArray<::kache::half::f16>) -> ::kache::Result<()> = generated::gen::axpy_f16;\n    let _ = generated::gen::prebuilt::fill_u8().archs();\n}}\n",
            generated.display().to_string()
        ),
    )
    .unwrap();
    crate::prebuild_names::rustc_check(&lib, "2021").unwrap_or_else(|e| panic!("the generated code does not compile:\n{e}"));

    // A list for a kernel that no file has as a generic kernel is an error; so is an instance
    // that breaks a bound; an instance named like another kernel is a collision.
    let e = builder().instances("saxpy", ["f32"]).build().unwrap_err().to_string();
    assert!(e.contains("no kernel file has a generic kernel of that name"), "{e}");
    let e = builder().instances("axpy", ["i32"]).build().unwrap_err();
    assert!(rendered(e).contains("does not satisfy the bound `T: Float`"));
    std::fs::write(kernels.join("gen.rs"), format!("{AXPY}\n#[kernel]\npub fn axpy_f32(x: &mut [f32]) {{ x[0] = 2.0; }}\n")).unwrap();
    let e = builder().build().unwrap_err().to_string();
    assert!(e.contains("`axpy::<f32>` and `axpy_f32` both become the Rust function `axpy_f32`"), "{e}");
}

/// Generic functions of another file, used through `mod` and `use`, and a generic kernel of a
/// module, launched and named by its path.
#[test]
fn generic_functions_and_kernels_across_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("common.rs"),
        r#"
        pub fn lerp<T: Float>(a: T, b: T, t: T) -> T { a + (b - a) * t }
        #[kernel]
        pub fn scale<T: Num>(x: &mut [T], by: T) {
            let i = global_id_x();
            if i < x.len() { x[i] *= by; }
        }
        "#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.rs"),
        r#"
        mod common;
        use common::lerp;
        #[kernel]
        pub fn mix<T: Float>(a: &[T], b: &[T], out: &mut [T]) {
            let i = global_id_x();
            if i < out.len() { out[i] = lerp(a[i], b[i], T::ONE / (4.0 as T)); }
        }
        #[kernel]
        pub fn mix64(a: &[f64], out: &mut [f64]) { out[0] = common::lerp::<f64>(a[0], a[1], 0.5); }
        "#,
    )
    .unwrap();
    let jit = common::memory_jit();
    let m = jit.load_file(dir.path().join("main.rs")).unwrap();
    let dev = Device::host();
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    m.kernel("mix")
        .unwrap()
        .launch(&dev, Grid::linear(2, 32), (&dev.upload(&[0.0f32, 4.0]).unwrap(), &dev.upload(&[8.0f32, 8.0]).unwrap(), &mut out))
        .unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0, 5.0]);
    let mut o64 = dev.alloc::<f64>(&[1]).unwrap();
    m.kernel("mix64").unwrap().launch(&dev, Grid::linear(1, 1), (&dev.upload(&[1.0f64, 2.0]).unwrap(), &mut o64)).unwrap();
    assert_eq!(o64.download().unwrap(), vec![1.5]);
    let scale = m.kernel("common::scale").unwrap();
    assert!(scale.is_generic());
    let mut x = dev.upload(&[3u16, 4]).unwrap();
    scale.launch(&dev, Grid::linear(2, 32), (&mut x, 3u16)).unwrap();
    assert_eq!(x.download().unwrap(), vec![9, 12]);
    assert_eq!(scale.instances(), ["common::scale::<u16>"]);
    assert_eq!(m.kernel("common::scale::< i8 >").unwrap().name(), "common::scale::<i8>");
    let names = m.kernels_to_compile().unwrap().names;
    assert!(names.contains(&"common::scale::<u16>".to_string()) && names.contains(&"mix::<bf16>".to_string()), "{names:?}");
}

/// `#[kernel(..)]`'s options hold for every instance of a generic kernel: launch bounds refuse a
/// larger block, and `fmad = false` gives the instance the key of uncontracted code.
#[test]
fn instances_keep_the_kernels_options() {
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    let src = "#[kernel(max_threads = 64, fmad = false)]\npub fn f<const N: usize>(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] * 2.0 + N as f32; } }";
    let m = module(&jit, src);
    let k = m.kernel("f::<1>").unwrap();
    assert_eq!(k.program().fmad, Some(false));
    assert_eq!(k.program().launch_bounds.map(|b| b.max_threads), Some(64));
    let dev = Device::host();
    let mut x = dev.upload(&[1.0f32; 4]).unwrap();
    let e = k.launch(&dev, Grid::linear(4, 128), (&mut x,)).unwrap_err();
    assert!(e.to_string().contains("declared with `max_threads = 64`"), "{e}");
    k.launch(&dev, Grid::linear(4, 64), (&mut x,)).unwrap();
    assert_eq!(x.download().unwrap(), vec![3.0; 4]);
    let plain = module(&jit, &src.replace(", fmad = false", "")).kernel("f::<1>").unwrap();
    assert_ne!(key(&k), key(&plain), "fmad is keyed for instances too");
}
