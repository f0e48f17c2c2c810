//! The GPU side of the suite: NVRTC's modules, launching their functions, timing with CUDA
//! events, and the rooflines.

use std::cell::RefCell;
use std::ffi::c_void;

use cudarc::driver::sys;
use kache::{DeviceArray, Element};

use super::Options;
use super::harness::Run;

/// NVRTC's modules on the GPU, each CUDA source compiled and loaded when a function it defines
/// is first asked for: functions by name, launched on the legacy default stream (the one kache
/// uses), so events on it time both.
pub struct Nvrtc {
    sources: Vec<(String, String)>,
    arch: &'static str,
    /// Each source's module once compiled and loaded, or why NVRTC or the driver refused it
    /// (its functions then fail their rows).
    modules: RefCell<Vec<Option<Result<sys::CUmodule, String>>>>,
}

/// One argument of an NVRTC kernel, by value: each is passed as a pointer to its own 8-byte
/// slot, of which the kernel reads the first 4 or 8 bytes (the host is little-endian).
#[derive(Clone, Copy, Debug)]
pub enum A {
    /// A device pointer.
    P(u64),
    I(i32),
    U(u32),
    F(f32),
}

impl Nvrtc {
    /// The module of source `i`, compiled and loaded on first use.
    fn module(&self, i: usize) -> Result<sys::CUmodule, String> {
        let mut modules = self.modules.borrow_mut();
        let (file, source) = &self.sources[i];
        let m = modules[i].get_or_insert_with(|| {
            let ptx = nvrtc_ptx(source, self.arch).map_err(|e| format!("{file}: {e}"))?;
            let c = std::ffi::CString::new(ptx).map_err(|e| e.to_string())?;
            let mut module: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: the context is current (bound in `Gpu::open`); `c` is NUL-terminated PTX.
            check(unsafe { sys::cuModuleLoadData(&mut module, c.as_ptr() as *const c_void) }, "cuModuleLoadData")
                .map_err(|e| format!("{file}: {e}"))?;
            Ok(module)
        });
        m.clone()
    }

    fn func(&self, name: &str) -> Result<sys::CUfunction, String> {
        let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
        let mut refused = Vec::new();
        // The sources that may define it: those that name it as a function.
        let named = format!(" {name}(");
        for i in (0..self.sources.len()).filter(|i| self.sources[*i].1.contains(&named)) {
            let m = match self.module(i) {
                Ok(m) => m,
                Err(e) => {
                    refused.push(e);
                    continue;
                }
            };
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: `m` is a loaded module; valid out pointer.
            if unsafe { sys::cuModuleGetFunction(&mut f, m, cname.as_ptr()) } == sys::CUresult::CUDA_SUCCESS {
                return Ok(f);
            }
        }
        Err(format!("no NVRTC function {name} ({})", if refused.is_empty() { "in no CUDA source".into() } else { refused.join("; ") }))
    }

    /// Launches `name` on a grid of `grid` blocks of `block` threads with `shared` bytes of
    /// dynamic shared memory; `args` are pointers to each argument's value.
    pub fn launch_3d(
        &self,
        name: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), String> {
        let f = self.func(name)?;
        // SAFETY: the function was loaded from NVRTC's PTX of a CUDA source, whose signature
        // the caller's argument list follows; the context is current (bound in `Gpu::open`).
        let r = unsafe {
            sys::cuLaunchKernel(
                f,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared,
                std::ptr::null_mut(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, name)
    }

    /// Launches `name` with `shared` bytes of dynamic shared memory; `args` are pointers to
    /// each argument's value.
    pub fn launch_shared(
        &self,
        name: &str,
        grid: (u32, u32),
        block: (u32, u32),
        shared: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), String> {
        self.launch_3d(name, (grid.0, grid.1, 1), (block.0, block.1, 1), shared, args)
    }

    /// Launches `name`; `args` are pointers to each argument's value.
    pub fn launch(&self, name: &str, grid: (u32, u32), block: (u32, u32), args: &mut [*mut c_void]) -> Result<(), String> {
        self.launch_shared(name, grid, block, 0, args)
    }

    /// Launches `name` with the arguments `args`, by value, in the order of its signature.
    pub fn call(&self, name: &str, grid: (u32, u32, u32), block: (u32, u32, u32), args: &[A]) -> Result<(), String> {
        let mut slots: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                A::P(v) => v,
                A::I(v) => v as u32 as u64,
                A::U(v) => v as u64,
                A::F(v) => v.to_bits() as u64,
            })
            .collect();
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        self.launch_3d(name, grid, block, 0, &mut ptrs)
    }
}

/// Sets `words` 32-bit words at device address `ptr` to zero, in order with the launches on the
/// legacy default stream (a counter a kernel starts from, between timed launches).
pub fn zero_words(ptr: u64, words: usize) -> Result<(), String> {
    // SAFETY: the caller passes the address of a live allocation of at least `words` words;
    // the context is current.
    check(unsafe { sys::cuMemsetD32Async(ptr, 0, words, std::ptr::null_mut()) }, "cuMemsetD32Async")
}

pub fn check(r: sys::CUresult, what: &str) -> Result<(), String> {
    if r == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(format!("{what}: {r:?}")) }
}

/// Compiles a CUDA source with NVRTC for `arch` (`sm_90`), with NVRTC's default options.
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

pub struct Gpu {
    pub nvrtc: Nvrtc,
    pub sms: i32,
}

impl Gpu {
    /// Opens device 0; NVRTC compiles each CUDA source when a function it defines is first
    /// launched (a source that does not compile or load fails its functions' rows).
    pub fn open(
        ctx_keep: &mut Option<std::sync::Arc<cudarc::driver::CudaContext>>,
        sources: &[(&str, String)],
        arch: &'static str,
    ) -> Result<Gpu, String> {
        let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| format!("CUDA context: {e:?}"))?;
        ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        let sources: Vec<(String, String)> = sources.iter().map(|(f, s)| (f.to_string(), s.clone())).collect();
        let modules = RefCell::new(vec![None; sources.len()]);
        let mut sms = 0i32;
        let attr = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        // SAFETY: valid out pointer; device 0 exists (the context opened).
        let r = unsafe { sys::cuDeviceGetAttribute(&mut sms, attr, 0) };
        check(r, "cuDeviceGetAttribute")?;
        *ctx_keep = Some(ctx);
        Ok(Gpu { nvrtc: Nvrtc { sources, arch, modules }, sms })
    }
}

/// Times `launch` (median and minimum ms of one launch) with events on the default stream.
pub fn time(opts: &Options, mut launch: impl FnMut() -> Result<(), String>) -> Result<(f64, f64), String> {
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

pub fn ptr<T: Element>(a: &DeviceArray<T>) -> u64 {
    a.device_ptr()
}

pub fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// The rooflines: device-to-device copy bandwidth and the FP32 FMA peak.
pub fn rooflines(run: &mut Run) -> Result<(), String> {
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
