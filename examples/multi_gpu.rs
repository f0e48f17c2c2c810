//! Several GPUs, one `Jit`: for each GPU, the first launch of a kernel and the time per launch,
//! each measurement in a fresh process with the driver's own PTX cache disabled
//! (`CUDA_CACHE_DISABLE=1`) and CUDA context creation reported apart.
//!
//! Modes, for saxpy and the medium kernel (`benches/kernels/medium.rs`):
//!
//! - `hit`: the kernel's PTX and cubin in the cache (from an earlier process). GPU 0's first
//!   launch is the lookup, the cubin's load and the launch; GPU 1's, after it, should be its
//!   module load alone: the same compiled kernel and the same cubin (`Reused`), nothing looked up;
//! - `miss`: an empty cache: GPU 0 compiles and the driver JITs, GPU 1 reuses that cubin;
//! - `hit, both`: both first launches at once from two threads (the second GPU waits for the
//!   cubin the first fetches, then loads it).
//!
//! Then the time per launch on each GPU (launches queued back to back, then one wait), and on
//! both at once from two threads. Every result is checked against a reference. Run on a machine
//! with two GPUs: `multi_gpu [--reps N]`. `--host` runs the same program on two host devices
//! (`Device::host_device`): a dry run of the program where there is no GPU, not a measurement.

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use kache::{Config, Device, DeviceArray, Grid, Jit, Kernel, Order};

const SAXPY: &str = include_str!("kernels/saxpy.rs");
const MEDIUM: &str = include_str!("../benches/kernels/medium.rs");

/// Launches queued back to back for the time per launch (a few on the host devices of a dry
/// run, where each takes tens of milliseconds).
fn launches() -> usize {
    if on_host() { 2 } else { 200 }
}

/// A dry run on host devices (`--host`).
fn on_host() -> bool {
    std::env::var_os("MULTI_GPU_ON_HOST").is_some()
}

/// One GPU's arrays for a kernel, uploaded before any clock starts.
struct Work {
    x: DeviceArray<f32>,
    y: DeviceArray<f32>,
    u: DeviceArray<f32>,
    next: DeviceArray<f32>,
}

const N: usize = 1 << 20;

impl Work {
    fn new(d: &Device) -> Work {
        Work {
            x: d.upload(&vec![1.0f32; N]).unwrap(),
            y: d.upload(&vec![2.0f32; N]).unwrap(),
            u: d.upload_nd(&vec![0.5f32; 1024 * 1024], &[1024, 1024], Order::C).unwrap(),
            next: d.alloc::<f32>(&[1024, 1024]).unwrap(),
        }
    }

    /// One launch of `kernel` (queued, not waited for).
    fn launch(&mut self, kernel: &str, k: &Kernel, d: &Device) -> kache::Result<()> {
        if kernel == "saxpy" {
            k.launch(d, Grid::linear(N, 256), (2.0f32, &self.x, &mut self.y))
        } else {
            k.launch(d, Grid::new((64u32, 64u32), (16u32, 16u32)), (&self.u, &mut self.next, 0.1f32, 0.01f32))
        }
    }

    /// Checks the result of `launches` launches from fresh arrays.
    fn check(&self, kernel: &str, launches: usize) -> Result<(), String> {
        if kernel == "saxpy" {
            let want = 2.0 + 2.0 * launches as f32;
            let got = self.y.download().map_err(|e| e.to_string())?;
            if got.iter().any(|v| *v != want) {
                return Err(format!("saxpy: {:?}, expected {want}", &got[..4]));
            }
        } else {
            // A uniform field of 0.5 has no laplacian and no gradient, and stays 0.5 plus the
            // source term, which is below dt * 0.01 in magnitude.
            let got = self.next.download().map_err(|e| e.to_string())?;
            if !got.iter().all(|v| (v - 0.5).abs() <= 1e-3) {
                return Err(format!("medium: {:?}, expected 0.5 within 1e-3", &got[..4]));
            }
        }
        Ok(())
    }

    /// The medium kernel's output, which both GPUs must compute alike (saxpy's is checked
    /// exactly against its reference).
    fn output(&self, kernel: &str) -> Result<Vec<f32>, String> {
        if kernel == "saxpy" { Ok(Vec::new()) } else { self.next.download().map_err(|e| e.to_string()) }
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The two devices: GPUs 0 and 1, or host devices 0 and 1 for a dry run (`--host`).
fn open(n: usize) -> kache::Result<Device> {
    if on_host() { Ok(Device::host_device(n)) } else { Device::cuda(n) }
}

/// One process: opens both GPUs, runs `kernel`'s first launch on each (`mode` "both": at the
/// same time from two threads) and the launch timings; prints one RESULT line per GPU.
fn child(kernel: &str, mode: &str, dir: &Path) -> Result<(), String> {
    let e = |x: kache::Error| x.to_string();
    let mut devices = Vec::new();
    let mut ctx_ms = Vec::new();
    for n in 0..2 {
        let t = Instant::now();
        devices.push(open(n).map_err(e)?);
        ctx_ms.push(ms(t));
    }
    let mut work: Vec<Work> = devices.iter().map(Work::new).collect();
    for d in &devices {
        d.synchronize().map_err(e)?;
    }
    let (src, name) = if kernel == "saxpy" { (SAXPY, "saxpy") } else { (MEDIUM, "heat_step") };
    let config = Config { cache_dir: Some(dir.to_path_buf()), ..Config::from_env().map_err(e)? };

    // First launches: GPU 0's from nothing (JIT, lookup, load), then GPU 1's with the kernel
    // that GPU 0 made ready; or both at once.
    let t0 = Instant::now();
    let jit = Jit::new(config).map_err(e)?;
    let k = jit.load_source(&format!("{kernel}.rs"), src).map_err(e)?.kernel(name).map_err(e)?;
    let mut first_ms = [0.0; 2];
    if mode == "both" {
        let start = Arc::new(Barrier::new(2));
        let times: Vec<Result<(f64, Work), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = devices
                .iter()
                .zip(work.drain(..))
                .map(|(d, mut w)| {
                    let (k, start) = (k.clone(), start.clone());
                    s.spawn(move || {
                        start.wait();
                        let t = Instant::now();
                        w.launch(kernel, &k, d).map_err(e)?;
                        d.synchronize().map_err(e)?;
                        Ok((ms(t), w))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for (i, r) in times.into_iter().enumerate() {
            let (t, w) = r?;
            first_ms[i] = t;
            work.push(w);
        }
    } else {
        for (i, d) in devices.iter().enumerate() {
            let t = if i == 0 { t0 } else { Instant::now() };
            work[i].launch(kernel, &k, d).map_err(e)?;
            d.synchronize().map_err(e)?;
            first_ms[i] = ms(t);
        }
    }
    for w in &work {
        w.check(kernel, 1)?;
    }
    if work[0].output(kernel)? != work[1].output(kernel)? {
        return Err(format!("{kernel}: the two GPUs computed different results"));
    }
    let c = k.compile_for(&devices[0]).map_err(e)?;
    let loads: Vec<String> = devices.iter().map(|d| format!("{:?}", c.loaded_on(d)).replace(' ', "")).collect();

    // Per launch: each GPU alone, then both at once from two threads.
    let mut alone_us = Vec::new();
    for (d, w) in devices.iter().zip(work.iter_mut()) {
        let t = Instant::now();
        for _ in 0..launches() {
            w.launch(kernel, &k, d).map_err(e)?;
        }
        d.synchronize().map_err(e)?;
        alone_us.push(ms(t) * 1e3 / launches() as f64);
        w.check(kernel, 1 + launches())?;
    }
    let start = Arc::new(Barrier::new(2));
    let both: Vec<Result<f64, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = devices
            .iter()
            .zip(work.iter_mut())
            .map(|(d, w)| {
                let (k, start) = (k.clone(), start.clone());
                s.spawn(move || {
                    start.wait();
                    let t = Instant::now();
                    for _ in 0..launches() {
                        w.launch(kernel, &k, d).map_err(e)?;
                    }
                    d.synchronize().map_err(e)?;
                    w.check(kernel, 1 + 2 * launches())?;
                    Ok(ms(t) * 1e3 / launches() as f64)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    for (i, b) in both.into_iter().enumerate() {
        println!(
            "RESULT gpu={i} ctx_ms={:.3} first_ms={:.3} alone_us={:.2} both_us={:.2} origin={} load={}",
            ctx_ms[i],
            first_ms[i],
            alone_us[i],
            b?,
            format!("{:?}", c.origin()).replace(' ', ""),
            loads[i]
        );
    }
    Ok(())
}

#[derive(Clone, Debug, Default)]
struct Sample {
    ctx_ms: f64,
    first_ms: f64,
    alone_us: f64,
    both_us: f64,
    origin: String,
    load: String,
}

/// Runs one child process; a sample per GPU.
fn run_child(exe: &Path, kernel: &str, mode: &str, dir: &Path) -> Result<Vec<Sample>, String> {
    let o = Command::new(exe)
        .args(["--child", kernel, mode])
        .arg(dir)
        .env("CUDA_CACHE_DISABLE", "1")
        .env("KACHE_QUIET", "1")
        .env_remove("KACHE_REMOTE")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let out = String::from_utf8_lossy(&o.stdout);
    let samples: Vec<Sample> = out
        .lines()
        .filter(|l| l.starts_with("RESULT"))
        .map(|line| {
            let mut s = Sample::default();
            for kv in line.split_whitespace().skip(2) {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                let f = v.parse().unwrap_or(f64::NAN);
                match k {
                    "ctx_ms" => s.ctx_ms = f,
                    "first_ms" => s.first_ms = f,
                    "alone_us" => s.alone_us = f,
                    "both_us" => s.both_us = f,
                    "origin" => s.origin = v.to_string(),
                    "load" => s.load = v.to_string(),
                    _ => {}
                }
            }
            s
        })
        .collect();
    if samples.len() != 2 {
        return Err(format!("{kernel} {mode}: {}{}", out.trim(), String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(samples)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        if let Err(m) = child(&args[2], &args[3], Path::new(&args[4])) {
            eprintln!("{m}");
            std::process::exit(1);
        }
        return;
    }
    let reps: usize = args.iter().position(|a| a == "--reps").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(10);
    if args.iter().any(|a| a == "--host") {
        // SAFETY: set before any thread is started; the children inherit it.
        unsafe { std::env::set_var("MULTI_GPU_ON_HOST", "1") };
        println!("--host: two host devices, a dry run of the program (no GPU, nothing measured that matters)");
    }
    match Device::cuda_count() {
        _ if on_host() => {}
        Ok(n) if n >= 2 => {}
        Ok(n) => {
            eprintln!("multi_gpu needs 2 GPUs; the driver reports {n}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("no GPU: {e}");
            std::process::exit(2);
        }
    }
    for n in 0..2 {
        println!("GPU {n}: {}", open(n).map(|d| d.describe()).unwrap_or_else(|e| e.to_string()));
    }
    let exe = std::env::current_exe().expect("own path");
    println!("each row: median of {reps} fresh processes, CUDA_CACHE_DISABLE=1; first launch from Jit::new, context creation apart");
    println!("(GPU 1's first launch in hit and miss: after GPU 0's, with the kernel GPU 0 made ready: its module load and launch)");
    println!(
        "per launch: {} launches queued then one wait; alone: one GPU at a time; both: both GPUs at once from two threads",
        launches()
    );
    println!(
        "{:<7} {:<9} {:>3} {:>8} {:>10} {:>16} {:>15}  origin / how loaded",
        "kernel", "mode", "gpu", "ctx ms", "first ms", "us/launch alone", "us/launch both"
    );
    let mut status = 0;
    for kernel in ["saxpy", "medium"] {
        let warm = tempfile::tempdir().expect("tempdir");
        // The cache for the hit rows: filled by one process first.
        if let Err(m) = run_child(&exe, kernel, "one", warm.path()) {
            println!("{kernel}: failed: {m}");
            status = 1;
            continue;
        }
        for (mode, label) in [("one", "hit"), ("miss", "miss"), ("both", "hit, both")] {
            let runs: Result<Vec<Vec<Sample>>, String> = (0..reps)
                .map(|_| {
                    if mode == "miss" {
                        let fresh = tempfile::tempdir().expect("tempdir");
                        run_child(&exe, kernel, "one", fresh.path())
                    } else {
                        run_child(&exe, kernel, mode, warm.path())
                    }
                })
                .collect();
            let runs = match runs {
                Ok(r) => r,
                Err(m) => {
                    println!("{kernel} {label}: failed: {m}");
                    status = 1;
                    continue;
                }
            };
            for gpu in 0..2 {
                let m = |f: fn(&Sample) -> f64| median(runs.iter().map(|r| f(&r[gpu])).collect());
                println!(
                    "{kernel:<7} {label:<9} {gpu:>3} {:>8.2} {:>10.3} {:>16.2} {:>15.2}  {} / {}",
                    m(|s| s.ctx_ms),
                    m(|s| s.first_ms),
                    m(|s| s.alone_us),
                    m(|s| s.both_us),
                    runs[0][gpu].origin,
                    runs[0][gpu].load
                );
            }
        }
    }
    std::process::exit(status);
}
