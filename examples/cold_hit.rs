//! Whole-process timings of the `kache` binary: a cold process compiling a kernel (miss), and a
//! cold process served from the cache (hit). Build the CLI first:
//! `cargo build --release --bin kache && cargo run --release --example cold_hit`.

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let bin = std::env::args().nth(1).unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/kache").to_string());
    let kernel = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/kernels/saxpy.rs");
    let medium = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/kernels/medium.rs");
    let reps = 30;
    for (name, file) in [("saxpy", kernel), ("medium", medium)] {
        let mut miss = Vec::new();
        let mut hit = Vec::new();
        let out = tempfile::tempdir().unwrap();
        for i in 0..reps {
            let dir = tempfile::tempdir().unwrap();
            let run = |d: &std::path::Path| {
                let t = Instant::now();
                let o = Command::new(&bin)
                    .args(["compile", file, "--arch", "sm_80", "-o"])
                    .arg(out.path().join(format!("{i}.ptx")))
                    .env("KACHE_DIR", d)
                    .env("KACHE_QUIET", "1")
                    .output()
                    .expect("run kache");
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                t.elapsed()
            };
            miss.push(run(dir.path()));
            hit.push(run(dir.path()));
        }
        // The process start itself, for reference.
        let mut version = Vec::new();
        for _ in 0..reps {
            let t = Instant::now();
            Command::new(&bin).arg("--version").output().expect("run kache");
            version.push(t.elapsed());
        }
        println!(
            "{name:<7} cold-process miss {:>8.2} ms   cold-process hit {:>6.2} ms   (`kache --version`: {:.2} ms)   median of {reps}",
            median(miss).as_secs_f64() * 1e3,
            median(hit).as_secs_f64() * 1e3,
            median(version).as_secs_f64() * 1e3
        );
    }
}
