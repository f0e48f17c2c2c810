//! The host backend: kernels JIT-compiled for this CPU, the grid run by worker threads.
//!
//! Blocks run in parallel on a pool of workers (one per core). Kernels that use neither
//! `sync_threads` nor shared memory run a block's threads one after the other. Kernels that do
//! run each thread of the block as a coroutine (a stackful fiber) on the worker: `sync_threads`
//! suspends the calling thread, and when every live thread of the block has reached it they all
//! resume, so a barrier costs a few context switches of nanoseconds, not OS scheduling. Each
//! block has its own shared memory. A thread that returns early leaves the barrier, as on Volta
//! and later GPUs, so `if i >= n { return; }` before a `sync_threads` does not deadlock.
//!
//! Not modelled: timing, warps (no lock-step execution, no warp-synchronous tricks), memory
//! ordering weaker than the CPU's, and out-of-bounds faults (an out-of-bounds index reads or
//! writes host memory, as it would corrupt device memory on a GPU).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

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
    assert!(std::mem::size_of::<HostCtx>() as u64 == L::SIZE);
};

extern "C" fn barrier_yield(ctx: *mut HostCtx) {
    // SAFETY: in cooperative mode `barrier_data` points to the yielder of the coroutine that
    // runs this thread, and this function runs on that coroutine's stack.
    unsafe {
        let y = (*ctx).barrier_data as *const Yielder<(), ()>;
        if let Some(y) = y.as_ref() {
            y.suspend(());
        }
    }
}

extern "C" fn no_barrier(_: *mut HostCtx) {}

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

fn unflatten(i: usize, dims: [u32; 3]) -> [u32; 3] {
    let x = dims[0] as usize;
    let y = dims[1] as usize;
    [(i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32]
}

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
                    let mut ctx = HostCtx {
                        thread_idx: [0; 3],
                        block_idx: [0; 3],
                        block_dim: launch.block,
                        grid_dim: launch.grid,
                        dyn_shared: dyn_buf.as_ptr() as *mut u8,
                        dyn_shared_len: dyn_len as u64,
                        shared: std::ptr::null_mut(),
                        barrier_fn: no_barrier,
                        barrier_data: std::ptr::null(),
                    };
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
    // Cooperative: the threads of a block are coroutines on one worker, switched at barriers.
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(n_blocks);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                if let Err(e) = cooperative_worker(entry, launch, n_blocks, n_threads, &next, params.0 as usize) {
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
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

/// Stack of one simulated GPU thread (virtual memory; touched only as deep as the kernel goes).
const FIBER_STACK: usize = 256 << 10;

fn cooperative_worker(
    entry: HostEntry,
    launch: HostLaunch,
    n_blocks: usize,
    n_threads: usize,
    next: &AtomicUsize,
    params: usize,
) -> std::result::Result<(), String> {
    let mut stacks = Vec::with_capacity(n_threads);
    for _ in 0..n_threads {
        stacks.push(DefaultStack::new(FIBER_STACK).map_err(|e| format!("could not allocate a stack for a simulated thread: {e}"))?);
    }
    let mut shared = vec![0u8; launch.static_shared.max(1)];
    let mut dyn_shared = vec![0u8; launch.dyn_shared.max(1)];
    loop {
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= n_blocks {
            return Ok(());
        }
        shared.fill(0);
        dyn_shared.fill(0);
        let block_idx = unflatten(b, launch.grid);
        let shared_ptr = shared.as_mut_ptr() as usize;
        let dyn_ptr = dyn_shared.as_mut_ptr() as usize;
        let mut fibers: Vec<Option<Coroutine<(), (), (), DefaultStack>>> = Vec::with_capacity(n_threads);
        for t in 0..n_threads {
            let Some(stack) = stacks.pop() else { return Err("stack pool exhausted".into()) };
            let thread_idx = unflatten(t, launch.block);
            fibers.push(Some(Coroutine::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
                let mut ctx = HostCtx {
                    thread_idx,
                    block_idx,
                    block_dim: launch.block,
                    grid_dim: launch.grid,
                    dyn_shared: dyn_ptr as *mut u8,
                    dyn_shared_len: launch.dyn_shared as u64,
                    shared: shared_ptr as *mut u8,
                    barrier_fn: barrier_yield,
                    barrier_data: y as *const Yielder<(), ()> as *const std::ffi::c_void,
                };
                // SAFETY: `entry` was JIT-compiled for this parameter list; `params`, the shared
                // buffers and the yielder outlive the fiber (it completes before the block ends).
                unsafe { entry(&mut ctx as *mut HostCtx as *mut u8, params as *const *const u8) };
            })));
        }
        // Each round runs every live thread to its next barrier or to its end.
        loop {
            let mut live = 0;
            for slot in fibers.iter_mut() {
                let Some(f) = slot else { continue };
                match f.resume(()) {
                    CoroutineResult::Yield(()) => live += 1,
                    CoroutineResult::Return(()) => {
                        if let Some(done) = slot.take() {
                            stacks.push(done.into_stack());
                        }
                    }
                }
            }
            if live == 0 {
                break;
            }
        }
    }
}
