//! What a fresh process spends before the first launch of a relocatable device-capturing
//! kernel, on the host backend: `Jit::new`, `load_source`, `with_global`, `kernel` and
//! `compile_for` served by the local store, against the same kernel taking the array as an
//! argument, and against saxpy. Each figure is the median of fresh processes on a warmed store.
//! `cargo run --release --example capture_lookup [REPS]`.

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kache::{Config, Device, Jit, Origin};

/// `gpu_first_launch`'s `captures` kernel: coefficients in a captured array, read through a
/// device function.
const CAPTURED: &str = r#"
fn coefficient(i: usize) -> f32 { COEFFICIENTS[i % 1024] }
#[kernel]
pub fn scaled_axpy(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() { y[i] = coefficient(i) * x[i] + y[i]; }
}
"#;

/// The same kernel with the coefficients passed as an argument.
const ARGUMENT: &str = r#"
fn coefficient(c: &[f32], i: usize) -> f32 { c[i % 1024] }
#[kernel]
pub fn scaled_axpy(c: &[f32], x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() { y[i] = coefficient(c, i) * x[i] + y[i]; }
}
"#;

const SAXPY: &str = include_str!("kernels/saxpy.rs");

/// One fresh process's lookup, in ms; `warm` allows the miss that fills the store.
fn child(kind: &str, dir: &Path, warm: bool) -> f64 {
    let dev = Device::host();
    let coefficients = dev.upload(&vec![2.0f32; 1024]).unwrap();
    let t = Instant::now();
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir).relocatable_captures(kind == "captured")).unwrap();
    let (src, name) = match kind {
        "captured" => (CAPTURED, "scaled_axpy"),
        "argument" => (ARGUMENT, "scaled_axpy"),
        _ => (SAXPY, "saxpy"),
    };
    let mut module = jit.load_source(&format!("{kind}.rs"), src).unwrap();
    if kind == "captured" {
        module = module.with_global("COEFFICIENTS", &coefficients).unwrap();
    }
    let compiled = module.kernel(name).unwrap().compile_for(&dev).unwrap();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(warm || matches!(compiled.origin(), Origin::Cache(_)), "not a hit: {:?}", compiled.origin());
    ms
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        println!("{}", child(&args[2], Path::new(&args[3]), args.len() > 4));
        return;
    }
    let reps: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(21);
    let exe = std::env::current_exe().unwrap();
    let run = |kind: &str, dir: &Path, warm: bool| -> f64 {
        let mut c = Command::new(&exe);
        c.args(["--child", kind]).arg(dir).env("KACHE_QUIET", "1").env_remove("KACHE_REMOTE").env_remove("KACHE_CAPTURES");
        if warm {
            c.arg("warm");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    println!("host backend, before the first launch, fresh processes on a warmed store (median of {reps}, interleaved)");
    let kinds = ["saxpy", "argument", "captured"];
    let dirs: Vec<tempfile::TempDir> = kinds.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    for (kind, dir) in kinds.iter().zip(&dirs) {
        run(kind, dir.path(), true);
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..reps {
        for (i, (kind, dir)) in kinds.iter().zip(&dirs).enumerate() {
            samples[i].push(run(kind, dir.path(), false));
        }
    }
    for (kind, mut v) in kinds.iter().zip(samples) {
        v.sort_by(|a, b| a.total_cmp(b));
        println!("{kind:<9} {:>7.3} ms   (min {:.3}, max {:.3})", v[v.len() / 2], v[0], v[v.len() - 1]);
    }
}
