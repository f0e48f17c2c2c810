//! In-process compile misses of kache against NVRTC, on the CPU, in one process: the speed
//! suite's saxpy, block reduction, row softmax (which calls `exp`, so links libdevice) and tiled
//! matmul (`benches/speed/kernels.rs`), each compiled to PTX for sm_90 by a fresh in-memory
//! `Jit` (parse, check, key, LLVM, PTX), against the same kernel in CUDA C
//! (`benches/speed/cuda.cu`, the kernel alone with the file's `#define`s) compiled to PTX by
//! NVRTC with its defaults. libnvrtc comes from `CUDA_HOME`, `/usr/local/cuda` or the
//! `nvidia-cuda-nvrtc-cu12` wheel; without it the NVRTC column is empty.
//!
//! `cargo run --release --example miss_vs_nvrtc [-- --reps N]`: prints the median and the
//! minimum of N compiles (after one warm-up each) in milliseconds.

// A measurement program: any failure stops it, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use kache::{Arch, Config, Jit, Layout, Specialization, Target};

const KACHE_SRC: &str = include_str!("../benches/speed/kernels.rs");
const CUDA_SRC: &str = include_str!("../benches/speed/cuda.cu");
const KERNELS: [&str; 4] = ["saxpy", "reduce_block", "softmax_rows", "matmul_tiled"];

/// The CUDA C of one kernel: the file's `#define`s and that kernel's function.
fn cuda_kernel(name: &str) -> String {
    let defines: String = CUDA_SRC.lines().filter(|l| l.starts_with("#define")).map(|l| format!("{l}\n")).collect();
    let start = CUDA_SRC.find(&format!("__global__ void {name}(")).expect("kernel in cuda.cu");
    let start = CUDA_SRC[..start].rfind("extern").expect("extern \"C\"");
    let end = start + CUDA_SRC[start..].find("\n}\n").expect("end of kernel") + 3;
    format!("{defines}\n{}", &CUDA_SRC[start..end])
}

fn kache_miss(name: &str) -> f64 {
    let target = Target::Nvptx(Arch::parse("sm_90").unwrap());
    let t = Instant::now();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("kernels.rs", KACHE_SRC).unwrap().kernel(name).unwrap();
    let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    assert!(c.ptx().unwrap().contains(".entry"));
    t.elapsed().as_secs_f64() * 1e3
}

/// cudarc finds libnvrtc by name on the loader's path; the toolkit or the wheel may have it
/// elsewhere: load it by its path first, so the by-name lookup finds it loaded.
fn preload_nvrtc() -> bool {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(d) = std::env::var_os(var) {
            dirs.push(std::path::PathBuf::from(d).join("lib64"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    if let Ok(out) = std::process::Command::new("python3").args(["-c", "import site; print(*site.getsitepackages(), sep=chr(10))"]).output()
    {
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            dirs.push(std::path::Path::new(l.trim()).join("nvidia/cuda_nvrtc/lib"));
        }
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("libnvrtc.so.") && !name.contains("alt") {
                // SAFETY: loading NVIDIA's NVRTC library runs its initialisers only; it stays
                // loaded for the process (leaked on purpose).
                if let Ok(lib) = unsafe { libloading::Library::new(e.path()) } {
                    std::mem::forget(lib);
                    return true;
                }
            }
        }
    }
    false
}

fn nvrtc_miss(source: &str) -> f64 {
    let t = Instant::now();
    let opts = cudarc::nvrtc::CompileOptions { arch: Some("sm_90"), ..Default::default() };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, opts).expect("NVRTC");
    assert!(ptx.to_src().contains(".entry"));
    t.elapsed().as_secs_f64() * 1e3
}

fn summary(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.iter().position(|a| a == "--reps").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(15);
    let nvrtc = preload_nvrtc();
    println!("in-process miss to PTX for sm_90, ms (median / min of {reps})");
    println!("{:<14} {:>18} {:>18}", "kernel", "kache", "NVRTC");
    for name in KERNELS {
        let cuda = cuda_kernel(name);
        kache_miss(name);
        if nvrtc {
            nvrtc_miss(&cuda);
        }
        let mut ks = Vec::new();
        let mut ns = Vec::new();
        // Interleaved, so that both see the same machine load.
        for _ in 0..reps {
            ks.push(kache_miss(name));
            if nvrtc {
                ns.push(nvrtc_miss(&cuda));
            }
        }
        let (km, kmin) = summary(ks);
        let n = if nvrtc {
            let (nm, nmin) = summary(ns);
            format!("{nm:>8.2} / {nmin:<7.2}")
        } else {
            "no libnvrtc".into()
        };
        println!("{name:<14} {km:>8.2} / {kmin:<7.2} {n:>18}");
    }
}
