//! `compile_compare`: compile speed beside NVRTC on the CPU, no GPU needed (docs/benchmarks.md).
//! kache (PTX for sm_90 through its cache) and NVRTC (the same algorithms in CUDA C, PTX for
//! compute_90, libnvrtc from a CUDA toolkit or the `nvidia-cuda-nvrtc-cu12` wheel) on saxpy,
//! tiled matmul, block reduction and row softmax: a miss in the process, a miss as a whole
//! process, a hit in a fresh process (kache only: NVRTC has no cache); then the scaling of the
//! miss and the hit with a generated kernel's size, and of the hit with the store's size.
//! numba-cuda and Triton are timed by `compile_peers.py` beside it, where they are installed.
//!
//! ```sh
//! cargo build --release --bin kache --example compile_compare
//! target/release/examples/compile_compare [--quick] [--reps N] [--json FILE]
//!     [--kernels saxpy,softmax_rows|none] [--sizes 10,5000] [--stores 10,100]
//! ```
//! `--quick` takes one repetition of small sizes (a smoke run; no test or CI step runs it yet);
//! `--kernels`, `--sizes` and `--stores` time only those rows (`none`: no row of that table).
//! `--write-sources DIR` writes the kache sources it times (the four kernels, generated kernels
//! of 10 to 5,000 statements) into DIR; `--miss FILE [REPS]` only times REPS in-process misses
//! of one kache file (for profiling the compiler).
// A measurement program: a failed step is a panic with its reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kache::{Arch, Config, FileRequest, Jit, Served, Target};

/// The four kernels: their kache and CUDA C sources, cut out of the execution-speed suite's.
const KERNELS: [&str; 4] = ["saxpy", "matmul_tiled", "reduce_block", "softmax_rows"];

struct Opts {
    kernels: Vec<String>,
    sizes: Vec<usize>,
    stores: Vec<usize>,
    reps: usize,
    json: Option<PathBuf>,
    root: PathBuf,
    kache: PathBuf,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child-nvrtc") {
        // A whole process that compiles one CUDA C file with NVRTC and exits.
        let src = std::fs::read_to_string(&args[1]).unwrap();
        let t = Instant::now();
        nvrtc(&src);
        println!("{:.3}", ms(t));
        return;
    }
    if args.first().map(String::as_str) == Some("--child-noop") {
        return;
    }
    if args.first().map(String::as_str) == Some("--write-sources") {
        // The kache sources this program times, as files in a folder (for profiling).
        let dir = PathBuf::from(&args[1]);
        std::fs::create_dir_all(&dir).unwrap();
        for name in KERNELS {
            std::fs::write(dir.join(format!("{name}.rs")), sources(Path::new("."), name).0).unwrap();
        }
        for n in [10, 100, 1000, 5000] {
            std::fs::write(dir.join(format!("gen{n}.rs")), generated(n).0).unwrap();
        }
        return;
    }
    if args.first().map(String::as_str) == Some("--miss") {
        // In-process misses of one kache file, one line of ms each (for profiling the compiler).
        let src = std::fs::read_to_string(&args[1]).unwrap();
        let reps: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
        for _ in 0..reps {
            println!("{:.3}", kache_miss(&args[1], &src));
        }
        return;
    }
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let root: PathBuf = value("--root").map(Into::into).unwrap_or_else(|| ".".into());
    let list = |flag: &str, all: Vec<String>| match value(flag) {
        Some(v) if v == "none" => Vec::new(),
        Some(v) => v.split(',').map(str::to_string).collect(),
        None => all,
    };
    let numbers = |flag: &str, all: &[usize]| -> Vec<usize> {
        list(flag, all.iter().map(usize::to_string).collect()).iter().map(|n| n.parse().expect("a number")).collect()
    };
    let opts = Opts {
        kernels: list("--kernels", KERNELS.iter().map(|k| k.to_string()).collect()),
        sizes: numbers("--sizes", if quick { &[10, 100] } else { &[10, 100, 1000, 2000, 5000] }),
        stores: numbers("--stores", if quick { &[10, 100] } else { &[10, 100, 1000, 10_000] }),
        reps: value("--reps").and_then(|v| v.parse().ok()).unwrap_or(if quick { 1 } else { 9 }),
        json: value("--json").map(Into::into),
        kache: value("--kache").map(Into::into).unwrap_or_else(|| root.join("target/release/kache")),
        root,
    };
    let report = run(&opts);
    if let Some(p) = &opts.json {
        std::fs::write(p, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

/// The median of `reps` timings of `f`, in ms.
fn time(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    median((0..reps).map(|_| f()).collect())
}

/// The medians of `reps` timings of `f` and of `g`, taken in turn (`f`, `g`, `f`, ..), so
/// that both see the same machine as its load drifts.
fn time_pair(reps: usize, mut f: impl FnMut() -> f64, mut g: impl FnMut() -> f64) -> (f64, f64) {
    let (mut a, mut b) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        a.push(f());
        b.push(g());
    }
    (median(a), median(b))
}

fn sm90() -> Target {
    Target::Nvptx(Arch::parse("sm_90").unwrap())
}

/// The item `name` of a source: from the comment lines above its first line (`#[kernel]` or
/// `extern "C"`) to the closing brace at the start of a line.
fn cut(text: &str, start: &str) -> String {
    let at = text.find(start).unwrap_or_else(|| panic!("{start} not found"));
    let head = text[..at].rfind("\n\n").map(|i| i + 2).unwrap_or(0);
    let end = at + text[at..].find("\n}\n").unwrap() + 3;
    text[head..end].to_string()
}

/// The kache and CUDA C sources of kernel `name`, with the constants they use.
fn sources(root: &Path, name: &str) -> (String, String) {
    let rs = std::fs::read_to_string(root.join("benches/speed/kernels.rs")).unwrap();
    let cu = std::fs::read_to_string(root.join("benches/speed/cuda.cu")).unwrap();
    let rs_head: String = rs.lines().filter(|l| l.starts_with("const ")).map(|l| format!("{l}\n")).collect();
    let cu_head: String = cu.lines().filter(|l| l.starts_with("#define ")).map(|l| format!("{l}\n")).collect();
    let rs_kernel = cut(&rs, &format!("pub fn {name}("));
    // The CUDA C kernel's first line, launch bounds (`__launch_bounds__(256, 4)`) and all.
    let cu_line = cu
        .lines()
        .find(|l| l.starts_with("extern \"C\" __global__ void ") && l.contains(&format!(" {name}(")))
        .unwrap_or_else(|| panic!("CUDA C kernel {name} not found"));
    let cu_kernel = cut(&cu, cu_line);
    (
        format!("{rs_head}\n{}{rs_kernel}", helpers(&rs, "fn ", &rs_kernel)),
        format!("{cu_head}\n{}{cu_kernel}", helpers(&cu, "__device__ ", &cu_kernel)),
    )
}

/// The device functions of a source (items whose first line starts with `prefix`) that
/// `kernel` calls, directly or through each other, in source order.
fn helpers(text: &str, prefix: &str, kernel: &str) -> String {
    let items: Vec<(String, String)> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            let name = l[..l.find('(').unwrap()].rsplit(' ').next().unwrap().to_string();
            (name, cut(text, l))
        })
        .collect();
    let mut used = vec![false; items.len()];
    let mut reach = vec![kernel.to_string()];
    while let Some(body) = reach.pop() {
        for (i, (name, item)) in items.iter().enumerate() {
            if !used[i] && body.contains(&format!("{name}(")) {
                used[i] = true;
                reach.push(item.clone());
            }
        }
    }
    items.iter().zip(used).filter(|(_, u)| *u).map(|((_, item), _)| format!("{item}\n")).collect()
}

/// A generated kernel of `n` statements, in kache and in CUDA C: a chain of multiply-adds
/// with distinct constants, so that nothing folds away.
fn generated(n: usize) -> (String, String) {
    let mut rs = String::from(
        "#[kernel]\npub fn gen(x: &mut [f32], a: f32) {\n    let i = global_id_x();\n    if i < x.len() {\n        let mut v = x[i];\n",
    );
    let mut cu = String::from(
        "extern \"C\" __global__ void gen(float* x, float a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        float v = x[i];\n",
    );
    for k in 0..n {
        let (c1, c2) = (1.0 + (k % 97) as f32 * 1e-4, (k % 13) as f32 * 0.25 + 0.5);
        rs.push_str(&format!("        v = v * {c1:?} + a * {c2:?};\n"));
        cu.push_str(&format!("        v = v * {c1:?}f + a * {c2:?}f;\n"));
    }
    rs.push_str("        x[i] = v;\n    }\n}\n");
    cu.push_str("        x[i] = v;\n    }\n}\n");
    (rs, cu)
}

/// NVRTC: PTX for compute_90, with its default options.
fn nvrtc(source: &str) -> String {
    load_nvrtc();
    let opts = cudarc::nvrtc::CompileOptions { arch: Some("compute_90"), ..Default::default() };
    cudarc::nvrtc::compile_ptx_with_opts(source, opts).unwrap_or_else(|e| panic!("NVRTC: {e:?}")).to_src()
}

/// libnvrtc, loaded by path so cudarc's lookup by name finds it: `KACHE_BENCH_NVRTC`, else found
/// under a CUDA toolkit or the pip wheel (and the path handed to child processes, which then
/// start no Python).
fn load_nvrtc() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        let path = std::env::var_os("KACHE_BENCH_NVRTC").map(PathBuf::from).or_else(kache::toolchain::find_nvrtc).unwrap_or_else(|| {
            eprintln!("libnvrtc not found (KACHE_NVRTC, CUDA_HOME, or the nvidia-cuda-nvrtc-cu12 wheel): `make deps` installs it");
            std::process::exit(2)
        });
        // SAFETY: loading NVIDIA's NVRTC library runs its initialisers only; it stays loaded
        // for the process (leaked on purpose).
        let lib = unsafe { libloading::Library::new(&path) }.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        std::mem::forget(lib);
        // SAFETY: set before any other thread of this program exists (the first NVRTC use).
        unsafe { std::env::set_var("KACHE_BENCH_NVRTC", &path) };
    });
}

/// Wall time of a process, in ms.
fn process(mut c: Command) -> f64 {
    let t = Instant::now();
    let o = c.output().unwrap();
    let elapsed = ms(t);
    assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    elapsed
}

/// `kache compile FILE --arch sm_90` into `cache`, as a fresh process.
fn kache_compile(opts: &Opts, cache: &Path, file: &Path, out: &Path) -> Command {
    let mut c = Command::new(&opts.kache);
    c.env("KACHE_DIR", cache).env_remove("KACHE_REMOTE").env_remove("KACHE_SALT").env("KACHE_QUIET", "1");
    c.arg("compile").arg(file).args(["--arch", "sm_90", "-o"]).arg(out);
    c
}

fn self_exe() -> PathBuf {
    std::env::current_exe().unwrap()
}

/// An in-process kache miss: a JIT with no disk cache and an empty memory, compiling one
/// request (parse, check, key, LLVM, PTX).
fn kache_miss(name: &str, source: &str) -> f64 {
    let jit = Jit::new(Config { cache_dir: None, ..Config::in_memory() }).unwrap();
    let t = Instant::now();
    let c = jit.compile_source(name, source, &FileRequest::new(sm90())).unwrap();
    let elapsed = ms(t);
    assert_eq!(c.served, Served::Full);
    elapsed
}

/// In-process hits of a request recorded in `cache`: in the JIT that compiled it (the program
/// holding its kernels), and in a new JIT on the same store (its memory empty: the manifest and
/// the entry read from their files), in µs.
fn kache_hits(cache: &Path, name: &str, source: &str, reps: usize) -> (f64, f64) {
    let config = Config::in_memory().with_cache_dir(cache);
    let jit = Jit::new(config.clone()).unwrap();
    let req = FileRequest::new(sm90());
    let held = jit.compile_source(name, source, &req).unwrap();
    let warm = time(reps.max(5), || {
        let t = Instant::now();
        let c = jit.compile_source(name, source, &req).unwrap();
        let e = ms(t) * 1e3;
        assert_eq!(c.served, Served::Direct);
        e
    });
    drop(held);
    let fresh = time(reps, || {
        let jit = Jit::new(config.clone()).unwrap();
        let t = Instant::now();
        let c = jit.compile_source(name, source, &req).unwrap();
        let e = ms(t) * 1e3;
        assert_eq!(c.served, Served::Direct);
        e
    });
    (warm, fresh)
}

#[derive(serde::Serialize, Default)]
struct Report {
    kache_start_ms: f64,
    self_start_ms: f64,
    kernels: Vec<KernelRow>,
    sizes: Vec<SizeRow>,
    stores: Vec<StoreRow>,
}

#[derive(serde::Serialize)]
struct KernelRow {
    kernel: String,
    kache_miss_ms: f64,
    nvrtc_miss_ms: f64,
    kache_process_miss_ms: f64,
    nvrtc_process_miss_ms: f64,
    kache_process_hit_ms: f64,
    kache_hit_us: f64,
    kache_new_jit_hit_us: f64,
}

#[derive(serde::Serialize)]
struct SizeRow {
    statements: usize,
    kache_miss_ms: f64,
    nvrtc_miss_ms: f64,
    kache_hit_us: f64,
    kache_new_jit_hit_us: f64,
    kache_process_hit_ms: f64,
}

#[derive(serde::Serialize)]
struct StoreRow {
    entries: usize,
    kache_new_jit_hit_us: f64,
    kache_process_hit_ms: f64,
}

fn run(opts: &Opts) -> Report {
    let reps = opts.reps;
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out.ptx");
    let mut report = Report::default();
    // Warm up LLVM, NVRTC and the page cache before anything is timed.
    let (saxpy_rs, saxpy_cu) = sources(&opts.root, "saxpy");
    kache_miss("saxpy.rs", &saxpy_rs);
    nvrtc(&saxpy_cu);
    let noop = || {
        let mut c = Command::new(&opts.kache);
        c.arg("--version");
        c
    };
    report.kache_start_ms = time(reps, || process(noop()));
    report.self_start_ms = time(reps, || {
        let mut c = Command::new(self_exe());
        c.arg("--child-noop");
        process(c)
    });
    println!(
        "process start: `kache --version` {:.2} ms; this program (NVRTC's process) {:.2} ms",
        report.kache_start_ms, report.self_start_ms
    );
    println!(
        "\n{:<14} {:>10} {:>10} {:>13} {:>13} {:>13} {:>10} {:>13}",
        "kernel", "kache miss", "nvrtc miss", "kache proc m", "nvrtc proc m", "kache proc h", "kache hit", "new-Jit hit"
    );
    println!("{:<14} {:>10} {:>10} {:>13} {:>13} {:>13} {:>10} {:>13}", "", "ms", "ms", "ms", "ms", "ms", "µs", "µs");
    for name in opts.kernels.iter().map(String::as_str) {
        let (rs, cu) = sources(&opts.root, name);
        let rs_file = work.path().join(format!("{name}.rs"));
        let cu_file = work.path().join(format!("{name}.cu"));
        std::fs::write(&rs_file, &rs).unwrap();
        std::fs::write(&cu_file, &cu).unwrap();
        let (kache_miss_ms, nvrtc_miss_ms) = time_pair(
            reps,
            || kache_miss(&format!("{name}.rs"), &rs),
            || {
                let t = Instant::now();
                nvrtc(&cu);
                ms(t)
            },
        );
        let kache_process_miss_ms = time(reps, || {
            let cache = tempfile::tempdir().unwrap();
            process(kache_compile(opts, cache.path(), &rs_file, &out))
        });
        let nvrtc_process_miss_ms = time(reps, || {
            let mut c = Command::new(self_exe());
            c.arg("--child-nvrtc").arg(&cu_file);
            process(c)
        });
        let cache = tempfile::tempdir().unwrap();
        process(kache_compile(opts, cache.path(), &rs_file, &out));
        let kache_process_hit_ms = time(reps, || process(kache_compile(opts, cache.path(), &rs_file, &out)));
        let hits_cache = tempfile::tempdir().unwrap();
        let (kache_hit_us, kache_new_jit_hit_us) = kache_hits(hits_cache.path(), &format!("{name}.rs"), &rs, reps);
        println!(
            "{name:<14} {kache_miss_ms:>10.2} {nvrtc_miss_ms:>10.2} {kache_process_miss_ms:>13.2} {nvrtc_process_miss_ms:>13.2} {kache_process_hit_ms:>13.2} {kache_hit_us:>10.1} {kache_new_jit_hit_us:>13.1}"
        );
        report.kernels.push(KernelRow {
            kernel: name.into(),
            kache_miss_ms,
            nvrtc_miss_ms,
            kache_process_miss_ms,
            nvrtc_process_miss_ms,
            kache_process_hit_ms,
            kache_hit_us,
            kache_new_jit_hit_us,
        });
    }
    println!(
        "\ngenerated kernel\n{:<11} {:>10} {:>10} {:>10} {:>13} {:>13}",
        "statements", "kache miss", "nvrtc miss", "kache hit", "new-Jit hit", "kache proc h"
    );
    println!("{:<11} {:>10} {:>10} {:>10} {:>13} {:>13}", "", "ms", "ms", "µs", "µs", "ms");
    for &n in &opts.sizes {
        let (rs, cu) = generated(n);
        let rs_file = work.path().join(format!("gen{n}.rs"));
        std::fs::write(&rs_file, &rs).unwrap();
        let miss_reps = if n >= 2000 { reps.min(3) } else { reps };
        let (kache_miss_ms, nvrtc_miss_ms) = time_pair(
            miss_reps,
            || kache_miss("gen.rs", &rs),
            || {
                let t = Instant::now();
                nvrtc(&cu);
                ms(t)
            },
        );
        let hits_cache = tempfile::tempdir().unwrap();
        let (kache_hit_us, kache_new_jit_hit_us) = kache_hits(hits_cache.path(), "gen.rs", &rs, reps);
        let cache = tempfile::tempdir().unwrap();
        process(kache_compile(opts, cache.path(), &rs_file, &out));
        let kache_process_hit_ms = time(reps, || process(kache_compile(opts, cache.path(), &rs_file, &out)));
        println!(
            "{n:<11} {kache_miss_ms:>10.2} {nvrtc_miss_ms:>10.2} {kache_hit_us:>10.1} {kache_new_jit_hit_us:>13.1} {kache_process_hit_ms:>13.2}"
        );
        report.sizes.push(SizeRow {
            statements: n,
            kache_miss_ms,
            nvrtc_miss_ms,
            kache_hit_us,
            kache_new_jit_hit_us,
            kache_process_hit_ms,
        });
    }
    println!("\nsaxpy hit against the store's size\n{:<9} {:>13} {:>13}", "entries", "new-Jit hit", "kache proc h");
    println!("{:<9} {:>13} {:>13}", "", "µs", "ms");
    let saxpy_file = work.path().join("saxpy.rs");
    for &n in &opts.stores {
        let cache = tempfile::tempdir().unwrap();
        fill(cache.path(), n);
        process(kache_compile(opts, cache.path(), &saxpy_file, &out));
        let config = Config::in_memory().with_cache_dir(cache.path());
        let req = FileRequest::new(sm90());
        let kache_new_jit_hit_us = time(reps.max(5), || {
            let jit = Jit::new(config.clone()).unwrap();
            let t = Instant::now();
            let c = jit.compile_file(&saxpy_file, &req).unwrap();
            let e = ms(t) * 1e3;
            assert_eq!(c.served, Served::Direct);
            e
        });
        let kache_process_hit_ms = time(reps, || process(kache_compile(opts, cache.path(), &saxpy_file, &out)));
        println!("{n:<9} {kache_new_jit_hit_us:>13.1} {kache_process_hit_ms:>13.2}");
        report.stores.push(StoreRow { entries: n, kache_new_jit_hit_us, kache_process_hit_ms });
    }
    report
}

/// `n` entries in the store at `dir` (files, each a verified envelope of 3 kB), as other
/// kernels would leave them.
fn fill(dir: &Path, n: usize) {
    use kache::cache::{ArtifactKind, Key, LocalStore, Meta, envelope};
    let store = LocalStore::new(dir, std::time::Duration::from_secs(5), 1 << 40).unwrap();
    for i in 0..n as u64 {
        let key = Key(*blake3::hash(&i.to_le_bytes()).as_bytes());
        let payload: Vec<u8> = (0..3000u32).map(|x| (x as u64 * 31 + i) as u8).collect();
        let meta = Meta::new(key, "k", "()", ArtifactKind::Ptx, "k", 5);
        store.write_object(&key, &envelope::encode(&meta, &payload)).unwrap();
    }
}
