//! The execution-speed suite: each kernel of `benches/speed/kernels.rs` (kache) and its twin in
//! `benches/speed/cuda.cu` (CUDA C through NVRTC), checked against a float64 (or exact)
//! reference, then timed with CUDA events, beside the rooflines measured in the same run
//! (device-to-device copy bandwidth, FP32 FMA peak).
//!
//! Timing: after two warm-up launches, `batches` batches of `reps` back-to-back launches, each
//! batch between two events on the stream both implementations use; a launch's time is its
//! batch's over `reps` (so the host's launch overhead overlaps the previous launch, as in a real
//! program), and the row reports the median and the minimum over batches.
//!
//! Dry run (no GPU): every kache kernel compiled to PTX for sm_90 and assembled by ptxas when
//! there is one, the CUDA file compiled by NVRTC on the CPU (libnvrtc from the CUDA toolkit or
//! the `nvidia-cuda-nvrtc-cu12` wheel), and every kache kernel run on the host backend at small
//! sizes and checked against the same references. `tests/it/speed_suite.rs` runs it, so the
//! suite cannot rot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::too_many_arguments)]

use std::cell::Cell;
use std::ffi::c_void;

use cudarc::driver::sys;
use kache::{Config, Device, DeviceArray, Element, Grid, Jit, Layout, Module, Order, Specialization, Target};

/// The kache kernels and the CUDA C twins, by path from the repository root.
pub const KERNELS: &str = "benches/speed/kernels.rs";
/// The CUDA C side.
pub const CUDA: &str = "benches/speed/cuda.cu";
/// The kernels of `CUDA`, each loaded by name.
const NVRTC_FUNCTIONS: [&str; 11] = [
    "saxpy",
    "reduce_block",
    "reduce_warp",
    "reduce_while",
    "softmax_rows",
    "matmul_tiled",
    "histogram",
    "scan",
    "scan_t2048",
    "scan_lb6",
    "fma_peak",
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
    /// `kache-NAME-unchecked.ptx`, `nvrtc.ptx`), for comparing kache's code with NVRTC's.
    pub ptx_dir: Option<std::path::PathBuf>,
    /// Only these of the suite's kernels (`saxpy`, `reduce`, `softmax`, `matmul`, `histogram`,
    /// `scan`); all when empty. The rooflines are measured either way.
    pub only: Vec<String>,
}

/// One measured (or, in a dry run, checked) kernel of one implementation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Kernel name.
    pub kernel: String,
    /// `kache` or `nvrtc` (the Python scripts add `numba` and `triton`).
    pub implementation: String,
    /// Median time of one launch (ms); 0 in a dry run.
    pub median_ms: f64,
    /// Fastest batch's time of one launch (ms).
    pub min_ms: f64,
    /// Effective bandwidth (GB/s) over the bytes the algorithm must move, if memory-bound.
    pub gbs: Option<f64>,
    /// GFLOP/s, if compute-bound.
    pub gflops: Option<f64>,
    /// What the check against the reference found.
    pub check: String,
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

/// Problem sizes: the on the GPU, small ones for the host.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    saxpy: usize,
    reduce: usize,
    softmax: (usize, usize),
    matmul: usize,
    histogram: usize,
    scan: usize,
}

const FULL_SIZES: Sizes = Sizes { saxpy: 1 << 28, reduce: 1 << 28, softmax: (8192, 4096), matmul: 4096, histogram: 1 << 28, scan: 1 << 28 };
const HOST_SIZES: Sizes = Sizes { saxpy: 1 << 14, reduce: 1 << 16, softmax: (16, 1024), matmul: 64, histogram: 1 << 16, scan: 100_000 };

/// The grid of the grid-strided kernels (reductions, histogram): as many blocks of 256 as keep
/// every SM busy, the same for both implementations.
const STRIDED_BLOCKS: u32 = 1056;

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| (r() >> 40) as f32 / (1u64 << 24) as f32).collect()
}

/// NVRTC's module on the GPU: functions by name, launched on the legacy default stream (the
/// one kache uses), so events on it time both.
struct Nvrtc {
    funcs: Vec<(String, sys::CUfunction)>,
}

impl Nvrtc {
    fn func(&self, name: &str) -> sys::CUfunction {
        self.funcs.iter().find(|(n, _)| n == name).map(|(_, f)| *f).unwrap_or_else(|| panic!("no NVRTC function {name}"))
    }

    /// Launches `name`; `args` are pointers to each argument's value.
    fn launch(&self, name: &str, grid: (u32, u32), block: (u32, u32), args: &mut [*mut c_void]) -> Result<(), String> {
        // SAFETY: the function was loaded from NVRTC's PTX of cuda.cu, whose signature the
        // caller's argument list follows; the context is current (bound in `Gpu::open`).
        let r = unsafe {
            sys::cuLaunchKernel(
                self.func(name),
                grid.0,
                grid.1,
                1,
                block.0,
                block.1,
                1,
                0,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, name)
    }
}

fn check(r: sys::CUresult, what: &str) -> Result<(), String> {
    if r == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {r:?}")) }
}

/// Compiles `cuda.cu` with NVRTC for `arch` (`sm_90`), with NVRTC's default options.
pub fn nvrtc_ptx(source: &str, arch: &'static str) -> Result<String, String> {
    preload_nvrtc()?;
    let opts = cudarc::nvrtc::CompileOptions { arch: Some(arch), ..Default::default() };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, opts).map_err(|e| format!("NVRTC: {e:?}"))?;
    Ok(ptx.to_src())
}

/// cudarc finds libnvrtc by name on the loader's path, and panics where it is not there; a CUDA
/// toolkit or the pip wheel may have it elsewhere. Load it by the path
/// `kache::toolchain::find_nvrtc` finds (`KACHE_NVRTC` first), so that the by-name lookup
/// finds it loaded; where there is none, an error naming what is missing and what installs it.
fn preload_nvrtc() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let path = kache::toolchain::find_nvrtc().ok_or(
            "libnvrtc not found (KACHE_NVRTC, CUDA_HOME, /usr/local/cuda, or the nvidia-cuda-nvrtc-cu12 wheel): \
             `make deps` installs it into target/toolchain/ and the Makefile sets KACHE_NVRTC",
        )?;
        // SAFETY: loading NVIDIA's NVRTC library runs its initialisers only; it stays loaded for
        // the process (leaked on purpose).
        let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| format!("libnvrtc at {}: {e}", path.display()))?;
        std::mem::forget(lib);
        Ok(())
    })
    .clone()
}

struct Gpu {
    nvrtc: Nvrtc,
    sms: i32,
}

impl Gpu {
    fn open(ctx_keep: &mut Option<std::sync::Arc<cudarc::driver::CudaContext>>, source: &str, arch: &'static str) -> Result<Gpu, String> {
        let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("CUDA context: {e:?}"))?;
        ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        let ptx = nvrtc_ptx(source, arch)?;
        let c = std::ffi::CString::new(ptx).map_err(|e| e.to_string())?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the context is current; `c` is NUL-terminated PTX.
        check(unsafe { sys::cuModuleLoadData(&mut module, c.as_ptr() as *const c_void) }, "cuModuleLoadData")?;
        let mut funcs = Vec::new();
        for name in NVRTC_FUNCTIONS {
            let mut f: sys::CUfunction = std::ptr::null_mut();
            let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
            // SAFETY: `module` is loaded; valid out pointer.
            check(unsafe { sys::cuModuleGetFunction(&mut f, module, cname.as_ptr()) }, name)?;
            funcs.push((name.to_string(), f));
        }
        let mut sms = 0i32;
        let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        // SAFETY: valid out pointer; device 0 exists (the context opened).
        let r = unsafe { sys::cuDeviceGetAttribute(&mut sms, attr, 0) };
        check(r, "cuDeviceGetAttribute")?;
        *ctx_keep = Some(ctx);
        Ok(Gpu { nvrtc: Nvrtc { funcs }, sms })
    }
}

/// Times `launch` (median and minimum ms of one launch) with events on the default stream.
fn time(opts: &Options, mut launch: impl FnMut() -> Result<(), String>) -> Result<(f64, f64), String> {
    for _ in 0..2 {
        launch()?;
    }
    let mut times = Vec::new();
    let (mut a, mut b): (sys::CUevent, sys::CUevent) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the context is current; valid out pointers.
    unsafe {
        check(sys::cuEventCreate(&mut a, 0), "cuEventCreate")?;
        check(sys::cuEventCreate(&mut b, 0), "cuEventCreate")?;
    }
    for _ in 0..opts.batches {
        // SAFETY: events created above, recorded on the legacy default stream.
        check(unsafe { sys::cuEventRecord(a, std::ptr::null_mut()) }, "cuEventRecord")?;
        for _ in 0..opts.reps {
            launch()?;
        }
        let mut ms = 0f32;
        // SAFETY: as above; `ms` is a valid out pointer.
        unsafe {
            check(sys::cuEventRecord(b, std::ptr::null_mut()), "cuEventRecord")?;
            check(sys::cuEventSynchronize(b), "cuEventSynchronize")?;
            check(sys::cuEventElapsedTime_v2(&mut ms, a, b), "cuEventElapsedTime")?;
        }
        times.push(ms as f64 / opts.reps as f64);
    }
    // SAFETY: the events are not used after this.
    unsafe {
        sys::cuEventDestroy_v2(a);
        sys::cuEventDestroy_v2(b);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], times[0]))
}

fn ptr<T: Element>(a: &DeviceArray<T>) -> u64 {
    a.device_ptr()
}

fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// The state of one run.
struct Run<'a> {
    opts: &'a Options,
    dev: Device,
    jit: Jit,
    kache: Module,
    gpu: Option<Gpu>,
    sizes: Sizes,
    report: Report,
}

impl Run<'_> {
    /// Adds one row per implementation: checks the first launch with `verify`, then times.
    fn measure(
        &mut self,
        kernel: &str,
        bytes: Option<f64>,
        flops: Option<f64>,
        imp: &str,
        mut launch: impl FnMut(&Self) -> Result<(), String>,
        verify: &dyn Fn(&Self) -> Result<String, String>,
    ) -> Result<(), String> {
        launch(self)?;
        self.dev.synchronize().map_err(|e| e.to_string())?;
        let check = verify(self).map_err(|e| format!("{kernel} ({imp}): {e}"))?;
        let (median, min) = if self.gpu.is_some() { time(self.opts, || launch(self))? } else { (0.0, 0.0) };
        let per_s = |x: f64| if median > 0.0 { Some(x / (median * 1e-3) / 1e9) } else { None };
        eprintln!("{kernel:>14} {imp:>6}: {median:9.4} ms  {check}");
        self.report.rows.push(Row {
            kernel: kernel.into(),
            implementation: imp.into(),
            median_ms: median,
            min_ms: min,
            gbs: bytes.and_then(per_s),
            gflops: flops.and_then(per_s),
            check,
        });
        Ok(())
    }

    fn k(&self, name: &str) -> kache::Kernel {
        self.kache.kernel(name).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// The row name of kache's kernels launched through `unsafe launch_unchecked` (no bounds
/// checks): what safe launches cost is the difference to the `kache` row.
const UNCHECKED: &str = "unchk";

/// The row name of the reductions compiled by H200 run 3's rule: the loop unrolled by 4 left
/// free for ptxas to unroll again (it unrolls it to 16 loads, which it does not do to NVRTC's).
/// Today's rule (`src/codegen/lower/loops.rs`) marks it `nounroll` as a grid-strided loop.
const FREE_UNROLL: &str = "k-free";

/// kache's bounds-checked PTX of `k` for sm_90 with C layouts.
fn sm_90_ptx(k: &kache::Kernel) -> Result<String, String> {
    let target = Target::Nvptx(kache::Arch::parse("sm_90").map_err(|e| e.to_string())?);
    let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).map_err(|e| e.to_string())?;
    Ok(c.ptx().ok_or("no PTX")?.to_string())
}

/// `ptx` with the `.pragma "nounroll"` removed from each loop of more than one global load
/// (the unrolled ones; remainder loops keep theirs): what kache emitted before grid-strided
/// loops kept LLVM's `nounroll`. An error if there was none to remove.
pub fn free_unrolled_loops(ptx: &str) -> Result<String, String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut drop = Vec::new();
    let mut start = 0;
    for i in 0..=lines.len() {
        if i == lines.len() || lines[i].starts_with("$L__") {
            let block = &lines[start..i];
            let loads = block.iter().filter(|l| l.contains("ld.global")).count();
            if loads > 1 {
                drop.extend(block.iter().position(|l| l.contains(".pragma \"nounroll\"")).map(|p| start + p));
            }
            start = i;
        }
    }
    if drop.is_empty() {
        return Err("no unrolled loop marked nounroll".into());
    }
    let kept: Vec<&str> = lines.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, l)| *l).collect();
    Ok(kept.join("\n") + "\n")
}

fn rel_err(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(1e-30)
}

/// Runs the suite.
pub fn run(opts: &Options) -> Result<Report, String> {
    type Part = fn(&mut Run) -> Result<(), String>;
    let parts: [(&str, Part); 6] =
        [("saxpy", saxpy), ("reduce", reduce), ("softmax", softmax), ("matmul", matmul), ("histogram", histogram), ("scan", scan)];
    if let Some(unknown) = opts.only.iter().find(|o| !parts.iter().any(|(name, _)| name == o)) {
        let names: Vec<&str> = parts.iter().map(|(name, _)| *name).collect();
        return Err(format!("--only {unknown}: the suite's kernels are {}", names.join(", ")));
    }
    let source = std::fs::read_to_string(opts.root.join(CUDA)).map_err(|e| format!("{CUDA}: {e}"))?;
    let jit = Jit::new(Config::in_memory()).map_err(|e| e.to_string())?;
    let kache = jit.load_file(opts.root.join(KERNELS)).map_err(|e| e.to_string())?;
    let mut ctx_keep = None;
    let (dev, gpu, sizes) = if opts.dry_run {
        dry_compile(opts, &kache, &source)?;
        (Device::host(), None, HOST_SIZES)
    } else {
        let dev = Device::cuda(0).map_err(|e| format!("no GPU ({e}); use --dry-run here"))?;
        let gpu = Gpu::open(&mut ctx_keep, &source, "sm_90")?;
        (dev, Some(gpu), FULL_SIZES)
    };
    let mut run = Run { opts, report: Report { device: dev.describe(), ..Default::default() }, dev, jit, kache, gpu, sizes };
    if run.gpu.is_some() {
        rooflines(&mut run)?;
    }
    for (name, part) in parts {
        if opts.only.is_empty() || opts.only.iter().any(|o| o == name) {
            part(&mut run)?;
        }
    }
    Ok(run.report)
}

/// Dry run: kache's PTX for sm_90, bounds-checked and unchecked (and ptxas where found),
/// NVRTC's PTX for the CUDA twins; each written to `opts.ptx_dir` when given.
fn dry_compile(opts: &Options, kache: &Module, source: &str) -> Result<(), String> {
    let ptxas = kache::toolchain::find_ptxas();
    let target = Target::Nvptx(kache::Arch::parse("sm_90").map_err(|e| e.to_string())?);
    let write = |file: String, text: &str| -> Result<(), String> {
        match &opts.ptx_dir {
            Some(dir) => std::fs::write(dir.join(&file), text).map_err(|e| format!("{file}: {e}")),
            None => Ok(()),
        }
    };
    if let Some(dir) = &opts.ptx_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for name in kache.kernel_names() {
        let k = kache.kernel(&name).map_err(|e| e.to_string())?;
        let spec = Specialization::uniform(k.program(), Layout::C);
        for checked in [true, false] {
            let c = if checked { k.compile(target, &spec) } else { k.compile_unchecked(target, &spec) };
            let c = c.map_err(|e| format!("{name}: {e}"))?;
            let ptx = c.ptx().ok_or("no PTX")?;
            if let Some(p) = &ptxas {
                kache::toolchain::ptxas(p, ptx, "sm_90").map_err(|e| format!("ptxas rejected {name}: {e}"))?;
            }
            write(format!("kache-{name}{}.ptx", if checked { "" } else { "-unchecked" }), ptx)?;
        }
    }
    let ptx = nvrtc_ptx(source, "sm_90")?;
    write("nvrtc.ptx".into(), &ptx)?;
    let entries = ptx.matches(".entry").count();
    if entries != NVRTC_FUNCTIONS.len() {
        return Err(format!("NVRTC's PTX has {entries} entries, expected {}", NVRTC_FUNCTIONS.len()));
    }
    eprintln!(
        "dry run: {} kache kernels compiled for sm_90, checked and unchecked (ptxas: {}), NVRTC compiled {CUDA} ({entries} kernels)",
        kache.kernel_names().len(),
        if ptxas.is_some() { "accepted" } else { "not found" }
    );
    Ok(())
}

fn rooflines(run: &mut Run) -> Result<(), String> {
    let bytes = 1usize << 30;
    let a = run.dev.alloc::<u8>(&[bytes]).map_err(|e| e.to_string())?;
    let b = run.dev.alloc::<u8>(&[bytes]).map_err(|e| e.to_string())?;
    let (pa, pb) = (ptr(&a), ptr(&b));
    let (copy, _) = time(run.opts, || {
        // SAFETY: two live allocations of `bytes` bytes each; the context is current.
        check(unsafe { sys::cuMemcpyDtoD_v2(pb, pa, bytes) }, "cuMemcpyDtoD")
    })?;
    run.report.copy_gbs = Some(2.0 * bytes as f64 / (copy * 1e-3) / 1e9);
    let gpu = run.gpu.as_ref().ok_or("no GPU")?;
    let blocks = gpu.sms as u32 * 16;
    let threads = 256u32;
    let out = run.dev.alloc::<f32>(&[(blocks * threads) as usize]).map_err(|e| e.to_string())?;
    let (mut po, mut iters, mut fa, mut fb) = (ptr(&out), 2048i32, 0.999f32, 0.001f32);
    let (fma, _) = time(run.opts, || {
        gpu.nvrtc.launch("fma_peak", (blocks, 1), (threads, 1), &mut [arg(&mut po), arg(&mut iters), arg(&mut fa), arg(&mut fb)])
    })?;
    let flops = blocks as f64 * threads as f64 * iters as f64 * 16.0 * 8.0 * 2.0;
    run.report.fma_tflops = Some(flops / (fma * 1e-3) / 1e12);
    eprintln!(
        "rooflines: copy {:.0} GB/s, FP32 FMA {:.1} TFLOP/s",
        run.report.copy_gbs.unwrap_or(0.0),
        run.report.fma_tflops.unwrap_or(0.0)
    );
    Ok(())
}

fn saxpy(run: &mut Run) -> Result<(), String> {
    let n = run.sizes.saxpy;
    let x = uniform_f32(n, 1);
    let y0 = uniform_f32(n, 2);
    let a = 2.5f32;
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let yd = run.dev.upload(&y0).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(|e| e.to_string())?;
        let worst = (0..n).map(|i| rel_err(y[i] as f64, a as f64 * x[i] as f64 + y0[i] as f64)).fold(0.0, f64::max);
        if worst > 1e-6 { Err(format!("relative error {worst:e}")) } else { Ok(format!("max rel err {worst:.1e}")) }
    };
    let bytes = Some(12.0 * n as f64);
    let k = run.k("saxpy");
    // 4 elements per thread: blocks of 256 threads over 1024 elements.
    let grid = Grid::new(n.div_ceil(1024) as u32, 256u32);
    let mut y = yd.clone();
    run.measure("saxpy", bytes, None, "kache", |r| k.launch(&r.dev, grid, (a, &xd, &mut y)).map_err(|e| e.to_string()), &verify)?;
    yd.copy_from(&y0).map_err(|e| e.to_string())?;
    run.measure(
        "saxpy",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (a, &xd, &mut y)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        yd.copy_from(&y0).map_err(|e| e.to_string())?;
        let (mut pa, mut px, mut py, mut pn) = (a, ptr(&xd), ptr(&yd), n as i32);
        let blocks = n.div_ceil(1024) as u32;
        run.measure(
            "saxpy",
            bytes,
            None,
            "nvrtc",
            |r| {
                r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                    "saxpy",
                    (blocks, 1),
                    (256, 1),
                    &mut [arg(&mut pa), arg(&mut px), arg(&mut py), arg(&mut pn)],
                )
            },
            &verify,
        )?;
    }
    Ok(())
}

/// The block reduction and the warp-shuffle reduction of the same array.
fn reduce(run: &mut Run) -> Result<(), String> {
    let n = run.sizes.reduce;
    let x = uniform_f32(n, 3);
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let out = run.dev.alloc::<f32>(&[1]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = out.download().map_err(|e| e.to_string())?[0] as f64;
        let e = rel_err(got, want);
        if e > 1e-4 { Err(format!("sum {got}, expected {want} (relative error {e:e})")) } else { Ok(format!("rel err {e:.1e}")) }
    };
    let bytes = Some(4.0 * n as f64);
    let grid = Grid::new(STRIDED_BLOCKS, 256u32);
    for kernel in ["reduce_block", "reduce_warp", "reduce_while"] {
        let k = run.k(kernel);
        out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
        let mut o = out.clone();
        run.measure(kernel, bytes, None, "kache", |r| k.launch(&r.dev, grid, (&xd, &mut o)).map_err(|e| e.to_string()), &verify)?;
        out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
        run.measure(
            kernel,
            bytes,
            None,
            UNCHECKED,
            |r| {
                // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
                // would have failed it) and matched the reference.
                unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut o)) }.map_err(|e| e.to_string())
            },
            &verify,
        )?;
        // The alternative rule (H200 run 3's): ptxas free to unroll the unrolled loop again.
        let free = free_unrolled_loops(&sm_90_ptx(&k)?).map_err(|e| format!("{kernel}: {e}"))?;
        if run.gpu.is_some() {
            // SAFETY: `free` is kache's bounds-checked PTX of this kernel for sm_90 (the H200's
            // architecture) with C layouts, one `.pragma "nounroll"` line removed, which changes
            // how ptxas unrolls a loop, not what the code does.
            let alt = unsafe { k.with_ptx(run.dev.target(), &Specialization::uniform(k.program(), Layout::C), free) };
            out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
            let mut o = out.clone();
            let launch = |r: &Run| alt.launch(&r.dev, grid, (&xd, &mut o)).map_err(|e| e.to_string());
            run.measure(kernel, bytes, None, FREE_UNROLL, launch, &verify)?;
        } else {
            if let Some(p) = kache::toolchain::find_ptxas() {
                kache::toolchain::ptxas(&p, &free, "sm_90").map_err(|e| format!("ptxas rejected {kernel} ({FREE_UNROLL}): {e}"))?;
            }
            if let Some(dir) = &run.opts.ptx_dir {
                let file = dir.join(format!("kache-{kernel}-{FREE_UNROLL}.ptx"));
                std::fs::write(&file, &free).map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        if run.gpu.is_some() {
            out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
            let (mut px, mut pn, mut po) = (ptr(&xd), n as i32, ptr(&out));
            run.measure(
                kernel,
                bytes,
                None,
                "nvrtc",
                |r| {
                    r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                        kernel,
                        (STRIDED_BLOCKS, 1),
                        (256, 1),
                        &mut [arg(&mut px), arg(&mut pn), arg(&mut po)],
                    )
                },
                &verify,
            )?;
        }
    }
    Ok(())
}

fn softmax(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = run.sizes.softmax;
    let x: Vec<f32> = uniform_f32(rows * cols, 4).iter().map(|v| v * 20.0 - 10.0).collect();
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(|e| e.to_string())?;
    let yd = run.dev.alloc::<f32>(&[rows, cols]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(|e| e.to_string())?;
        let mut worst = 0f64;
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
            let s: f64 = row.iter().map(|v| (*v as f64 - m).exp()).sum();
            for c in 0..cols {
                let want = (row[c] as f64 - m).exp() / s;
                worst = worst.max((y[r * cols + c] as f64 - want).abs() / want.max(1e-12));
            }
        }
        if worst > 1e-4 { Err(format!("relative error {worst:e}")) } else { Ok(format!("max rel err {worst:.1e}")) }
    };
    let bytes = Some(8.0 * (rows * cols) as f64);
    let k = run.k("softmax_rows");
    let mut y = yd.clone();
    run.measure(
        "softmax_rows",
        bytes,
        None,
        "kache",
        |r| k.launch(&r.dev, Grid::new(rows as u32, 256u32), (&xd, &mut y)).map_err(|e| e.to_string()),
        &verify,
    )?;
    run.measure(
        "softmax_rows",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, Grid::new(rows as u32, 256u32), (&xd, &mut y)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        let (mut px, mut py, mut pc) = (ptr(&xd), ptr(&yd), cols as i32);
        run.measure(
            "softmax_rows",
            bytes,
            None,
            "nvrtc",
            |r| {
                r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                    "softmax_rows",
                    (rows as u32, 1),
                    (256, 1),
                    &mut [arg(&mut px), arg(&mut py), arg(&mut pc)],
                )
            },
            &verify,
        )?;
    }
    Ok(())
}

fn matmul(run: &mut Run) -> Result<(), String> {
    let n = run.sizes.matmul;
    let a: Vec<f32> = uniform_f32(n * n, 5).iter().map(|v| v - 0.5).collect();
    let b: Vec<f32> = uniform_f32(n * n, 6).iter().map(|v| v - 0.5).collect();
    let ad = run.dev.upload_nd(&a, &[n, n], Order::C).map_err(|e| e.to_string())?;
    let bd = run.dev.upload_nd(&b, &[n, n], Order::C).map_err(|e| e.to_string())?;
    let cd = run.dev.alloc::<f32>(&[n, n]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let c = cd.download().map_err(|e| e.to_string())?;
        let mut pick = rng(7);
        let mut worst = 0f64;
        for _ in 0..256 {
            let (i, j) = (pick() as usize % n, pick() as usize % n);
            let want: f64 = (0..n).map(|k| a[i * n + k] as f64 * b[k * n + j] as f64).sum();
            let scale: f64 = (0..n).map(|k| (a[i * n + k] as f64 * b[k * n + j] as f64).abs()).sum();
            worst = worst.max((c[i * n + j] as f64 - want).abs() / scale.max(1e-30));
        }
        if worst > 1e-5 {
            Err(format!("error {worst:e} of the sum of |terms|"))
        } else {
            Ok(format!("max err {worst:.1e} (of sum |a b|), 256 samples"))
        }
    };
    let flops = Some(2.0 * (n as f64).powi(3));
    let k = run.k("matmul_tiled");
    let grid = Grid::new(((n / 32) as u32, (n / 32) as u32), (32u32, 32u32));
    let mut c = cd.clone();
    run.measure("matmul_tiled", None, flops, "kache", |r| k.launch(&r.dev, grid, (&ad, &bd, &mut c)).map_err(|e| e.to_string()), &verify)?;
    run.measure(
        "matmul_tiled",
        None,
        flops,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (&ad, &bd, &mut c)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        let (mut pa, mut pb, mut pc, mut pn) = (ptr(&ad), ptr(&bd), ptr(&cd), n as i32);
        let g = (n / 32) as u32;
        run.measure(
            "matmul_tiled",
            None,
            flops,
            "nvrtc",
            |r| {
                r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                    "matmul_tiled",
                    (g, g),
                    (32, 32),
                    &mut [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)],
                )
            },
            &verify,
        )?;
    }
    Ok(())
}

fn histogram(run: &mut Run) -> Result<(), String> {
    let n = run.sizes.histogram;
    let mut r = rng(8);
    // Skewed bytes, as real data: a quarter of the values fall in 16 bins.
    let x: Vec<u32> = (0..n)
        .map(|_| {
            let v = r();
            if v.is_multiple_of(4) { (v >> 8) as u32 % 16 } else { (v >> 8) as u32 }
        })
        .collect();
    let mut want = vec![0u64; 256];
    for v in &x {
        want[(v & 255) as usize] += 1;
    }
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let bins = run.dev.alloc::<u32>(&[256]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = bins.download().map_err(|e| e.to_string())?;
        match (0..256).find(|b| got[*b] as u64 != want[*b]) {
            Some(b) => Err(format!("bin {b}: {}, expected {}", got[b], want[b])),
            None => Ok("exact".into()),
        }
    };
    let bytes = Some(4.0 * n as f64);
    let k = run.k("histogram");
    let grid = Grid::new(STRIDED_BLOCKS, 256u32);
    let mut b = bins.clone();
    run.measure("histogram", bytes, None, "kache", |r| k.launch(&r.dev, grid, (&xd, &mut b)).map_err(|e| e.to_string()), &verify)?;
    bins.copy_from(&[0u32; 256]).map_err(|e| e.to_string())?;
    run.measure(
        "histogram",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut b)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        bins.copy_from(&[0u32; 256]).map_err(|e| e.to_string())?;
        let (mut px, mut pn, mut pb) = (ptr(&xd), n as i32, ptr(&bins));
        run.measure(
            "histogram",
            bytes,
            None,
            "nvrtc",
            |r| {
                r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                    "histogram",
                    (STRIDED_BLOCKS, 1),
                    (256, 1),
                    &mut [arg(&mut px), arg(&mut pn), arg(&mut pb)],
                )
            },
            &verify,
        )?;
    }
    Ok(())
}

/// Elements per thread of the single-pass scan (`SCAN_ITEMS` in kernels.rs and cuda.cu), its
/// kernel attribute in kernels.rs, and the alternatives measured beside it (kache's source with
/// another `SCAN_ITEMS`, or another attribute): row name, elements per thread, attribute (empty:
/// the suite's).
const SCAN_ITEMS: usize = 16;
const SCAN_ATTRIBUTE: &str = "#[kernel(max_threads = 256, min_blocks = 8)]";
const SCAN_VARIANTS: [(&str, usize, &str); 2] = [("k-nolb", 16, "#[kernel]"), ("k-t2048", 8, "")];

/// kache's `scan` of row `row` with `items` elements per thread and `attribute` on it: the
/// suite's own, or compiled from kernels.rs so changed.
fn scan_kernel(run: &Run, row: &str, items: usize, attribute: &str) -> Result<kache::Kernel, String> {
    if items == SCAN_ITEMS && attribute.is_empty() {
        return Ok(run.k("scan"));
    }
    let path = run.opts.root.join(KERNELS);
    let source = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ours = format!("const SCAN_ITEMS: usize = {SCAN_ITEMS};");
    let entry = format!("{SCAN_ATTRIBUTE}\npub fn scan(");
    if !source.contains(&ours) || !source.contains(&entry) {
        return Err(format!("{KERNELS} does not say `{ours}` and `{SCAN_ATTRIBUTE} pub fn scan(`"));
    }
    let mut variant = source.replace(&ours, &format!("const SCAN_ITEMS: usize = {items};"));
    if !attribute.is_empty() {
        variant = variant.replace(&entry, &format!("{attribute}\npub fn scan("));
    }
    let m = run.jit.load_source(&format!("kernels_scan_{row}.rs"), &variant).map_err(|e| e.to_string())?;
    m.kernel("scan").map_err(|e| e.to_string())
}

/// The next of a scan's launch counts (1, 2, ...): its epoch.
fn next_epoch(launches: &Cell<u64>) -> u64 {
    launches.set(launches.get() + 1);
    launches.get()
}

/// An inclusive scan of `n` u32 in one pass (decoupled look-back): a block of 256 per tile of
/// 256 * SCAN_ITEMS, each implementation with its own tile statuses, zeroed once, and its own
/// launch count, passed as the launch's epoch (1, 2, ...). The result is checked after the
/// first launch and again after the timed ones (later epochs).
fn scan(run: &mut Run) -> Result<(), String> {
    let n = run.sizes.scan;
    let mut r = rng(9);
    let x: Vec<u32> = (0..n).map(|_| (r() % 4) as u32).collect();
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let yd = run.dev.alloc::<u32>(&[n]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = yd.download().map_err(|e| e.to_string())?;
        let mut acc = 0u32;
        for i in 0..n {
            acc = acc.wrapping_add(x[i]);
            if got[i] != acc {
                return Err(format!("y[{i}] = {}, expected {acc}", got[i]));
            }
        }
        Ok("exact".into())
    };
    // Measures one implementation: zeroed output, the checked first launch and the timing
    // (`measure`), then one more launch checked (on the host, after two unchecked ones: the
    // host times nothing), so later epochs are checked too.
    let bytes = Some(8.0 * n as f64);
    let one = |run: &mut Run, imp: &str, launch: &dyn Fn(&Run) -> Result<(), String>| -> Result<(), String> {
        yd.copy_from(&vec![0u32; n]).map_err(|e| e.to_string())?;
        run.measure("scan", bytes, None, imp, launch, &verify)?;
        if run.gpu.is_none() {
            launch(run)?;
            launch(run)?;
        }
        yd.copy_from(&vec![0u32; n]).map_err(|e| e.to_string())?;
        launch(run)?;
        verify(run).map(|_| ()).map_err(|e| format!("scan ({imp}), a later launch: {e}"))
    };
    let mut kache_rows = vec![("kache", SCAN_ITEMS, true, ""), (UNCHECKED, SCAN_ITEMS, false, "")];
    kache_rows.extend(SCAN_VARIANTS.iter().map(|(name, items, attribute)| (*name, *items, true, *attribute)));
    for (imp, items, checked, attribute) in kache_rows {
        let k = scan_kernel(run, imp, items, attribute)?;
        let tiles = n.div_ceil(256 * items);
        let grid = Grid::new(tiles as u32, 256u32);
        let status = run.dev.alloc::<u64>(&[tiles]).map_err(|e| e.to_string())?;
        let epochs = Cell::new(0u64);
        let launch = |r: &Run| -> Result<(), String> {
            let (mut y, mut st, epoch) = (yd.clone(), status.clone(), next_epoch(&epochs));
            if checked {
                k.launch(&r.dev, grid, (&xd, &mut y, &mut st, epoch)).map_err(|e| e.to_string())
            } else {
                // SAFETY: the checked launch of the same kernel and arguments (the row before)
                // stayed in bounds (a fault would have failed it) and matched the reference.
                unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut y, &mut st, epoch)) }.map_err(|e| e.to_string())
            }
        };
        one(run, imp, &launch)?;
    }
    // NVRTC: cuda.cu's `scan_lb6` (SCAN_ITEMS per thread under launch bounds (256, 6): the row
    // kache is compared with, NVRTC's fastest: its code spills 152 bytes under kache's (256, 8)
    // and 8 here), `scan` (kache's bounds) and `scan_t2048` (8 per thread, k-t2048's twin).
    let nvrtc_rows = if run.gpu.is_some() {
        &[("nvrtc", "scan_lb6", SCAN_ITEMS), ("nv-lb8", "scan", SCAN_ITEMS), ("nv-t2048", "scan_t2048", 8)][..]
    } else {
        &[]
    };
    for &(imp, function, items) in nvrtc_rows {
        let tiles = n.div_ceil(256 * items);
        let status = run.dev.alloc::<u64>(&[tiles]).map_err(|e| e.to_string())?;
        let (px, pn, py, ps) = (ptr(&xd), n as i32, ptr(&yd), ptr(&status));
        let epochs = Cell::new(0u64);
        let launch = |r: &Run| -> Result<(), String> {
            let (mut px, mut pn, mut py, mut ps, mut epoch) = (px, pn, py, ps, next_epoch(&epochs));
            r.gpu.as_ref().ok_or("no GPU")?.nvrtc.launch(
                function,
                (tiles as u32, 1),
                (256, 1),
                &mut [arg(&mut px), arg(&mut pn), arg(&mut py), arg(&mut ps), arg(&mut epoch)],
            )
        };
        one(run, imp, &launch)?;
    }
    Ok(())
}

/// The table the suite prints: per kernel, kache and NVRTC side by side, and each
/// memory-bound kernel's bandwidth against the copy roofline.
pub fn table(report: &Report) -> String {
    let mut out = format!(
        "device: {}
",
        report.device
    );
    if let (Some(c), Some(f)) = (report.copy_gbs, report.fma_tflops) {
        out += &format!("rooflines: device-to-device copy {c:.0} GB/s, FP32 FMA {f:.1} TFLOP/s\n");
    }
    out += &format!(
        "{:<14} {:<7} {:>11} {:>11} {:>10} {:>8} {:>12}  check\n",
        "kernel", "impl", "median ms", "min ms", "GB/s", "% copy", "vs nvrtc"
    );
    for r in &report.rows {
        let nv = report.rows.iter().find(|o| o.kernel == r.kernel && o.implementation == "nvrtc").map(|o| o.median_ms);
        let ratio = match nv {
            Some(t) if r.median_ms > 0.0 => format!("{:.3}x", t / r.median_ms),
            _ => "-".into(),
        };
        let gbs = r.gbs.map(|g| format!("{g:.0}")).or(r.gflops.map(|g| format!("{:.0} GF", g))).unwrap_or_else(|| "-".into());
        let pct = match (r.gbs, report.copy_gbs) {
            (Some(g), Some(c)) => format!("{:.1}%", 100.0 * g / c),
            _ => "-".into(),
        };
        out += &format!(
            "{:<14} {:<7} {:>11.4} {:>11.4} {:>10} {:>8} {:>12}  {}\n",
            r.kernel, r.implementation, r.median_ms, r.min_ms, gbs, pct, ratio, r.check
        );
    }
    out
}
