//! Runs the crate's prebuilt kernels on the best device (a GPU if there is one, else the host
//! backend) and checks them. `--first-launch N [host|cuda]` measures instead what a user waits
//! for: N fresh processes (the driver's own PTX cache off, `CUDA_CACHE_DISABLE=1`), each timed
//! from just before it was started to the end of its first launch (saxpy on 2^16 elements,
//! synchronised), with the device's creation (the CUDA context) and the upload of the
//! arguments apart.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--first-launch") => measure(args.get(2).map(|n| n.parse()).transpose()?.unwrap_or(10), args.get(3).cloned()),
        Some("--first-launch-child") => first_launch_child(args.get(2).map(String::as_str)),
        _ => {
            let device = kache::Device::best();
            prebuild_demo::run_all(&device)?;
            // Which configuration the tuned kernel runs here, and whether the build recorded it.
            let tuned = prebuild_demo::tuned::prebuilt::axpy_tuned();
            let x = device.upload(&vec![1.0f32; 1000])?;
            let mut y = device.upload(&vec![1.0f32; 1000])?;
            let choice = tuned.launch(&device, (2.0f32, &x, &mut y))?;
            let config: Vec<String> = choice.config.iter().map(|(n, v)| format!("{n} = {v}")).collect();
            println!(
                "tuned kernel {}: {} ({}; {} result(s) recorded)",
                tuned.name(),
                config.join(", "),
                if choice.recorded { "recorded at build time" } else { "tuned at run time" },
                tuned.recorded().len()
            );
            let saxpy = prebuild_demo::saxpy::prebuilt::saxpy();
            println!(
                "prebuilt kernels ran on {}: ok (PTX for {:?}, cubins for {:?}, host code: {})",
                device.describe(),
                saxpy.archs(),
                saxpy.cubin_archs(),
                if saxpy.has_host_code() { "linked" } else { "none" }
            );
            Ok(())
        }
    }
}

/// Unix time in nanoseconds: the clock a parent and its child share.
fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_nanos()
}

/// Runs `n` fresh processes of this program's first launch and prints each one's times and
/// the medians.
fn measure(n: usize, device: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let mut rows: Vec<[f64; 4]> = Vec::new();
    for _ in 0..n {
        let mut c = Command::new(&exe);
        c.arg("--first-launch-child").args(device.as_deref());
        let started = now_ns();
        let out = c.env("CUDA_CACHE_DISABLE", "1").env("KACHE_DEMO_STARTED_NS", started.to_string()).output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!("child failed: {text}{}", String::from_utf8_lossy(&out.stderr)).into());
        }
        print!("{text}");
        let value = |key: &str| -> Option<f64> { text.split_whitespace().find_map(|w| w.strip_prefix(key)?.parse().ok()) };
        let (Some(total), Some(ctx), Some(upload)) = (value("start_to_first_launch_ms="), value("context_ms="), value("upload_ms="))
        else {
            return Err(format!("unexpected child output: {text}").into());
        };
        rows.push([total, ctx, total - ctx, total - ctx - upload]);
    }
    let median = |i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
    };
    println!(
        "median of {n}: start_to_first_launch_ms={:.3} context_ms={:.3} beyond_context_ms={:.3} beyond_context_and_upload_ms={:.3}",
        median(0),
        median(1),
        median(2),
        median(3)
    );
    Ok(())
}

/// One fresh process: create the device, upload, launch saxpy once and wait for it; print the
/// times since the parent started this process.
fn first_launch_child(device: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    let started: u128 = std::env::var("KACHE_DEMO_STARTED_NS")?.parse()?;
    let main_ns = now_ns();
    let t0 = Instant::now();
    let device = match device {
        Some("host") => kache::Device::host(),
        Some("cuda") => kache::Device::cuda(0)?,
        _ => kache::Device::best(),
    };
    let context = t0.elapsed();
    let t1 = Instant::now();
    let n = 1 << 16;
    let x = device.upload(&vec![1.0f32; n])?;
    let mut y = device.upload(&vec![2.0f32; n])?;
    let upload = t1.elapsed();
    let t2 = Instant::now();
    prebuild_demo::saxpy::saxpy(&device, kache::Grid::linear(n, 256), 3.0, &x, &mut y)?;
    device.synchronize()?;
    let launch = t2.elapsed();
    let done_ns = now_ns();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "device={:?} start_to_main_ms={:.3} context_ms={:.3} upload_ms={:.3} launch_ms={:.3} start_to_first_launch_ms={:.3}",
        device.describe(),
        (main_ns.saturating_sub(started)) as f64 / 1e6,
        ms(context),
        ms(upload),
        ms(launch),
        (done_ns.saturating_sub(started)) as f64 / 1e6
    );
    Ok(())
}
