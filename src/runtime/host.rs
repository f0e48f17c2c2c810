//! The host backend: kernels JIT-compiled for this CPU, the grid run by worker threads.
//!
//! Blocks run in parallel on a pool of workers (one per core). Kernels that use neither
//! `sync_threads`, shared memory nor warp-level collectives run a block's threads one after the
//! other. Kernels that do run each thread of the block as a coroutine (a stackful fiber) on the
//! worker, scheduled by `host_sync`: `sync_threads` and the warp collectives suspend the calling
//! thread until every thread they wait for has arrived, so a barrier costs a few context
//! switches of nanoseconds, not OS scheduling. Each block has its own shared memory. A thread
//! that returns early leaves the barrier, as on Volta and later GPUs, so
//! `if i >= n { return; }` before a `sync_threads` does not deadlock.
//!
//! Not modelled: timing, memory ordering weaker than the CPU's, and out-of-bounds faults (an
//! out-of-bounds index reads or writes host memory, as it would corrupt device memory on a
//! GPU).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::abi::HostEntry;
use crate::abi::host_ctx_layout as L;
use crate::error::{Error, Result};

/// A zeroed, 64-byte aligned host allocation standing for device memory of the host backend.
pub(crate) struct HostBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory; kache synchronises access the way a GPU would (launches
// are synchronous on the host backend, copies happen between launches).
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    pub(crate) fn zeroed(len: usize) -> Result<HostBuffer> {
        if len == 0 {
            return Ok(HostBuffer { ptr: std::ptr::NonNull::<u64>::dangling().as_ptr() as *mut u8, len: 0 });
        }
        let layout = std::alloc::Layout::from_size_align(len, 64).map_err(|e| Error::BadArray(e.to_string()))?;
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::Device(format!("out of host memory allocating {len} bytes")));
        }
        Ok(HostBuffer { ptr, len })
    }

    pub(crate) fn ptr(&self) -> u64 {
        self.ptr as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies `src` to byte offset `at`.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return Err(Error::BadArray(format!("write of {} bytes at {at} past the end of a {}-byte buffer", src.len(), self.len)));
        }
        // SAFETY: bounds checked above; the regions cannot overlap (src is a Rust slice).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) };
        Ok(())
    }

    /// Copies bytes from offset `at` into `dst`.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result<()> {
        if at.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return Err(Error::BadArray(format!("read of {} bytes at {at} past the end of a {}-byte buffer", dst.len(), self.len)));
        }
        // SAFETY: bounds checked above.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(at), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.len > 0
            && let Ok(layout) = std::alloc::Layout::from_size_align(self.len, 64)
        {
            // SAFETY: allocated in `zeroed` with this layout.
            unsafe { std::alloc::dealloc(self.ptr, layout) };
        }
    }
}

/// The per-thread context a host kernel reads its indices, shared memory and barrier from.
/// Field offsets must equal `abi::host_ctx_layout` (checked at compile time below).
#[repr(C)]
pub(crate) struct HostCtx {
    thread_idx: [u32; 3],
    block_idx: [u32; 3],
    block_dim: [u32; 3],
    grid_dim: [u32; 3],
    dyn_shared: *mut u8,
    dyn_shared_len: u64,
    shared: *mut u8,
    barrier_fn: extern "C" fn(*mut HostCtx),
    barrier_data: *const std::ffi::c_void,
    warp_fn: extern "C" fn(*mut HostCtx, u32, u32, u64, u32, u32) -> u64,
}

const _: () = {
    assert!(std::mem::offset_of!(HostCtx, thread_idx) as u64 == L::THREAD_IDX);
    assert!(std::mem::offset_of!(HostCtx, block_idx) as u64 == L::BLOCK_IDX);
    assert!(std::mem::offset_of!(HostCtx, block_dim) as u64 == L::BLOCK_DIM);
    assert!(std::mem::offset_of!(HostCtx, grid_dim) as u64 == L::GRID_DIM);
    assert!(std::mem::offset_of!(HostCtx, dyn_shared) as u64 == L::DYN_SHARED);
    assert!(std::mem::offset_of!(HostCtx, dyn_shared_len) as u64 == L::DYN_SHARED_LEN);
    assert!(std::mem::offset_of!(HostCtx, shared) as u64 == L::SHARED);
    assert!(std::mem::offset_of!(HostCtx, barrier_fn) as u64 == L::BARRIER_FN);
    assert!(std::mem::offset_of!(HostCtx, barrier_data) as u64 == L::BARRIER_DATA);
    assert!(std::mem::offset_of!(HostCtx, warp_fn) as u64 == L::WARP_FN);
    assert!(std::mem::size_of::<HostCtx>() as u64 == L::SIZE);
};

extern "C" fn no_barrier(_: *mut HostCtx) {}

/// Outside the cooperative executor a thread is alone: a collective answers with its own value.
extern "C" fn no_warp(_: *mut HostCtx, _op: u32, _mask: u32, value: u64, _b: u32, _c: u32) -> u64 {
    value
}

impl HostCtx {
    /// A thread's context; `barrier_data` is what the cooperative executor's `barrier_fn` and
    /// `warp_fn` find the thread's fiber by.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        thread_idx: [u32; 3],
        block_idx: [u32; 3],
        launch: &HostLaunch,
        dyn_shared: *mut u8,
        shared: *mut u8,
        barrier_fn: extern "C" fn(*mut HostCtx),
        warp_fn: extern "C" fn(*mut HostCtx, u32, u32, u64, u32, u32) -> u64,
        barrier_data: *const std::ffi::c_void,
    ) -> HostCtx {
        HostCtx {
            thread_idx,
            block_idx,
            block_dim: launch.block,
            grid_dim: launch.grid,
            dyn_shared,
            dyn_shared_len: launch.dyn_shared as u64,
            shared,
            barrier_fn,
            barrier_data,
            warp_fn,
        }
    }

    /// What `barrier_data` points to.
    pub(crate) fn barrier_data(&self) -> *const std::ffi::c_void {
        self.barrier_data
    }
}

/// Launch geometry for the host executor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostLaunch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dyn_shared: usize,
    pub static_shared: usize,
    pub cooperative: bool,
}

struct SendPtr(*const *const u8);
// SAFETY: the parameter block is read-only during the launch and outlives it.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

/// Runs the grid to completion. `params` holds one pointer per flattened kernel parameter.
///
/// # Safety
///
/// `entry` must be a host kernel entry generated by kache whose code stays loaded until this
/// returns, and `params` must hold one pointer per flattened parameter of that kernel (see
/// [`ParamAbi`](crate::abi::ParamAbi)), each to a live value of the parameter's type.
pub(crate) unsafe fn run(entry: HostEntry, launch: HostLaunch, params: &[*const u8]) -> Result<()> {
    let n_blocks = launch.grid.iter().map(|d| *d as usize).product::<usize>();
    let n_threads = launch.block.iter().map(|d| *d as usize).product::<usize>();
    if n_blocks == 0 || n_threads == 0 {
        return Ok(());
    }
    let params = SendPtr(params.as_ptr());
    let params = &params;
    if !launch.cooperative {
        let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(n_blocks);
        let next = AtomicUsize::new(0);
        let dyn_len = launch.dyn_shared;
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    let dyn_buf = vec![0u8; dyn_len];
                    let mut ctx = HostCtx::new(
                        [0; 3],
                        [0; 3],
                        &launch,
                        dyn_buf.as_ptr() as *mut u8,
                        std::ptr::null_mut(),
                        no_barrier,
                        no_warp,
                        std::ptr::null(),
                    );
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= n_blocks {
                            break;
                        }
                        ctx.block_idx = unflatten(b, launch.grid);
                        for t in 0..n_threads {
                            ctx.thread_idx = unflatten(t, launch.block);
                            // SAFETY: `entry` was JIT-compiled for exactly this parameter list.
                            unsafe { entry(&mut ctx as *mut HostCtx as *mut u8, params.0) };
                        }
                    }
                });
            }
        });
        return Ok(());
    }
    // Cooperative: the threads of a block are coroutines on one worker (`host_sync`).
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(n_blocks);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                if let Err(e) = super::host_sync::cooperative_worker(entry, launch, n_blocks, n_threads, &next, params.0 as usize) {
                    let mut f = failed.lock().unwrap_or_else(|e| e.into_inner());
                    if f.is_none() {
                        *f = Some(e);
                    }
                    next.store(n_blocks, Ordering::Relaxed);
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(Error::Device(e));
    }
    Ok(())
}

/// The block of linear index `i` in a grid (or the thread of index `i` in a block).
pub(crate) fn unflatten(i: usize, dims: [u32; 3]) -> [u32; 3] {
    let x = dims[0] as usize;
    let y = dims[1] as usize;
    [(i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32]
}
