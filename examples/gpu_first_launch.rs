//! First-launch speed on a GPU, each measurement in a fresh process with the driver's own PTX
//! cache disabled (`CUDA_CACHE_DISABLE=1`), CUDA context creation reported separately:
//!
//! - miss: parse, check, compile to PTX, load (the driver's JIT), first launch;
//! - PTX hit: the PTX from the cache, the driver's JIT, first launch (`KACHE_CUBIN_TIER=0`);
//! - cubin hit: the cubin from the cache, no LLVM and no JIT, first launch (through
//!   `load_source` and `kernel`: front-end records spare the parse and the check, docs/cache.md).
//!
//! For saxpy, for a medium kernel (`benches/kernels/medium.rs`), and for a kernel that captures
//! a device array through a device function, compiled with relocatable captures (`captures`:
//! its miss, PTX hit and cubin hit against saxpy's show what the capture slot costs a fresh
//! process: binding the array and passing its address at launch). `run again` is a second launch
//! of the same kernel: `load+run` minus it is what loading the code took.
//! `direct hit` (saxpy and medium) is a cubin hit through [`Jit::compile_source`]'s direct mode:
//! the manifest recorded for the same source bytes and request names the entry, so neither
//! parsing nor checking runs (docs/cache.md, "Direct mode").
//! Run on a GPU machine:
//! `gpu_first_launch [--reps N] [--json FILE]`. Prints a table; with `--json`, also the raw
//! figures.

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kache::{Config, Device, FileRequest, Grid, Jit, Order};

const SAXPY: &str = include_str!("kernels/saxpy.rs");

const MEDIUM: &str = include_str!("../benches/kernels/medium.rs");

/// saxpy's shape, with its coefficients in a captured device array read by a device function.
const CAPTURES: &str = r#"
fn coefficient(i: usize) -> f32 { COEFFICIENTS[i % 1024] }
#[kernel]
pub fn scaled_axpy(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() { y[i] = coefficient(i) * x[i] + y[i]; }
}
"#;

#[derive(Clone, Debug, Default)]
struct Sample {
    ctx_ms: f64,
    first_ms: f64,
    compile_ms: f64,
    launch_ms: f64,
    relaunch_ms: f64,
    process_ms: f64,
    origin: String,
    cubin: String,
}

fn child(kernel: &str, dir: &Path, direct: bool) -> Result<(), String> {
    let e = |x: kache::Error| x.to_string();
    let t0 = Instant::now();
    let dev = Device::cuda(0).map_err(e)?;
    let ctx_ms = t0.elapsed().as_secs_f64() * 1e3;
    // Arguments are uploaded before the clock starts: the first launch is what is measured.
    let n = 1 << 20;
    let (src, name) = match kernel {
        "saxpy" => (SAXPY, "saxpy"),
        "captures" => (CAPTURES, "scaled_axpy"),
        _ => (MEDIUM, "heat_step"),
    };
    let coefficients = dev.upload(&vec![2.0f32; 1024]).map_err(e)?;
    let x = dev.upload(&vec![1.0f32; n]).map_err(e)?;
    let mut y = dev.upload(&vec![2.0f32; n]).map_err(e)?;
    let u = dev.upload_nd(&vec![0.5f32; 1024 * 1024], &[1024, 1024], Order::C).map_err(e)?;
    let mut next = dev.alloc::<f32>(&[1024, 1024]).map_err(e)?;
    dev.synchronize().map_err(e)?;

    let t1 = Instant::now();
    let config = Config { cache_dir: Some(dir.to_path_buf()), ..Config::from_env().map_err(e)? };
    let jit = Jit::new(config.relocatable_captures(kernel == "captures")).map_err(e)?;
    let c = if direct {
        let request = FileRequest::new(dev.target()).kernel(name);
        let file = jit.compile_source(&format!("{kernel}.rs"), src, &request).map_err(e)?;
        file.kernels[0].clone()
    } else {
        let mut module = jit.load_source(&format!("{kernel}.rs"), src).map_err(e)?;
        if kernel == "captures" {
            module = module.with_global("COEFFICIENTS", &coefficients).map_err(e)?;
        }
        module.kernel(name).map_err(e)?.compile_for(&dev).map_err(e)?
    };
    let compile_ms = t1.elapsed().as_secs_f64() * 1e3;
    let mut run = |y: &mut kache::DeviceArray<f32>| -> Result<f64, String> {
        let t = Instant::now();
        if kernel == "saxpy" {
            c.launch(&dev, Grid::linear(n, 256), (2.0f32, &x, y)).map_err(e)?;
        } else if kernel == "captures" {
            c.launch(&dev, Grid::linear(n, 256), (&x, y)).map_err(e)?;
        } else {
            c.launch(&dev, Grid::new((64u32, 64u32), (16u32, 16u32)), (&u, &mut next, 0.1f32, 0.01f32)).map_err(e)?;
        }
        dev.synchronize().map_err(e)?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let launch_ms = run(&mut y)?;
    let first_ms = t1.elapsed().as_secs_f64() * 1e3;
    // The same launch again: what the first one spent beyond it is loading the code.
    let relaunch_ms = run(&mut y)?;
    if kernel != "medium" {
        // y = 2 * 1 + 2, then 2 * 1 + 4, in every element: the launches ran, on this process's arrays.
        let got = y.download().map_err(e)?;
        if got.iter().any(|v| *v != 6.0) {
            return Err(format!("{kernel}: wrong result {:?}", &got[..4]));
        }
    }
    println!(
        "RESULT ctx_ms={ctx_ms:.3} first_ms={first_ms:.3} compile_ms={compile_ms:.3} launch_ms={launch_ms:.3} relaunch_ms={relaunch_ms:.3} origin={:?} cubin={:?}",
        c.origin(),
        c.cubin_origin()
    );
    Ok(())
}

fn run_child(exe: &Path, kernel: &str, dir: &Path, cubin_tier: bool, direct: bool) -> Sample {
    let t = Instant::now();
    let o = Command::new(exe)
        .args(["--child", kernel])
        .arg(dir)
        .args(direct.then_some("direct"))
        .env("CUDA_CACHE_DISABLE", "1")
        .env("KACHE_CUBIN_TIER", if cubin_tier { "1" } else { "0" })
        .env("KACHE_QUIET", "1")
        .env_remove("KACHE_REMOTE")
        .output()
        .expect("run child");
    let process_ms = t.elapsed().as_secs_f64() * 1e3;
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .unwrap_or_else(|| panic!("child failed: {}\n{}", out, String::from_utf8_lossy(&o.stderr)));
    let mut s = Sample { process_ms, ..Sample::default() };
    for kv in line.split_whitespace().skip(1) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "ctx_ms" => s.ctx_ms = v.parse().unwrap_or(0.0),
            "first_ms" => s.first_ms = v.parse().unwrap_or(0.0),
            "compile_ms" => s.compile_ms = v.parse().unwrap_or(0.0),
            "launch_ms" => s.launch_ms = v.parse().unwrap_or(0.0),
            "relaunch_ms" => s.relaunch_ms = v.parse().unwrap_or(0.0),
            "origin" => s.origin = v.to_string(),
            "cubin" => s.cubin = v.to_string(),
            _ => {}
        }
    }
    s
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { 0.0 } else { v[v.len() / 2] }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        if let Err(m) = child(&args[2], Path::new(&args[3]), args.get(4).map(String::as_str) == Some("direct")) {
            eprintln!("{m}");
            std::process::exit(1);
        }
        return;
    }
    let reps: usize = args.iter().position(|a| a == "--reps").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(10);
    let json = args.iter().position(|a| a == "--json").and_then(|i| args.get(i + 1)).cloned();
    let exe = std::env::current_exe().expect("own path");
    if let Err(e) = Device::cuda(0) {
        eprintln!("no GPU: {e}");
        std::process::exit(2);
    }
    println!("{}", Device::cuda(0).map(|d| d.describe()).unwrap_or_default());
    println!("each row: median of {reps} fresh processes, CUDA_CACHE_DISABLE=1");
    println!(
        "{:<8} {:<10} {:>9} {:>12} {:>14} {:>11} {:>10} {:>12}  origin / cubin",
        "kernel", "mode", "ctx ms", "first ms", "compile/lookup", "load+run", "run again", "process ms"
    );
    let mut raw = Vec::new();
    for kernel in ["saxpy", "medium", "captures"] {
        let mut rows: Vec<(&str, Vec<Sample>)> = Vec::new();
        // Miss: a fresh cache each time.
        let miss: Vec<Sample> = (0..reps)
            .map(|_| {
                let d = tempfile::tempdir().expect("tempdir");
                run_child(&exe, kernel, d.path(), true, false)
            })
            .collect();
        rows.push(("miss", miss));
        // PTX hit: populated without the cubin tier, measured without it.
        let ptx_dir = tempfile::tempdir().expect("tempdir");
        run_child(&exe, kernel, ptx_dir.path(), false, false);
        rows.push(("ptx hit", (0..reps).map(|_| run_child(&exe, kernel, ptx_dir.path(), false, false)).collect()));
        // Cubin hit: populated with the cubin tier.
        let cubin_dir = tempfile::tempdir().expect("tempdir");
        run_child(&exe, kernel, cubin_dir.path(), true, false);
        rows.push(("cubin hit", (0..reps).map(|_| run_child(&exe, kernel, cubin_dir.path(), true, false)).collect()));
        if kernel != "captures" {
            // Direct hit: populated through direct mode (which records the manifest).
            let direct_dir = tempfile::tempdir().expect("tempdir");
            run_child(&exe, kernel, direct_dir.path(), true, true);
            rows.push(("direct hit", (0..reps).map(|_| run_child(&exe, kernel, direct_dir.path(), true, true)).collect()));
        }
        for (mode, samples) in rows {
            let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
            println!(
                "{kernel:<8} {mode:<10} {:>9.2} {:>12.2} {:>14.2} {:>11.2} {:>10.2} {:>12.1}  {} / {}",
                m(|s| s.ctx_ms),
                m(|s| s.first_ms),
                m(|s| s.compile_ms),
                m(|s| s.launch_ms),
                m(|s| s.relaunch_ms),
                m(|s| s.process_ms),
                samples[0].origin,
                samples[0].cubin
            );
            for s in &samples {
                raw.push(format!(
                    "{{\"kernel\":\"{kernel}\",\"mode\":\"{mode}\",\"ctx_ms\":{},\"first_ms\":{},\"compile_ms\":{},\"launch_ms\":{},\"relaunch_ms\":{},\"process_ms\":{}}}",
                    s.ctx_ms, s.first_ms, s.compile_ms, s.launch_ms, s.relaunch_ms, s.process_ms
                ));
            }
        }
    }
    if let Some(path) = json {
        let _ = std::fs::write(path, format!("[\n{}\n]\n", raw.join(",\n")));
    }
}
