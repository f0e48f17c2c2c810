//! The CUDA backend, through cudarc's driver bindings (with `cudarc_arrays`, which takes
//! cudarc's slices as kernel arrays, the only modules that touch cudarc).
//!
//! The driver library is loaded at run time: on a machine without it, [`open`] returns
//! [`Error::NoCudaDriver`] instead of letting cudarc panic. Work goes to the device's legacy
//! default stream, so copies to and from the device wait for earlier launches.

use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::result::DriverError;
use cudarc::driver::safe::CudaContext;
use cudarc::driver::{CudaStream, sys};

use super::fault::{FaultRecord, FaultSites, Registry};
use crate::capture::ForeignQueue;
use crate::error::{Error, Result};
use crate::target::Arch;

fn cuda_err(op: &'static str, r: sys::CUresult) -> Error {
    let e = DriverError(r);
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{r:?}"));
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Error::Cuda { op, message: format!("{name}: {text}") }
}

fn check(op: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS { Ok(()) } else { Err(cuda_err(op, r)) }
}

/// Whether `libcuda` can be loaded, checked without letting cudarc panic.
pub(crate) fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

fn has_symbol(name: &str) -> bool {
    if !driver_present() {
        return false;
    }
    let Ok(c) = CString::new(name) else { return false };
    // SAFETY: the library is present (checked above); we only look the symbol up.
    unsafe { sys::culib().get::<unsafe extern "C" fn()>(c.as_bytes_with_nul()).is_ok() }
}

/// An open CUDA device.
pub(crate) struct CudaDevice {
    ctx: Arc<CudaContext>,
    pub ordinal: usize,
    pub name: String,
    pub arch: Arch,
    pub compute_capability: (i32, i32),
    pub driver_version: i32,
    /// Streaming multiprocessors (what a tuning result is keyed by, beside the name).
    pub multiprocessors: u32,
    /// The fault record every bounds-checked launch on this device writes to.
    fault: CudaBuffer,
    /// A checked launch has been queued since the record was last read.
    fault_pending: AtomicBool,
    /// The kernels whose tokens the record can carry.
    faulting: Mutex<Registry>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({} {} {})", self.ordinal, self.name, self.arch)
    }
}

/// Initialises the driver: `NoCudaDriver` without `libcuda`, else what `cuInit` returned.
fn init() -> Result<sys::CUresult> {
    if !driver_present() {
        return Err(Error::NoCudaDriver);
    }
    // SAFETY: the driver library is present; cuInit may be called any number of times, from
    // any thread.
    Ok(unsafe { sys::cuInit(0) })
}

/// The number of devices the driver reports (initialised).
fn count_initialised() -> Result<usize> {
    let mut count = 0i32;
    // SAFETY: the driver is initialised; `count` is a valid out pointer.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
    Ok(count.max(0) as usize)
}

/// How many CUDA devices there are: `NoCudaDriver` without `libcuda`, 0 where the driver finds
/// no device.
pub(crate) fn device_count() -> Result<usize> {
    match init()? {
        sys::CUresult::CUDA_SUCCESS => count_initialised(),
        sys::CUresult::CUDA_ERROR_NO_DEVICE => Ok(0),
        r => Err(cuda_err("cuInit", r)),
    }
}

/// Opens device `ordinal`: `NoCudaDriver` without `libcuda`, `NoCudaDevice` without the device.
pub(crate) fn open(ordinal: usize) -> Result<CudaDevice> {
    let r = init()?;
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::NoCudaDevice { ordinal, reason: cuda_err("cuInit", r).to_string() });
    }
    let count = count_initialised()?;
    if ordinal >= count {
        let there = match count {
            0 => "the driver reports no device".to_string(),
            1 => "the driver reports 1 device, ordinal 0".to_string(),
            n => format!("the driver reports {n} devices, ordinals 0 to {}", n - 1),
        };
        return Err(Error::NoCudaDevice { ordinal, reason: there });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| match e.0 {
        sys::CUresult::CUDA_ERROR_NO_DEVICE | sys::CUresult::CUDA_ERROR_INVALID_DEVICE => {
            Error::NoCudaDevice { ordinal, reason: cuda_err("cuDeviceGet", e.0).to_string() }
        }
        r => cuda_err("CudaContext::new", r),
    })?;
    let name = ctx.name().unwrap_or_else(|_| "unknown".into());
    let cc = ctx.compute_capability().map_err(|e| cuda_err("compute_capability", e.0))?;
    let mut driver_version = 0i32;
    // SAFETY: valid out pointer.
    check("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut driver_version) })?;
    let arch = arch_for(cc).ok_or_else(|| {
        Error::Device(format!("{name} has compute capability {}.{}; kache generates code for sm_70 and newer", cc.0, cc.1))
    })?;
    let multiprocessors = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| cuda_err("cuDeviceGetAttribute", e.0))?
        .max(0) as u32;
    let fault = alloc_in(&ctx, std::mem::size_of::<FaultRecord>())?;
    Ok(CudaDevice {
        ctx,
        ordinal,
        name,
        arch,
        compute_capability: cc,
        driver_version,
        multiprocessors,
        fault,
        fault_pending: AtomicBool::new(false),
        faulting: Mutex::new(Registry::default()),
    })
}

/// The architecture to generate code for: the device's own, or the newest kache supports
/// (PTX is forward compatible: the driver compiles it for newer GPUs).
fn arch_for((major, minor): (i32, i32)) -> Option<Arch> {
    let sm = (major * 10 + minor) as u32;
    let known = [70, 72, 75, 80, 86, 87, 89, 90];
    if sm < 70 {
        return None;
    }
    let best = known.iter().copied().filter(|k| *k <= sm).max().unwrap_or(70);
    Some(Arch { sm: best, accelerated: false })
}

impl CudaDevice {
    /// The architecture of the device's own machine code (its compute capability), what the
    /// driver compiles PTX to: `arch` itself, except on GPUs newer than kache's newest
    /// architecture, which get that architecture's PTX.
    // Only the JIT's cubin tier keys by it.
    #[cfg_attr(not(feature = "compiler"), allow(dead_code))]
    pub fn machine_arch(&self) -> Arch {
        let (major, minor) = self.compute_capability;
        Arch { sm: (major.max(0) * 10 + minor.max(0)) as u32, accelerated: false }
    }

    fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| cuda_err("cuCtxSetCurrent", e.0))
    }

    /// Allocates `len` zeroed bytes.
    pub fn alloc(&self, len: usize) -> Result<CudaBuffer> {
        alloc_in(&self.ctx, len)
    }

    /// The GPU time `run` takes, between two events on the legacy stream it launches on, in
    /// milliseconds (waits for the second event).
    pub fn time(&self, run: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.ctx.new_event(flags).map_err(|e| cuda_err("cuEventCreate", e.0))?;
        let end = self.ctx.new_event(flags).map_err(|e| cuda_err("cuEventCreate", e.0))?;
        let legacy = self.ctx.default_stream();
        start.record(&legacy).map_err(|e| cuda_err("cuEventRecord", e.0))?;
        run()?;
        end.record(&legacy).map_err(|e| cuda_err("cuEventRecord", e.0))?;
        let ms = start.elapsed_ms(&end).map_err(|e| cuda_err("cuEventElapsedTime", e.0))?;
        Ok(ms as f64)
    }

    /// Copies `dst.len()` bytes of device memory at address `ptr` to `dst`, after every work
    /// queued in the context (any stream) has finished.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + dst.len()` is memory of this device's context that stays allocated for the
    /// call.
    pub unsafe fn read_raw(&self, ptr: u64, dst: &mut [u8]) -> Result<()> {
        self.ctx.synchronize().map_err(|e| cuda_err("cuCtxSynchronize", e.0))?;
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: the caller promises the range is live memory of this context (bound by
        // `synchronize`); `dst` is a host buffer of that length.
        check("cuMemcpyDtoH", unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, ptr, dst.len()) })
    }

    /// Copies `src` to device memory at address `ptr`, after every work queued in the context.
    ///
    /// # Safety
    ///
    /// As [`read_raw`](Self::read_raw), and nothing else reads or writes the range meanwhile.
    pub unsafe fn write_raw(&self, ptr: u64, src: &[u8]) -> Result<()> {
        self.ctx.synchronize().map_err(|e| cuda_err("cuCtxSynchronize", e.0))?;
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: as for `read_raw`.
        check("cuMemcpyHtoD", unsafe { sys::cuMemcpyHtoD_v2(ptr, src.as_ptr() as *const c_void, src.len()) })
    }

    /// Waits for every launch on the device, then reports a failed bounds check.
    pub fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: context bound.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })?;
        self.check_faults()
    }

    /// The device address of the fault record and the token of `sites`, for a checked launch.
    pub fn fault_target(&self, sites: &Arc<FaultSites>) -> (u64, u32) {
        let token = self.faulting.lock().unwrap_or_else(|e| e.into_inner()).token(sites);
        (self.fault.ptr, token)
    }

    /// After an operation that waited for the device's earlier work (a blocking copy, a
    /// synchronisation): if a checked launch has run since the record was last read, reads it,
    /// and reports a failed check as [`Error::Launch`] once (the record is cleared).
    pub fn check_faults(&self) -> Result<()> {
        if !self.fault_pending.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        // The copy waits for every launch queued before it, so for each whose `pending` was
        // just consumed (it is set after queueing); a launch queued later sets it again.
        let mut rec = FaultRecord::default();
        self.fault.read(0, bytemuck::bytes_of_mut(&mut rec))?;
        if rec.flag == 0 {
            return Ok(());
        }
        // Clear it with launches held off (they queue under the registry's lock), reading it
        // again first: a fault of a launch queued meanwhile is then either in what is reported
        // (the first fault wins) or written after the clear, never erased unreported.
        let registry = self.faulting.lock().unwrap_or_else(|e| e.into_inner());
        self.fault.read(0, bytemuck::bytes_of_mut(&mut rec))?;
        self.fault.write(0, bytemuck::bytes_of(&FaultRecord::default()))?;
        Err(registry.error(&rec))
    }

    /// Compiles PTX with the driver's linker, which also gives the cubin (for the cubin tier)
    /// and, when the PTX is rejected, the JIT's error log.
    pub fn load_ptx(&self, ptx: &str, entry: &str) -> Result<(LoadedFunction, Option<Vec<u8>>)> {
        self.bind()?;
        let mut text = ptx.as_bytes().to_vec();
        text.push(0);
        if !["cuLinkCreate_v2", "cuLinkAddData_v2", "cuLinkComplete", "cuLinkDestroy"].iter().all(|s| has_symbol(s)) {
            return Ok((self.load_image(&text, entry)?, None));
        }
        let mut err_log = vec![0u8; 16 << 10];
        let mut opts = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut vals = [err_log.as_mut_ptr() as *mut c_void, err_log.len() as *mut c_void];
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        // SAFETY: option arrays have matching lengths and outlive the link state.
        check("cuLinkCreate", unsafe { sys::cuLinkCreate_v2(2, opts.as_mut_ptr(), vals.as_mut_ptr(), &mut state) })?;
        let log = |buf: &[u8]| String::from_utf8_lossy(&buf[..buf.iter().position(|b| *b == 0).unwrap_or(buf.len())]).trim().to_string();
        // SAFETY: `text` is NUL-terminated PTX; the name is a static C string.
        let r = unsafe {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                text.as_mut_ptr() as *mut c_void,
                text.len(),
                c"kernel.ptx".as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        let result = if r != sys::CUresult::CUDA_SUCCESS {
            Err(Error::Cuda { op: "PTX JIT", message: format!("{}\n{}", cuda_err("cuLinkAddData", r), log(&err_log)) })
        } else {
            let mut cubin: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            // SAFETY: valid state and out pointers.
            let r = unsafe { sys::cuLinkComplete(state, &mut cubin, &mut size) };
            if r != sys::CUresult::CUDA_SUCCESS || cubin.is_null() {
                Err(Error::Cuda { op: "PTX link", message: format!("{}\n{}", cuda_err("cuLinkComplete", r), log(&err_log)) })
            } else {
                // SAFETY: the driver owns `size` bytes at `cubin` until cuLinkDestroy; copy now.
                Ok(unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec())
            }
        };
        // SAFETY: destroying the state we created.
        unsafe { sys::cuLinkDestroy(state) };
        let cubin = result?;
        let f = self.load_image(&cubin, entry)?;
        Ok((f, Some(cubin)))
    }

    /// Loads a cubin (or NUL-terminated PTX) image and finds `entry`.
    pub fn load_image(&self, image: &[u8], entry: &str) -> Result<LoadedFunction> {
        self.bind()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        let mut err_log = vec![0u8; 8 << 10];
        let mut opts = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut vals = [err_log.as_mut_ptr() as *mut c_void, err_log.len() as *mut c_void];
        // SAFETY: `image` is a complete cubin/ELF or NUL-terminated PTX held for the call.
        let r = unsafe { sys::cuModuleLoadDataEx(&mut module, image.as_ptr() as *const c_void, 2, opts.as_mut_ptr(), vals.as_mut_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            let end = err_log.iter().position(|b| *b == 0).unwrap_or(err_log.len());
            return Err(Error::Cuda {
                op: "cuModuleLoadData",
                message: format!("{}\n{}", cuda_err("cuModuleLoadDataEx", r), String::from_utf8_lossy(&err_log[..end]).trim()),
            });
        }
        let name = CString::new(entry).map_err(|_| Error::Device("entry name contains NUL".into()))?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: module loaded above.
        let r = unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: unloading what we loaded.
            unsafe { sys::cuModuleUnload(module) };
            return Err(cuda_err("cuModuleGetFunction", r));
        }
        Ok(LoadedFunction { module, func, static_shared: std::sync::OnceLock::new(), ctx: self.ctx.clone() })
    }

    /// The foreign streams among `queues` (cudarc streams of arrays the launch uses), each
    /// checked to belong to this device's context; the legacy stream itself needs no ordering.
    fn foreign_streams<'q>(&self, queues: &[&'q ForeignQueue]) -> Result<Vec<&'q CudaStream>> {
        let mut out = Vec::new();
        for q in queues {
            let Some(s) = q.downcast_ref::<CudaStream>() else { continue };
            if s.context().cu_ctx() != self.ctx.cu_ctx() {
                return Err(Error::Device(format!(
                    "a cudarc array belongs to another CUDA context than the primary context of device {}, which kache launches in",
                    self.ordinal
                )));
            }
            if !s.cu_stream().is_null() && !out.iter().any(|o: &&CudaStream| o.cu_stream() == s.cu_stream()) {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// Launches `f` on the legacy default stream; `params` holds one pointer per flattened
    /// parameter. `queues` are the streams of the cudarc arrays it uses: the launch waits for
    /// the work queued on each before it, and each waits for the launch before anything queued
    /// on it later (the free of a dropped slice included).
    pub fn launch(
        &self,
        f: &LoadedFunction,
        grid: &super::Grid,
        params: &mut [*mut c_void],
        queues: &[&ForeignQueue],
        checked: bool,
    ) -> Result<()> {
        let (block, shared) = ([grid.block.0, grid.block.1, grid.block.2], grid.shared_mem);
        let grid = [grid.grid.0, grid.grid.1, grid.grid.2];
        self.bind()?;
        let foreign = self.foreign_streams(queues)?;
        let legacy = self.ctx.default_stream();
        for s in &foreign {
            legacy.join(s).map_err(|e| cuda_err("cuStreamWaitEvent", e.0))?;
        }
        {
            // Queued under the registry's lock, so that clearing the record never erases a
            // fault (see `check_faults`).
            let _registry = self.faulting.lock().unwrap_or_else(|e| e.into_inner());
            self.launch_on_legacy(f, grid, block, shared, params)?;
            // Set after queueing: whoever clears it reads the record with a copy that waits
            // for this launch.
            if checked {
                self.fault_pending.store(true, Ordering::Release);
            }
        }
        for s in &foreign {
            s.join(&legacy).map_err(|e| cuda_err("cuStreamWaitEvent", e.0))?;
        }
        Ok(())
    }

    fn launch_on_legacy(&self, f: &LoadedFunction, grid: [u32; 3], block: [u32; 3], shared: u32, params: &mut [*mut c_void]) -> Result<()> {
        // The driver puts the dynamic shared memory after the static, 16-byte aligned;
        // `dynamic_shared_array` starts at the next 1024-byte boundary (codegen's
        // `dyn_shared`), so a kernel with static shared memory gets 1 KiB more, the most that
        // boundary can cost.
        let shared = if shared > 0 && f.static_shared()? > 0 { shared.saturating_add(DYN_SHARED_SLACK) } else { shared };
        // Past 48 KiB a block's shared memory, static and dynamic together, needs the
        // function's opt-in (up to the device's limit; beyond it the launch fails as invalid).
        if shared > 0 && f.static_shared()?.saturating_add(shared) > 48 << 10 {
            // SAFETY: valid function handle.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(f.func, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
            })?;
        }
        // SAFETY: `params` matches the kernel's parameter list (checked by the caller).
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                f.func,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}

/// Bytes added to the dynamic shared memory of a kernel that also has static shared memory, for
/// `dynamic_shared_array`'s 1024-byte alignment.
const DYN_SHARED_SLACK: u32 = 1024;

/// Allocates `len` zeroed bytes in `ctx`.
fn alloc_in(ctx: &Arc<CudaContext>, len: usize) -> Result<CudaBuffer> {
    ctx.bind_to_thread().map_err(|e| cuda_err("cuCtxSetCurrent", e.0))?;
    let mut ptr: sys::CUdeviceptr = 0;
    if len > 0 {
        // SAFETY: context bound; valid out pointer.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, len) })?;
        // SAFETY: `ptr` is a fresh allocation of `len` bytes.
        let r = unsafe { sys::cuMemsetD8_v2(ptr, 0, len) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: freeing what we just allocated.
            unsafe { sys::cuMemFree_v2(ptr) };
            return Err(cuda_err("cuMemsetD8", r));
        }
    }
    Ok(CudaBuffer { ptr, len, ctx: ctx.clone() })
}

/// Device memory; freed on drop with `cuMemFree`, which waits for the device's work, so memory
/// an in-flight kernel uses is never freed under it.
pub(crate) struct CudaBuffer {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl CudaBuffer {
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }

    fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| cuda_err("cuCtxSetCurrent", e.0))
    }

    /// Copies `src` to byte offset `at` (waits for earlier launches).
    pub fn write(&self, at: usize, src: &[u8]) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|e| e > self.len) {
            return Err(Error::BadArray("write past the end of the buffer".into()));
        }
        if src.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: bounds checked; the allocation is live while `self` is.
        check("cuMemcpyHtoD", unsafe { sys::cuMemcpyHtoD_v2(self.ptr + at as u64, src.as_ptr() as *const c_void, src.len()) })
    }

    /// Copies from byte offset `at` into `dst` (waits for earlier launches).
    pub fn read(&self, at: usize, dst: &mut [u8]) -> Result<()> {
        if at.checked_add(dst.len()).is_none_or(|e| e > self.len) {
            return Err(Error::BadArray("read past the end of the buffer".into()));
        }
        if dst.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: bounds checked; the allocation is live while `self` is.
        check("cuMemcpyDtoH", unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut c_void, self.ptr + at as u64, dst.len()) })
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        if self.len > 0 && self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by cuMemAlloc in this context; freed once.
            unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// A loaded module and its kernel function; unloaded on drop.
pub(crate) struct LoadedFunction {
    module: sys::CUmodule,
    func: sys::CUfunction,
    /// Its static shared memory, bytes (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`), read at its
    /// first launch with dynamic shared memory (not at load: a cache hit's first launch pays
    /// no driver call it does not need).
    static_shared: std::sync::OnceLock<u32>,
    ctx: Arc<CudaContext>,
}

impl LoadedFunction {
    fn static_shared(&self) -> Result<u32> {
        if let Some(n) = self.static_shared.get() {
            return Ok(*n);
        }
        let mut n = 0i32;
        // SAFETY: valid function handle and out pointer.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(&mut n, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.func)
        })?;
        Ok(*self.static_shared.get_or_init(|| n.max(0) as u32))
    }
}

// SAFETY: CUDA module and function handles may be used from any thread with the context bound.
unsafe impl Send for LoadedFunction {}
// SAFETY: as above.
unsafe impl Sync for LoadedFunction {}
// SAFETY: device pointers are plain integers; the context is thread-safe.
unsafe impl Send for CudaBuffer {}
// SAFETY: as above.
unsafe impl Sync for CudaBuffer {}

impl Drop for LoadedFunction {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: loaded by cuModuleLoadDataEx; unloaded once.
            unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// The 128 bytes of the driver's tiled tensor map (`cuTensorMapEncodeTiled`) of the 2-d array
/// `m` describes (its fields checked by `TensorMap::tiled`): elements of `elem` (by size where
/// the driver has no such type: the copy moves bytes), zeros outside the array, L2 promotion of
/// 256 bytes.
pub(crate) fn encode_tiled_2d(dev: &CudaDevice, elem: crate::ir::Scalar, m: &crate::host_calls::HostTensorMap) -> Result<Vec<u8>> {
    use crate::ir::Scalar as S;
    use sys::CUtensorMapDataType as D;
    let ty = match elem {
        S::F16 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        S::Bf16 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        S::F32 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        S::F64 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        S::I32 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
        S::I64 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
        s => match s.size() {
            1 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            4 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            _ => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        },
    };
    let swizzle = match m.swizzle {
        32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        _ => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
    };
    dev.bind()?;
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    let dims = [m.width, m.height];
    let strides = [m.pitch];
    let boxes = [m.box_w, m.box_h];
    let unit = [1u32, 1];
    // SAFETY: the arrays are live locals of the lengths rank 2 needs (strides: rank - 1);
    // `map` is a 64-byte aligned `CUtensorMap` the call writes; the address is only encoded.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            ty,
            2,
            m.base as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            unit.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    check("cuTensorMapEncodeTiled", r)?;
    Ok(map.opaque.iter().flat_map(|w| w.to_le_bytes()).collect())
}
