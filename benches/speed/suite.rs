//! The execution-speed suite: each kernel of the kache sources (`KACHE_SOURCES`) and its twin
//! in the CUDA C sources (`CUDA_SOURCES`, through NVRTC), checked against a float64 (or exact)
//! reference, then timed with CUDA events, beside the rooflines measured in the same run
//! (device-to-device copy bandwidth, FP32 FMA peak).
//!
//! The suite is a table of parts (`PARTS`): each names what `--only` selects and a function in
//! `cases/` that uploads its inputs, measures its rows (`Run::measure`: kache's safe launch,
//! `unchk`, NVRTC's twin, variants) and checks each against its reference. A new benchmark is a
//! kache kernel, its CUDA C twin, a function in a file of `cases/` and a row of `PARTS`. A part
//! or row that fails is reported as a failed row and the others still run (`--keep-going`
//! is the default; the exit status says whether anything failed).
//!
//! Timing (`gpu.rs`): after two warm-up launches, `batches` batches of `reps` back-to-back
//! launches, each batch between two events on the stream both implementations use; a launch's
//! time is its batch's over `reps` (so the host's launch overhead overlaps the previous launch,
//! as in a real program), and the row reports the median and the minimum over batches.
//!
//! Dry run (no GPU, `dry.rs`): every kache kernel compiled to PTX for sm_90 and assembled by
//! ptxas when there is one, every CUDA file compiled by NVRTC on the CPU (libnvrtc from the
//! CUDA toolkit or the `nvidia-cuda-nvrtc-cu12` wheel), and every kache kernel run on the host
//! backend at small sizes and checked against the same references. `tests/it/speed_suite.rs`
//! runs it, so the suite cannot rot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_arguments)]

#[path = "cases/mod.rs"]
mod cases;
#[path = "dry.rs"]
mod dry;
#[path = "gpu.rs"]
mod gpu;
#[path = "harness.rs"]
mod harness;
#[path = "table.rs"]
mod table;

pub use table::table;

use harness::Run;
use kache::{Config, Device, Jit};

/// The kache sources of the suite, by path from the repository root; a kernel is found by name
/// in whichever defines it.
pub const KACHE_SOURCES: &[&str] = &[
    "benches/speed/kernels.rs",
    "benches/speed/kernels/matrix.rs",
    "benches/speed/kernels/rows.rs",
    "benches/speed/kernels/stencil.rs",
    "benches/speed/kernels/sort.rs",
    "benches/speed/kernels/science.rs",
    "benches/speed/kernels/gemm.rs",
    "benches/speed/kernels/attention.rs",
];
/// The CUDA C sources, each compiled by NVRTC on its own; a function is found by name in
/// whichever defines it.
pub const CUDA_SOURCES: &[&str] = &[
    "benches/speed/cuda.cu",
    "benches/speed/kernels/matrix.cu",
    "benches/speed/kernels/rows.cu",
    "benches/speed/kernels/stencil.cu",
    "benches/speed/kernels/sort.cu",
    "benches/speed/kernels/science.cu",
];

/// One part of the suite: the name `--only` selects it by, and what measures its rows.
pub struct Part {
    /// The name `--only` takes (`saxpy`, `reduce`, ..).
    pub name: &'static str,
    /// Measures the part's rows (`Run::measure` for each implementation).
    pub run: fn(&mut Run) -> Result<(), String>,
}

/// The suite, in the order it runs.
pub const PARTS: &[Part] = &[
    Part { name: "saxpy", run: cases::elementwise::saxpy },
    Part { name: "reduce", run: cases::reduce::reduce },
    Part { name: "softmax", run: cases::rows::softmax },
    Part { name: "matmul", run: cases::matmul::matmul },
    Part { name: "histogram", run: cases::histogram::histogram },
    Part { name: "scan", run: cases::scan::scan },
    Part { name: "transpose", run: cases::matrix::transpose },
    Part { name: "gemv", run: cases::matrix::gemv },
    Part { name: "spmv", run: cases::matrix::spmv },
    Part { name: "conv2d", run: cases::matrix::conv2d },
    Part { name: "layernorm", run: cases::rows::layernorm },
    Part { name: "rmsnorm", run: cases::rows::rmsnorm },
    Part { name: "softmax3", run: cases::rows::softmax3 },
    Part { name: "topk", run: cases::rows::topk },
    Part { name: "stencil2d", run: cases::stencil::stencil2d },
    Part { name: "stencil3d", run: cases::stencil::stencil3d },
    Part { name: "bitonic", run: cases::sort::bitonic },
    Part { name: "radix_hist", run: cases::sort::radix_hist },
    Part { name: "compact", run: cases::sort::compact },
    Part { name: "nbody", run: cases::science::nbody },
    Part { name: "black_scholes", run: cases::science::black_scholes },
    Part { name: "mandelbrot", run: cases::science::mandelbrot },
    Part { name: "gemm", run: cases::gemm::gemm },
    Part { name: "attention", run: cases::attention::attention },
];

/// How to run the suite.
#[derive(Clone, Debug)]
pub struct Options {
    /// No GPU: compile everything, run kache kernels on the host backend at small sizes.
    pub dry_run: bool,
    /// Launches per timed batch.
    pub reps: usize,
    /// Timed batches (the row reports their median).
    pub batches: usize,
    /// The repository root (kernel sources are read from it).
    pub root: std::path::PathBuf,
    /// Dry run: also write every PTX it compiles into this directory (`kache-NAME.ptx`,
    /// `kache-NAME-unchecked.ptx`, `nvrtc-FILE.ptx`), for comparing kache's code with NVRTC's.
    pub ptx_dir: Option<std::path::PathBuf>,
    /// Only these of the suite's parts (`PARTS`); all when empty. The rooflines are measured
    /// either way.
    pub only: Vec<String>,
    /// On the GPU, the dry run's small problem sizes (`--small`): every kernel checked on the
    /// device in seconds (tests/gpu.rs), its times meaningless.
    pub small: bool,
}

/// One measured (or, in a dry run, checked) kernel of one implementation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Kernel name.
    pub kernel: String,
    /// `kache` or `nvrtc` (the Python scripts add `numba` and `triton`); `-` for a part that
    /// failed before any of its rows.
    pub implementation: String,
    /// Median time of one launch (ms); 0 in a dry run or when it failed.
    pub median_ms: f64,
    /// Fastest batch's time of one launch (ms).
    pub min_ms: f64,
    /// Effective bandwidth (GB/s) over the bytes the algorithm must move, if memory-bound.
    pub gbs: Option<f64>,
    /// GFLOP/s, if compute-bound.
    pub gflops: Option<f64>,
    /// What the check against the reference found, or why the row failed.
    pub check: String,
    /// Whether it ran and matched its reference.
    pub ok: bool,
}

impl Row {
    /// A row for `kernel`'s `implementation` that failed with `why`.
    pub fn failed(kernel: &str, implementation: &str, why: String) -> Row {
        let check = format!("FAILED: {why}");
        Row {
            kernel: kernel.into(),
            implementation: implementation.into(),
            median_ms: 0.0,
            min_ms: 0.0,
            gbs: None,
            gflops: None,
            check,
            ok: false,
        }
    }
}

/// Everything one run measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Report {
    /// The device, in words.
    pub device: String,
    /// Device-to-device copy bandwidth (GB/s, read + write), the memory roofline.
    pub copy_gbs: Option<f64>,
    /// FP32 FMA throughput (TFLOP/s), the compute roofline.
    pub fma_tflops: Option<f64>,
    /// Rows, kernel by kernel.
    pub rows: Vec<Row>,
}

impl Report {
    /// The rows that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.ok)
    }
}

/// Runs the suite: every part (or those `opts.only` names), each part's failure (an error or a
/// panic) a failed row, the rest still run.
pub fn run(opts: &Options) -> Result<Report, String> {
    if let Some(unknown) = opts.only.iter().find(|o| !PARTS.iter().any(|p| p.name == o.as_str())) {
        let names: Vec<&str> = PARTS.iter().map(|p| p.name).collect();
        return Err(format!("--only {unknown}: the suite's parts are {}", names.join(", ")));
    }
    let mut cuda = Vec::new();
    for file in CUDA_SOURCES {
        let text = std::fs::read_to_string(opts.root.join(file)).map_err(|e| format!("{file}: {e}"))?;
        cuda.push((*file, text));
    }
    let jit = Jit::new(Config::in_memory()).map_err(|e| e.to_string())?;
    let mut kache = Vec::new();
    for file in KACHE_SOURCES {
        kache.push(jit.load_file(opts.root.join(file)).map_err(|e| format!("{file}: {e}"))?);
    }
    let mut ctx_keep = None;
    let mut failed = Vec::new();
    let (dev, gpu) = if opts.dry_run {
        failed = dry::compile(opts, &kache, &cuda);
        (Device::host(), None)
    } else {
        let dev = Device::cuda(0).map_err(|e| format!("no GPU ({e}); use --dry-run here"))?;
        let gpu = gpu::Gpu::open(&mut ctx_keep, &cuda, "sm_90")?;
        (dev, Some(gpu))
    };
    let mut run = Run::new(opts, dev, jit, kache, gpu);
    run.report.rows.extend(failed);
    if run.gpu.is_some()
        && !opts.small
        && let Err(e) = gpu::rooflines(&mut run)
    {
        run.report.rows.push(Row::failed("rooflines", "-", e));
    }
    for part in PARTS.iter().filter(|p| opts.only.is_empty() || opts.only.iter().any(|o| o == p.name)) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (part.run)(&mut run)));
        let why = match result {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e,
            Err(panic) => {
                panic.downcast_ref::<String>().cloned().or(panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
            }
        };
        eprintln!("{:>14}: FAILED: {why}", part.name);
        run.report.rows.push(Row::failed(part.name, "-", why));
    }
    Ok(run.report)
}
