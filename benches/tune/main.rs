//! `tune_speed`: the autotuning bench (docs/benchmarks.md, "Autotuning"). For each case of
//! [`CASES`] (a `#[tune]` kernel and its argument sizes) and each size, in a fresh cache folder:
//!
//! 1. the first tuned launch (`Kernel::tuner().launch`), timed from the call to its return:
//!    the tuning time, candidate compiles included;
//! 2. an exhaustive sweep: every candidate of the space timed again, each the same way (the
//!    default `DeviceTimer` with more batches), and the tuned choice's time against the best
//!    (the target: within 3%);
//! 3. a second process's first launch with the tuning result cached, against an untuned cached
//!    hit of the same instance and grid (the target: within 0.1 ms): each measured in
//!    fresh child processes (this binary with `--first-launch`), CUDA context creation and the
//!    arguments' upload apart, the median of `--reps`.
//!
//! On the GPU machine: `.gpu/tune_speed [--reps N] [--only CASE,..] [--json FILE]`; without a
//! GPU, `cargo run --release --example tune_speed -- --dry-run` runs it all on the host backend
//! at small sizes (timings meaningless there). New kernels (the tensor-core GEMMs) are rows of
//! [`CASES`]: a source file, a `#[tune]` kernel and how to make its arguments.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use kache::{ArgValue, Config, Device, DeviceTimer, Jit, KernelArg, LaunchTimer, TuneCandidate, TuningSource};

/// A tuned kernel of the bench: where it is, and its launches.
struct Case {
    /// The row's name (`--only` picks by it).
    name: &'static str,
    /// The kernel source, relative to the repository root.
    file: &'static str,
    /// The `#[tune]` kernel.
    kernel: &'static str,
    /// Problem sizes on a GPU, and in a dry run.
    sizes: &'static [usize],
    dry_sizes: &'static [usize],
    /// The launch's arguments for a size.
    args: fn(&Device, usize) -> Vec<ArgValue>,
}

/// Pseudo-random floats in [-1, 1), the same on every run.
fn floats(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn matrix(dev: &Device, rows: usize, cols: usize, seed: u64) -> kache::DeviceArray<f32> {
    dev.upload_nd(&floats(rows * cols, seed), &[rows, cols], kache::Order::C).unwrap()
}

fn read(a: &kache::DeviceArray<f32>) -> ArgValue {
    KernelArg::arg(&a).unwrap()
}

fn write(a: &mut kache::DeviceArray<f32>) -> ArgValue {
    KernelArg::arg(&a).unwrap()
}

/// The bench's cases. Add a row for a new tunable kernel.
const CASES: &[Case] = &[
    Case {
        name: "matmul",
        file: "benches/tune/kernels.rs",
        kernel: "matmul_tuned",
        sizes: &[1024, 4096],
        dry_sizes: &[64],
        args: |dev, n| {
            let (a, b, mut c) = (matrix(dev, n, n, 1), matrix(dev, n, n, 2), dev.alloc::<f32>(&[n, n]).unwrap());
            vec![read(&a), read(&b), write(&mut c)]
        },
    },
    Case {
        name: "softmax",
        file: "benches/tune/kernels.rs",
        kernel: "softmax_tuned",
        sizes: &[4096],
        dry_sizes: &[512],
        args: |dev, cols| {
            let rows = if cols >= 4096 { 16384 } else { 8 };
            let (x, mut y) = (matrix(dev, rows, cols, 3), dev.alloc::<f32>(&[rows, cols]).unwrap());
            vec![read(&x), write(&mut y)]
        },
    },
    Case {
        name: "saxpy",
        file: "benches/tune/kernels.rs",
        kernel: "saxpy_tuned",
        sizes: &[1 << 20, 1 << 26],
        dry_sizes: &[4096],
        args: |dev, n| {
            let x = dev.upload(&floats(n, 4)).unwrap();
            let mut y = dev.upload(&floats(n, 5)).unwrap();
            vec![2.0f32.arg().unwrap(), read(&x), write(&mut y)]
        },
    },
];

/// One row of the report.
#[derive(Debug, serde::Serialize)]
struct Row {
    case: String,
    size: usize,
    device: String,
    candidates: usize,
    dropped: usize,
    chosen: String,
    /// The sweep's time of the chosen candidate, and of the best one (ms per launch).
    chosen_ms: f64,
    best: String,
    best_ms: f64,
    /// chosen / best.
    ratio: f64,
    /// The first tuned launch, candidate compiles included (ms).
    tuning_ms: f64,
    /// Median first launch of a second process: tuned launch with the result cached, and the
    /// untuned launch of the same instance and grid, both with code and cubins cached (ms).
    first_launch_tuned_ms: f64,
    first_launch_untuned_ms: f64,
}

/// A timer like the tuner's with more batches, for the sweep.
fn sweep_timer() -> DeviceTimer {
    DeviceTimer { warmup: 5, batches: 15 }
}

fn config(cache: &Path) -> Config {
    Config { remote: None, ..Config::from_env().unwrap().with_cache_dir(cache) }
}

/// `--first-launch tuned|untuned ROOT CACHE CASE SIZE [INSTANCE GX GY GZ BX BY BZ SHARED]`: one
/// first launch in this fresh process; prints `first-launch-ms X`.
fn first_launch(args: &[String]) -> ExitCode {
    let [mode, root, cache, case, size, rest @ ..] = args else { return ExitCode::from(2) };
    let case = CASES.iter().find(|c| c.name == case).unwrap();
    let size: usize = size.parse().unwrap();
    let dev = Device::best();
    let values = (case.args)(&dev, size);
    dev.synchronize().unwrap();
    let file = Path::new(root).join(case.file);
    let t0 = Instant::now();
    let jit = Jit::new(config(Path::new(cache))).unwrap();
    let m = jit.load_file(&file).unwrap();
    match mode.as_str() {
        "tuned" => m.kernel(case.kernel).unwrap().launch_tuned(&dev, values).unwrap(),
        _ => {
            let n: Vec<u32> = rest[1..].iter().map(|v| v.parse().unwrap()).collect();
            let grid = kache::Grid::new((n[0], n[1], n[2]), (n[3], n[4], n[5])).with_shared_mem(n[6]);
            m.kernel(&rest[0]).unwrap().launch(&dev, grid, values).unwrap()
        }
    }
    dev.synchronize().unwrap();
    println!("first-launch-ms {}", t0.elapsed().as_secs_f64() * 1e3);
    ExitCode::SUCCESS
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median first launch of `reps` fresh processes.
fn children(mode: &str, root: &Path, cache: &Path, case: &Case, size: usize, untuned: &[String], reps: usize) -> f64 {
    let exe = std::env::current_exe().unwrap();
    let times = (0..reps)
        .map(|_| {
            let o = Command::new(&exe)
                .arg("--first-launch")
                .args([mode, &root.display().to_string(), &cache.display().to_string(), case.name, &size.to_string()])
                .args(untuned)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            out.lines()
                .find_map(|l| l.strip_prefix("first-launch-ms ").and_then(|v| v.parse::<f64>().ok()))
                .unwrap_or_else(|| panic!("{mode} child failed: {out}{}", String::from_utf8_lossy(&o.stderr)))
        })
        .collect();
    median(times)
}

fn run_case(case: &Case, size: usize, root: &Path, reps: usize, dev: &Device) -> Row {
    let cache = tempfile::tempdir().unwrap();
    let (row, tuned) = tune_and_sweep(case, size, root, dev, cache.path());
    // The JIT of the tuning is gone: its records and bookkeeping are written.
    // Second processes: the tuned hit, and the untuned hit of the chosen instance and grid.
    let g = tuned.grid;
    let untuned: Vec<String> = [tuned.kernel.clone()]
        .into_iter()
        .chain([g.grid.0, g.grid.1, g.grid.2, g.block.0, g.block.1, g.block.2, g.shared_mem].iter().map(|v| v.to_string()))
        .collect();
    let (mut t_tuned, mut t_untuned) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        t_tuned.push(children("tuned", root, cache.path(), case, size, &[], 1));
        t_untuned.push(children("untuned", root, cache.path(), case, size, &untuned, 1));
    }
    Row { first_launch_tuned_ms: median(t_tuned), first_launch_untuned_ms: median(t_untuned), ..row }
}

/// The first tuned launch in a fresh cache folder, then the sweep; the row without its first
/// launches, and what the tuning chose.
fn tune_and_sweep(case: &Case, size: usize, root: &Path, dev: &Device, cache: &Path) -> (Row, kache::Tuning) {
    let jit = Jit::new(config(cache)).unwrap();
    let k = jit.load_file(root.join(case.file)).unwrap().kernel(case.kernel).unwrap();
    let args = (case.args)(dev, size);
    dev.synchronize().unwrap();
    let t0 = Instant::now();
    let tuned = k.tuner().launch(dev, args.clone()).unwrap();
    dev.synchronize().unwrap();
    let tuning_ms = t0.elapsed().as_secs_f64() * 1e3;
    let TuningSource::Tuned(report) = &tuned.source else { panic!("{}: not tuned in a fresh cache: {:?}", case.name, tuned.source) };
    // The sweep: every candidate that ran, timed again the same way.
    let candidates = k.tuner().candidates(dev, args.clone()).unwrap();
    let timer = sweep_timer();
    let mut times = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        // Only those the tuning ran and timed (the others disagreed, faulted or did not build).
        if !report.candidates.iter().any(|(d, o)| *d == c.description && matches!(o, kache::TuneOutcome::Timed(_))) {
            continue;
        }
        let shown = TuneCandidate { index: i, config: &c.config, description: &c.description };
        let t = timer.time(dev, &shown, &mut || c.kernel.launch(dev, c.grid, args.clone())).unwrap();
        times.push((c.description.clone(), t));
    }
    let best = times.iter().min_by_key(|(_, t)| *t).unwrap().clone();
    let chosen_desc = &report.candidates[report.chosen].0;
    let chosen_t = times.iter().find(|(d, _)| d == chosen_desc).map(|(_, t)| *t).unwrap_or(Duration::MAX);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let row = Row {
        case: case.name.to_string(),
        size,
        device: dev.model().to_string(),
        candidates: report.candidates.len(),
        dropped: report.candidates.iter().filter(|(_, o)| matches!(o, kache::TuneOutcome::Dropped(_))).count(),
        chosen: chosen_desc.clone(),
        chosen_ms: ms(chosen_t),
        best: best.0.clone(),
        best_ms: ms(best.1),
        ratio: chosen_t.as_secs_f64() / best.1.as_secs_f64(),
        tuning_ms,
        first_launch_tuned_ms: f64::NAN,
        first_launch_untuned_ms: f64::NAN,
    };
    (row, tuned)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--first-launch") {
        return first_launch(&args[1..]);
    }
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: tune_speed [--dry-run] [--reps N] [--only CASE,..] [--json FILE] [--root DIR]");
        return ExitCode::SUCCESS;
    }
    let dry = args.iter().any(|a| a == "--dry-run");
    let reps: usize = value("--reps").and_then(|v| v.parse().ok()).unwrap_or(if dry { 1 } else { 7 });
    let root = PathBuf::from(value("--root").unwrap_or_else(|| ".".into()));
    let only: Vec<String> = value("--only").map(|v| v.split(',').map(String::from).collect()).unwrap_or_default();
    let dev = if dry { Device::host() } else { Device::cuda(0).unwrap_or_else(|e| panic!("no GPU ({e}); --dry-run runs on the host")) };
    println!("device: {}", dev.model());
    println!(
        "{:<8} {:>9} {:>5} {:>4}  {:<28} {:>9} {:<28} {:>9} {:>6} {:>10} {:>10} {:>10}",
        "case", "size", "cands", "drop", "chosen", "ms", "best of sweep", "ms", "ratio", "tuning ms", "1st tuned", "1st untuned"
    );
    let mut rows = Vec::new();
    for case in CASES.iter().filter(|c| only.is_empty() || only.iter().any(|o| o == c.name)) {
        for &size in if dry { case.dry_sizes } else { case.sizes } {
            let r = run_case(case, size, &root, reps, &dev);
            println!(
                "{:<8} {:>9} {:>5} {:>4}  {:<28} {:>9.4} {:<28} {:>9.4} {:>6.3} {:>10.1} {:>10.3} {:>10.3}",
                r.case,
                r.size,
                r.candidates,
                r.dropped,
                r.chosen,
                r.chosen_ms,
                r.best,
                r.best_ms,
                r.ratio,
                r.tuning_ms,
                r.first_launch_tuned_ms,
                r.first_launch_untuned_ms
            );
            rows.push(r);
        }
    }
    if let Some(path) = value("--json") {
        std::fs::write(&path, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    }
    ExitCode::SUCCESS
}
