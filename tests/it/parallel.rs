//! Batches compiled on several threads (`Config::compile_threads`): the same artifacts, keys,
//! order and errors as on one thread, whatever the cache holds, and no deadlock with the cache's
//! locks or another process's catalogue; `Module::compile_all` on a device; and a store that
//! holds every entry and its bookkeeping after a process compiled many kernels and exited at
//! once (the background bookkeeping written at exit).
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kache::cache::{LocalStore, Tier, ops};
use kache::{Arch, CompileRequest, Config, Device, Jit, Origin, Target};

const SM80: Target = Target::Nvptx(Arch { sm: 80, accelerated: false });

/// Kernels of several shapes: plain, with device functions and loops, generic instances, and
/// (where libdevice is found) transcendental functions.
fn source(n: usize, with_libdevice: bool) -> String {
    let mut s = String::from(
        "fn poly(x: f32, c: f32) -> f32 { let mut a = 0.0f32; for i in 0..4 { a = a * x + c + i as f32; } a }\n\
         #[kernel] pub fn fill<T: Num>(x: &mut [T], v: T) { let i = global_id_x(); if i < x.len() { x[i] = v; } }\n",
    );
    for i in 0..n {
        let body = match i % 3 {
            0 => format!("y[i] = a * x[i] + y[i] * {i}.5;"),
            1 => format!("y[i] = poly(x[i], {i}.0) - a;"),
            _ if with_libdevice => format!("y[i] = (x[i] * {i}.25).exp() + a;"),
            _ => format!("y[i] = x[i] * x[i] * {i}.25 + a;"),
        };
        s.push_str(&format!(
            "#[kernel]\npub fn k{i}(a: f32, x: &[f32], y: &mut [f32]) {{ let i = global_id_x(); if i < y.len() {{ {body} }} }}\n"
        ));
    }
    s
}

/// (name, key, artifact bytes) of every kernel the file lists, compiled for `target`.
fn compile_file(config: Config, src: &str, target: Target) -> Vec<(String, String, Vec<u8>)> {
    let jit = Jit::new(config).unwrap();
    let m = jit.load_source("many.rs", src).unwrap();
    m.compile_all(target).unwrap().iter().map(|c| (c.name().to_string(), c.key().hex(), c.artifact().bytes().to_vec())).collect()
}

#[test]
fn parallel_and_serial_batches_give_the_same_artifacts_keys_and_order() {
    let with_libdevice = kache::toolchain::find_libdevice().is_some();
    let src = source(24, with_libdevice);
    for target in [SM80, Target::Host] {
        let serial = compile_file(Config::in_memory().compile_threads(1), &src, target);
        assert!(serial.len() > 24 + 2, "{target}: every kernel and every instance of `fill`: {}", serial.len());
        for threads in [2, 4, 16] {
            let parallel = compile_file(Config::in_memory().compile_threads(threads), &src, target);
            assert!(parallel == serial, "{target}, {threads} threads: not the serial batch's names, keys and bytes");
        }
        // Through a store: the parallel batch's entries, read back by a serial one, are the same.
        let dir = tempfile::tempdir().unwrap();
        let stored = compile_file(Config::in_memory().with_cache_dir(dir.path()).compile_threads(8), &src, target);
        assert!(stored == serial, "{target}: the stored batch differs");
        let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path()).compile_threads(1)).unwrap();
        let again = jit.load_source("many.rs", &src).unwrap().compile_all(target).unwrap();
        assert!(again.iter().all(|c| c.origin() == Origin::Cache(kache::cache::Tier::Local)), "{target}: not every kernel hit");
        assert!(again.iter().zip(&serial).all(|(c, s)| c.artifact().bytes() == s.2.as_slice()));
    }
}

/// Requests that fail while compiling (here: kernels that capture a device array, under
/// `strict`), interleaved with ones that compile: each result where its request is, with the
/// same message, on one thread or many; `compile_all` reports the first in source order.
#[test]
fn errors_are_the_same_and_in_the_same_places_on_any_number_of_threads() {
    let dev = Device::host();
    let table = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut src = String::new();
    for i in 0..12 {
        let body = if i % 4 == 1 { format!("o[0] = TABLE[0] * {i}.0;") } else { format!("o[0] = {i}.0;") };
        src.push_str(&format!("#[kernel] pub fn k{i}(o: &mut [f32]) {{ {body} }}\n"));
    }
    let outcomes = |threads: usize| {
        let jit = Jit::new(Config { strict: true, ..Config::in_memory().compile_threads(threads) }).unwrap();
        let m = jit.load_source("e.rs", &src).unwrap().with_global("TABLE", &table).unwrap();
        let requests: Vec<CompileRequest> =
            (0..12).map(|i| CompileRequest::new(&m.kernel(&format!("k{i}")).unwrap(), Target::Host)).collect();
        let results: Vec<Result<String, String>> =
            jit.compile_many(&requests).into_iter().map(|r| r.map(|c| c.key().hex()).map_err(|e| e.to_string())).collect();
        let first = m.compile_all(Target::Host).map(|_| ()).unwrap_err().to_string();
        (results, first)
    };
    let (serial, first) = outcomes(1);
    let failed: Vec<usize> = serial.iter().enumerate().filter(|(_, r)| r.is_err()).map(|(i, _)| i).collect();
    assert_eq!(failed, [1, 5, 9]);
    assert!(first.contains("kernel 'k1' is not cached on disk"), "{first}");
    for threads in [2, 3, 8] {
        assert_eq!(outcomes(threads), (serial.clone(), first.clone()), "{threads} threads");
    }
}

/// Several threads each running a parallel batch on one JIT, on a disk store whose catalogue
/// another thread holds open the whole time (threads of one process share its handle, so the
/// cache's bookkeeping thread works beside it), and a thread taking the memory tier's lock all
/// along: everything finishes, every batch agrees, and every entry reaches the store.
#[test]
fn parallel_batches_do_not_deadlock_with_the_cache_or_a_held_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(16, false);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let path = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let held = LocalStore::new(&path, Duration::from_secs(5), 1 << 30).unwrap();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            held.batch(|_| {
                ready_tx.send(()).unwrap();
                release_rx.recv().ok();
            })
            .unwrap();
        });
        ready_rx.recv().unwrap();
        let jit = Jit::new(Config::in_memory().with_cache_dir(&path).compile_threads(4)).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let results = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = jit.cache().memory_entries();
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            let batches: Vec<_> =
                (0..3).map(|_| s.spawn(|| jit.load_source("many.rs", &src).unwrap().compile_all(SM80).unwrap())).collect();
            let results: Vec<Vec<String>> =
                batches.into_iter().map(|b| b.join().unwrap().iter().map(|c| c.key().hex()).collect()).collect();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            results
        });
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        let stats = jit.cache().stats();
        done_tx.send((results, stats)).unwrap();
    });
    let (results, stats) = done_rx.recv_timeout(Duration::from_secs(300)).expect("the batches deadlocked");
    assert_eq!(results.len(), 3);
    assert!(results[0].len() > 16 + 2, "every kernel and every instance of `fill`");
    assert!(results.iter().all(|r| r == &results[0]));
    assert!(stats.unavailable.is_none(), "{stats:?}");
    assert_eq!(stats.entries, results[0].len() as u64, "{stats:?}");
    assert_eq!(stats.hits + stats.misses, 3 * stats.entries, "every batch looked every kernel up once: {stats:?}");
}

/// `compile_all` takes a device (or a target): every `#[kernel]` and every instance of a
/// generic kernel compiled for what the device runs, in the list's order, each a miss stored
/// once; a second module of the same source gets them all from the store.
#[test]
fn compile_all_on_a_device_compiles_every_kernel_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = source(30, false);
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path()).compile_threads(3)).unwrap();
    let m = jit.load_source("many.rs", &src).unwrap();
    let wanted = m.kernels_to_compile().unwrap().names;
    assert!(wanted.len() > 30 + 2 && wanted.iter().any(|n| n.starts_with("fill")), "{wanted:?}");
    let compiled = m.compile_all(&dev).unwrap();
    let names: Vec<&str> = compiled.iter().map(|c| c.name()).collect();
    assert_eq!(names, wanted, "every kernel, in the list's order");
    assert!(compiled.iter().all(|c| c.target() == dev.target() && matches!(c.origin(), Origin::Compiled { .. })));
    let stats = jit.cache().stats();
    assert_eq!((stats.misses, stats.entries), (wanted.len() as u64, wanted.len() as u64), "{stats:?}");
    let again = jit.load_source("again.rs", &src).unwrap().compile_all(&dev).unwrap();
    // The memory tier or the store, never a compile.
    assert!(again.iter().all(|c| matches!(c.origin(), Origin::Cache(_))), "a kernel was compiled twice");
}

const EXIT_KERNELS: usize = 200;

/// Runs this binary's `parallel::child_exits_right_after_compiling` in a new process on `dir`.
fn exiting_child(dir: &Path, how: &str) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "parallel::child_exits_right_after_compiling", "--nocapture", "--test-threads=1"])
        .env("KACHE_TEST_CHILD", how)
        .env("KACHE_TEST_STORE", dir);
    let o = c.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "child failed:\n{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("child compiled"), "the child did not run:\n{out}");
}

/// What the test below runs in a fresh process (nothing on its own): compiles a file of
/// [`EXIT_KERNELS`] kernels in one batch on several threads, then one more kernel alone, and
/// ends the process at once: with `exit`, the JIT never dropped (as a JIT held in a `static`
/// is not), or by returning with the JIT dropped.
#[test]
#[ignore = "run by a_store_holds_every_entry_and_its_bookkeeping_after_the_process_exits"]
fn child_exits_right_after_compiling() {
    let Ok(how) = std::env::var("KACHE_TEST_CHILD") else { return };
    let dir = std::env::var("KACHE_TEST_STORE").unwrap();
    let jit = Jit::new(Config::in_memory().with_cache_dir(&dir).compile_threads(4)).unwrap();
    let n = jit.load_source("many.rs", &source(EXIT_KERNELS, false)).unwrap().compile_all(SM80).unwrap().len();
    let one = jit.load_source("one.rs", "#[kernel] pub fn last(x: &mut [f32]) { x[0] = 7.0; }").unwrap();
    one.compile_all(SM80).unwrap();
    println!("child compiled {}", n + 1);
    if how == "exit" {
        std::mem::forget(one);
        std::mem::forget(jit);
        std::process::exit(0);
    }
}

/// A process that compiles a 200-kernel file and exits right away leaves a store with every
/// entry in place and verifying, and every bit of its bookkeeping (its misses, the bytes it
/// wrote, the catalogue's records): written when the cache is dropped, and at exit when it is
/// never dropped. The entries then hit, and are the bytes a compile without a store makes.
#[test]
fn a_store_holds_every_entry_and_its_bookkeeping_after_the_process_exits() {
    let src = source(EXIT_KERNELS, false);
    let fresh = compile_file(Config::in_memory().compile_threads(1), &src, SM80);
    let total = fresh.len() as u64 + 1;
    for how in ["exit", "drop"] {
        let dir = tempfile::tempdir().unwrap();
        exiting_child(dir.path(), how);
        let store = LocalStore::new(dir.path(), Duration::from_secs(30), 1 << 30).unwrap();
        let verified = ops::verify(&store, &mut |_, _| {});
        assert_eq!((verified.checked, verified.dropped.len()), (total, 0), "{how}: entries in place and verifying");
        assert_eq!(ops::list(&store).len() as u64, total, "{how}: the catalogue's records");
        let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path()).compile_threads(1)).unwrap();
        let stats = jit.cache().stats();
        assert_eq!((stats.entries, stats.misses, stats.hits), (total, total, 0), "{how}: the child's bookkeeping: {stats:?}");
        assert!(stats.bytes_written >= stats.bytes, "{how}: {stats:?}");
        let again = jit.load_source("many.rs", &src).unwrap().compile_all(SM80).unwrap();
        assert!(again.iter().all(|c| c.origin() == Origin::Cache(Tier::Local)), "{how}: not every kernel hit");
        let again: Vec<_> = again.iter().map(|c| (c.name().to_string(), c.key().hex(), c.artifact().bytes().to_vec())).collect();
        assert!(again == fresh, "{how}: the stored entries are not what a compile makes");
    }
}
