//! What a file of many kernels costs to compile, with the cache off, into an empty store
//! (misses and writes) and from a full one (hits): whole `kache compile` processes, and in one
//! process one kernel at a time (a program launching each in turn) or all at once
//! (`Jit::compile_many`); batches on one thread and on the machine's available parallelism
//! (`KACHE_COMPILE_THREADS`). Medians of several repetitions, run interleaved; for whole
//! processes also their CPU time, which the machine's other load moves less than wall time. `OTHER_KACHE`, a
//! path to another `kache` binary (an older build), adds its whole-process row, measured in the
//! same turns.
//!
//! `cargo build --release --bin kache --example many_kernels &&
//!  target/release/examples/many_kernels [KERNELS] [REPS] [ARCH] [OTHER_KACHE]` (defaults 200, 7,
//!  sm_80, none); `KACHE_BIN` names the `kache` binary to time (default: the one built beside it).

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kache::{CompileRequest, Config, Jit, Layout, Specialization, Target};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// `n` distinct saxpy-like kernels in one file.
fn source(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "#[kernel]\npub fn k{i}(a: f32, x: &[f32], y: &mut [f32]) {{\n    let i = global_id_x();\n    if i < y.len() {{\n        y[i] = a * x[i] + y[i] * {i}.5;\n    }}\n}}\n"
            )
        })
        .collect()
}

fn one_by_one(config: Config, src: &str, target: Target) -> Duration {
    let t = Instant::now();
    let jit = Jit::new(config).unwrap();
    let m = jit.load_source("many.rs", src).unwrap();
    for name in m.kernel_names() {
        let k = m.kernel(&name).unwrap();
        k.compile(target, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    }
    drop(jit);
    t.elapsed()
}

fn batched(config: Config, src: &str, target: Target) -> Duration {
    let t = Instant::now();
    let jit = Jit::new(config).unwrap();
    let m = jit.load_source("many.rs", src).unwrap();
    let requests: Vec<CompileRequest> = m.kernel_names().iter().map(|n| CompileRequest::new(&m.kernel(n).unwrap(), target)).collect();
    for r in jit.compile_many(&requests) {
        r.unwrap();
    }
    drop(jit);
    t.elapsed()
}

/// CPU time (user and system) of this process's children that have ended.
fn children_cpu() -> Duration {
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage` for the call's duration.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One `kache compile FILE --arch ARCH -o OUT/` process on `threads` threads; `store` None
/// turns the cache off. Its wall-clock time, and its CPU time (what it costs whatever else
/// the machine runs).
fn process(bin: &Path, file: &Path, arch: &str, threads: usize, store: Option<&Path>, out: &Path) -> (Duration, Duration) {
    let mut c = Command::new(bin);
    c.args(["compile", "--arch", arch, "-o"]).arg(out).arg(file).env("KACHE_QUIET", "1").env_remove("KACHE_REMOTE");
    c.env("KACHE_COMPILE_THREADS", threads.to_string());
    match store {
        Some(d) => c.env("KACHE_DIR", d).env_remove("KACHE_DISABLE"),
        None => c.env("KACHE_DISABLE", "1"),
    };
    let (cpu, t) = (children_cpu(), Instant::now());
    let o = c.output().expect("run kache");
    let (elapsed, cpu) = (t.elapsed(), children_cpu() - cpu);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (elapsed, cpu)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|a| a.parse().unwrap()).unwrap_or(200);
    let reps: usize = args.next().map(|a| a.parse().unwrap()).unwrap_or(7);
    let arch = args.next().unwrap_or_else(|| "sm_80".into());
    let other: Option<PathBuf> = args.next().map(PathBuf::from);
    let target = match arch.as_str() {
        "host" => Target::Host,
        a => Target::Nvptx(kache::Arch::parse(a).unwrap()),
    };
    let src = source(n);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("many.rs");
    std::fs::write(&file, &src).unwrap();
    // The `kache` built beside this program, or `KACHE_BIN` (a staged copy on another machine).
    let bin = std::env::var_os("KACHE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/kache"));
    let report = |name: &str, off: Vec<Duration>, miss: Vec<Duration>, hit: Vec<Duration>| {
        let (off, miss, hit) = (median(off), median(miss), median(hit));
        println!(
            "{n} kernels for {arch}, {name:<30} cache off {off:8.1} ms   empty store {miss:8.1} ms ({:.2}x)   hits {hit:7.1} ms   median of {reps}",
            miss / off
        );
    };
    let all = kache::parallel::default_threads();
    let counts: Vec<usize> = if all > 1 { vec![1, all] } else { vec![1] };
    // Every configuration once per repetition, in turn, so that a change in the machine's load
    // falls on all of them.
    let mut whole: Vec<(String, PathBuf, usize)> = Vec::new();
    if bin.is_file() {
        whole.extend(counts.iter().map(|&t| (format!("`kache compile`, {t} thr"), bin.clone(), t)));
    } else {
        println!("({} not built: no whole-process figures)", bin.display());
    }
    if let Some(other) = other {
        whole.push(("`kache compile`, other binary".to_string(), other, all));
    }
    // Per configuration: off, empty store, hits; wall-clock and CPU.
    let mut wall = vec![[Vec::new(), Vec::new(), Vec::new()]; whole.len()];
    let mut cpu = wall.clone();
    for i in 0..reps {
        for (c, (_, bin, threads)) in whole.iter().enumerate() {
            let store = tempfile::tempdir().unwrap();
            for (slot, (what, store)) in [("off", None), ("miss", Some(store.path())), ("hit", Some(store.path()))].into_iter().enumerate()
            {
                let (w, u) = process(bin, &file, &arch, *threads, store, &work.path().join(format!("{what}-{c}-{i}")));
                wall[c][slot].push(w);
                cpu[c][slot].push(u);
            }
        }
    }
    for (c, (name, _, _)) in whole.iter().enumerate() {
        let [off, miss, hit] = wall[c].clone();
        report(name, off, miss, hit);
        let [off, miss, hit] = cpu[c].clone();
        report("  its CPU time (user+sys)", off, miss, hit);
    }
    type Run = fn(Config, &str, Target) -> Duration;
    let runs: Vec<(String, Run, usize)> = std::iter::once(("one by one".to_string(), one_by_one as Run, 1))
        .chain(counts.iter().map(|&t| (format!("compile_many, {t} thr"), batched as Run, t)))
        .collect();
    for (name, run, threads) in runs {
        let (mut off, mut miss, mut hit) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let config = || Config::in_memory().compile_threads(threads);
            off.push(run(config(), &src, target));
            let dir = tempfile::tempdir().unwrap();
            miss.push(run(config().with_cache_dir(dir.path()), &src, target));
            hit.push(run(config().with_cache_dir(dir.path()), &src, target));
        }
        report(&format!("in-process, {name}"), off, miss, hit);
    }
}
