//! Front-end records: with a local store, a module loaded again (a new JIT: another process) is
//! not parsed, and a kernel asked for again with the same globals is not checked; the kernel a
//! record gives is the one checking makes (same program, same keys, same code, same fault
//! reports); every input flipped runs the front end again, with a fresh store's output; bad
//! input is reported as ever; a damaged record is never served.

use std::path::Path;

use kache::{Config, Device, Grid, Jit, Layout, Module, Specialization, Target};

use crate::common;
use crate::direct::{COMMON, sources};

const ROOT: &str = "mod common;\n\
    #[kernel] pub fn scale(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = common::twice(x[i]) * (RATE as f32); } }\n\
    #[kernel] pub fn poke(x: &mut [f32], at: usize) { x[at] = 1.0; }\n";

fn jit(cache: &Path) -> Jit {
    Jit::new(Config::in_memory().with_cache_dir(cache)).unwrap()
}

fn sm80() -> Target {
    Target::Nvptx(kache::Arch::parse("sm_80").unwrap())
}

/// Kernel `name` of `m` compiled for the host and for sm_80: each compile's key and code.
fn outputs(m: &Module, name: &str) -> Vec<(kache::cache::Key, Vec<u8>)> {
    let k = m.kernel(name).unwrap();
    [Target::Host, sm80()]
        .into_iter()
        .map(|t| {
            let c = k.compile(t, &Specialization::uniform(k.program(), Layout::C)).unwrap();
            (c.key(), c.artifact().bytes().to_vec())
        })
        .collect()
}

fn load(j: &Jit, dir: &Path, rate: f32) -> Module {
    j.load_file(dir.join("k.rs")).unwrap().with_global("RATE", rate).unwrap()
}

/// A new JIT on the same store loads, checks nothing and compiles to what the first JIT did;
/// an out-of-bounds launch of a recorded kernel reports the same array and `file:line:col`.
#[test]
fn a_module_loaded_again_is_neither_parsed_nor_checked() {
    let src = sources(ROOT, COMMON);
    let cache = tempfile::tempdir().unwrap();
    let first = load(&jit(cache.path()), src.path(), 3.0);
    assert!(first.parsed());
    let want = outputs(&first, "scale");
    let dev = Device::host();
    let fault = |m: &Module| {
        let mut x = dev.upload(&[0.0f32; 4]).unwrap();
        m.kernel("poke").unwrap().launch(&dev, Grid::linear(1, 1), (&mut x, 9usize)).unwrap_err().to_string()
    };
    let want_fault = fault(&first);
    assert!(want_fault.contains("k.rs:3:"), "{want_fault}");
    // Its JIT gone, as a process at exit: the records it queued are written.
    drop(first);

    let again = load(&jit(cache.path()), src.path(), 3.0);
    assert!(!again.parsed(), "a recorded source was parsed at load");
    assert_eq!(outputs(&again, "scale"), want);
    assert_eq!(fault(&again), want_fault);
    assert!(!again.parsed(), "a recorded kernel was parsed or checked");
    let mut x = dev.upload(&[1.0f32, 2.0]).unwrap();
    again.kernel("scale").unwrap().launch(&dev, Grid::linear(2, 32), (&mut x,)).unwrap();
    assert_eq!(x.download().unwrap(), vec![6.0, 12.0]);
    // Asking for what needs the syntax parses it, then and there.
    assert_eq!(again.kernel_names(), ["scale", "poke"]);
    assert!(again.parsed());
    assert_eq!(again.files().len(), 2);
}

/// Each input of the records flipped (the root's bytes and a module file's, in place; a
/// global's value, type or name; the kernel asked for; the salt; the toolchain) runs the front
/// end again, and the output equals a fresh store's; put back, the records serve again.
#[test]
fn every_input_flipped_runs_the_front_end_with_a_fresh_stores_output() {
    let cache = tempfile::tempdir().unwrap();
    let src = sources(ROOT, COMMON);
    let dir = src.path().to_path_buf();
    let want = outputs(&load(&jit(cache.path()), &dir, 3.0), "scale");
    // The JIT of a case: 0 as recorded, 1 another salt, 2 another toolchain.
    let jit_of = |store: &Path, config: u8| {
        let c = Config::in_memory().with_cache_dir(store);
        Jit::new(match config {
            1 => Config { salt: "other".into(), ..c },
            2 => Config { toolchain: kache::cache::Toolchain { llvm: "19.0.0-other".into(), ..Default::default() }, ..c },
            _ => c,
        })
        .unwrap()
    };
    // (what changed, a file rewritten for it, the JIT, the module, the kernel, whether the load parses)
    type Case = (&'static str, Option<(&'static str, String)>, u8, Box<dyn Fn(&Jit, &Path) -> Module>, &'static str, bool);
    let base = |j: &Jit, d: &Path| load(j, d, 3.0);
    let cases: Vec<Case> = vec![
        ("the root's bytes", Some(("k.rs", format!("{ROOT}// a comment\n"))), 0, Box::new(base), "scale", true),
        ("a module file", Some(("common.rs", COMMON.replace("2.0", "2.5"))), 0, Box::new(base), "scale", true),
        ("a global's value", None, 0, Box::new(|j, d| load(j, d, 4.0)), "scale", false),
        (
            "a global's type",
            None,
            0,
            Box::new(|j, d| j.load_file(d.join("k.rs")).unwrap().with_global("RATE", 3.0f64).unwrap()),
            "scale",
            false,
        ),
        ("another global", None, 0, Box::new(|j, d| load(j, d, 3.0).with_global("OTHER", 1u32).unwrap()), "scale", false),
        ("the kernel", None, 0, Box::new(base), "poke", false),
        ("the salt", None, 1, Box::new(base), "scale", true),
        ("the toolchain", None, 2, Box::new(base), "scale", true),
    ];
    for (what, rewrite, config, make, name, load_parses) in cases {
        if let Some((file, text)) = &rewrite {
            std::fs::write(dir.join(file), text).unwrap();
        }
        let m = make(&jit_of(cache.path(), config), &dir);
        assert_eq!(m.parsed(), load_parses, "{what}: load");
        let got = outputs(&m, name);
        assert!(m.parsed(), "{what}: the kernel was not checked");
        drop(m);
        let empty = tempfile::tempdir().unwrap();
        assert!(got == outputs(&make(&jit_of(empty.path(), config), &dir), name), "{what}: not a fresh store's output");
        if let Some((file, _)) = rewrite {
            // Put back: served again, at the latest once the load has recorded the files
            // again (a root keeps one parsed-source record: its last parse's module files).
            std::fs::write(dir.join(file), if file == "k.rs" { ROOT } else { COMMON }).unwrap();
            outputs(&base(&jit(cache.path()), &dir), "scale");
            let m = base(&jit(cache.path()), &dir);
            assert_eq!(outputs(&m, "scale"), want, "{what}: put back");
            assert!(!m.parsed(), "{what}: put back, the records did not serve");
        }
    }
}

/// Every kernel of the corpus, from its record, is the program checking makes (compared in
/// full) with the same key; the source stays unparsed.
#[test]
fn every_corpus_kernel_from_its_record_is_the_checked_program() {
    let cache = tempfile::tempdir().unwrap();
    let dir = common::fixture("kernels");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "rs")).collect();
    files.sort();
    let spec_key = |k: &kache::Kernel| k.explain(Target::Host, &Specialization::uniform(k.program(), Layout::C)).unwrap().key;
    let mut checked = 0;
    for f in &files {
        let m = jit(cache.path()).load_file(f).unwrap();
        // Plain kernels and instances of generic ones (`axpy::<f32>`), as a file compiles them.
        let names = crate::corpus::compile_names(&m, &f.file_name().unwrap().to_string_lossy());
        let want: Vec<(String, kache::cache::Key)> = names
            .iter()
            .map(|n| {
                let k = m.kernel(n).unwrap();
                (format!("{:?}", k.program()), spec_key(&k))
            })
            .collect();
        drop(m);
        let again = jit(cache.path()).load_file(f).unwrap();
        assert!(!again.parsed(), "{}", f.display());
        for (n, w) in names.iter().zip(&want) {
            let k = again.kernel(n).unwrap();
            assert_eq!(&(format!("{:?}", k.program()), spec_key(&k)), w, "{}: {n}", f.display());
            checked += 1;
        }
        assert!(!again.parsed(), "{}", f.display());
    }
    assert!(checked > 100, "only {checked} kernels");
}

/// Bad input is reported as without records: a source that does not parse, an unknown kernel
/// and a global of the wrong type, each time; a module bound to a device array, or not
/// persisted, keeps no record.
#[test]
fn errors_are_reported_as_ever_and_some_modules_keep_no_record() {
    let cache = tempfile::tempdir().unwrap();
    let src = sources(ROOT, COMMON);
    for _ in 0..2 {
        let j = jit(cache.path());
        let e = j.load_source("bad.rs", "#[kernel] pub fn k(x: &mut [f32]) { x[0] = ; }").unwrap_err().to_string();
        assert!(e.contains("bad.rs:1:"), "{e}");
        let m = load(&j, src.path(), 3.0);
        let e = m.kernel("nope").unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let wrong = j.load_file(src.path().join("k.rs")).unwrap().with_global("RATE", true).unwrap();
        assert!(wrong.kernel("scale").is_err());
        outputs(&m, "scale");
    }
    let dev = Device::host();
    let table = dev.upload(&[1.0f32; 4]).unwrap();
    let text = "#[kernel] pub fn t(x: &mut [f32]) { x[0] = T[1]; }";
    for _ in 0..2 {
        let j = jit(cache.path());
        let m = j.load_source("t.rs", text).unwrap().with_global("T", &table).unwrap();
        m.kernel("t").unwrap();
        let n = j.load_source("n.rs", "#[kernel] pub fn n(x: &mut [f32]) { x[0] = 2.0; }").unwrap().persist(false);
        n.kernel("n").unwrap();
    }
    let j = jit(cache.path());
    let m = j.load_source("t.rs", text).unwrap().with_global("T", &table).unwrap();
    m.kernel("t").unwrap();
    assert!(m.parsed(), "a kernel bound to a device array came from a record");
    let n = j.load_source("n.rs", "#[kernel] pub fn n(x: &mut [f32]) { x[0] = 2.0; }").unwrap().persist(false);
    n.kernel("n").unwrap();
    assert!(n.parsed(), "a kernel of a module not persisted came from a record");
}

/// Records damaged on disk are not served: the front end runs, the records are written again,
/// and the next JIT is served by them.
#[test]
fn damaged_records_are_not_served_and_are_written_again() {
    let cache = tempfile::tempdir().unwrap();
    let src = sources(ROOT, COMMON);
    let want = outputs(&load(&jit(cache.path()), src.path(), 3.0), "scale");
    let manifests = cache.path().join(format!("v{}", kache::cache::key::KEY_SCHEMA)).join("manifests");
    let mut damaged = 0;
    for shard in std::fs::read_dir(&manifests).unwrap() {
        for f in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let mut b = std::fs::read(&p).unwrap();
            let last = b.len() - 1;
            b[last] ^= 0x40;
            std::fs::write(&p, b).unwrap();
            damaged += 1;
        }
    }
    assert_eq!(damaged, 2, "a parsed-source record and a checked-kernel record");
    let m = load(&jit(cache.path()), src.path(), 3.0);
    assert!(m.parsed());
    assert_eq!(outputs(&m, "scale"), want);
    drop(m);
    let m = load(&jit(cache.path()), src.path(), 3.0);
    assert_eq!(outputs(&m, "scale"), want);
    assert!(!m.parsed());
}

/// A generic kernel launched by its name in a new JIT: neither its definition nor the instance
/// its arguments pick is parsed or checked again, and the results and errors are the same.
#[test]
fn a_generic_kernel_launched_again_needs_no_front_end() {
    let text =
        "#[kernel] pub fn axpy<T: Float>(a: T, x: &[T], y: &mut [T]) { let i = global_id_x(); if i < y.len() { y[i] = a * x[i] + y[i]; } }";
    let cache = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let run = |m: &Module| {
        let k = m.kernel("axpy").unwrap();
        let x = dev.upload(&[1.0f32, 2.0]).unwrap();
        let mut y = dev.upload(&[1.0f32, 1.0]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (2.0f32, &x, &mut y)).unwrap();
        let x64 = dev.upload(&[1.0f64, 2.0]).unwrap();
        let mut y64 = dev.upload(&[0.5f64, 0.5]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (3.0f64, &x64, &mut y64)).unwrap();
        let xi = dev.upload(&[1i32, 2]).unwrap();
        let mut yi = dev.upload(&[1i32, 1]).unwrap();
        let e = k.launch(&dev, Grid::linear(2, 32), (2i32, &xi, &mut yi)).unwrap_err().to_string();
        (y.download().unwrap(), y64.download().unwrap(), e)
    };
    let first = run(&jit(cache.path()).load_source("g.rs", text).unwrap());
    assert_eq!((first.0.clone(), first.1.clone()), (vec![3.0, 5.0], vec![3.5, 6.5]));
    let m = jit(cache.path()).load_source("g.rs", text).unwrap();
    let k = m.kernel("axpy").unwrap();
    assert!(!m.parsed(), "a recorded generic kernel was checked");
    let x = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.upload(&[1.0f32, 1.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 32), (2.0f32, &x, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![3.0, 5.0]);
    assert!(!m.parsed(), "a recorded instance choice was parsed for");
    // The same results and errors (an i32 launch: no instance; the source is parsed to say why).
    assert_eq!(run(&m), first);
}

/// Threads of one JIT racing on a recorded source (some asking for what parses it, others
/// served by records) all get the same kernels.
#[test]
fn threads_racing_on_a_recorded_source_agree() {
    let src = sources(ROOT, COMMON);
    let cache = tempfile::tempdir().unwrap();
    let want = outputs(&load(&jit(cache.path()), src.path(), 3.0), "scale");
    for _ in 0..4 {
        let j = jit(cache.path());
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..6)
                .map(|t| {
                    let (j, dir) = (&j, src.path());
                    s.spawn(move || {
                        let m = load(j, dir, 3.0);
                        if t % 3 == 0 {
                            assert_eq!(m.kernel_names(), ["scale", "poke"]);
                        }
                        outputs(&m, "scale")
                    })
                })
                .collect();
            for h in handles {
                assert_eq!(h.join().unwrap(), want);
            }
        });
    }
}
