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
//! The host device has one stream, as a GPU's legacy default stream orders work: launches,
//! copies to and from its memory, and `Device::synchronize` run one at a time, in the order
//! their threads take the stream ([`stream`]). See [`HostBuffer`] for why this is how the host
//! backend is free of data races.
//!
//! Not modelled: timing, memory ordering weaker than the CPU's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::fault::FaultRecord;
use crate::abi::HostEntry;
use crate::abi::host_ctx_layout as L;
use crate::error::{Error, Result};

/// The host device's stream: held for the whole of every launch, copy and synchronisation on
/// the host device, so they run one at a time, in order.
static STREAM: Mutex<()> = Mutex::new(());

/// Takes the host device's stream until the guard is dropped. Nothing run under it takes it
/// again (kernels cannot call back into kache), so it cannot deadlock.
pub(crate) fn stream() -> MutexGuard<'static, ()> {
    // A panic while it was held cannot leave device memory half-copied in a way that matters
    // more than the panic itself; the stream stays usable.
    STREAM.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worker threads a launch runs its blocks on (at most): one per core.
pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// A zeroed, 64-byte aligned host allocation standing for device memory of the host backend.
///
/// It is `Sync` and written through `&self` (clones of a `DeviceArray` share it, as handles to
/// GPU memory do), yet no data race on it is reachable from safe code, because every access
/// goes through the host device's [`stream`]: [`read`](HostBuffer::read),
/// [`write`](HostBuffer::write) and [`modify`](HostBuffer::modify) take it, and so does every
/// launch on the host device for the whole time its kernel runs. Two accesses therefore never
/// overlap in time, and each one happens-before the next (a mutex hand-over).
///
/// Why one stream for the device rather than a lock per buffer: a launch reaches an open set of
/// buffers (arguments, captured arrays, arrays captured by the device functions it calls) and
/// foreign memory that no `HostBuffer` owns, and a lock per buffer would have to find and order
/// them all, telling readers from writers; the stream covers all of it with one lock. It costs
/// no throughput worth having, since one host launch already spreads over every core, and it
/// is what a GPU does: kache's CUDA work goes to the legacy default stream, where a copy waits
/// for the launches before it. A long launch delays another thread's download, as it would on
/// the GPU.
pub(crate) struct HostBuffer {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer owns its allocation (freed once, in `Drop`); moving the owner to another
// thread moves nothing the allocation depends on.
unsafe impl Send for HostBuffer {}
// SAFETY: shared access from several threads is serialised by the host device's stream, which
// every read, write and launch holds while it touches the memory (see the type's docs).
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

    /// Copies `src` to byte offset `at`, on the stream.
    pub(crate) fn write(&self, at: usize, src: &[u8]) -> Result<()> {
        self.modify(at, src.len(), |bytes| bytes.copy_from_slice(src))
    }

    /// Copies bytes from offset `at` into `dst`, on the stream.
    pub(crate) fn read(&self, at: usize, dst: &mut [u8]) -> Result<()> {
        if at.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return Err(Error::BadArray(format!("read of {} bytes at {at} past the end of a {}-byte buffer", dst.len(), self.len)));
        }
        if dst.is_empty() {
            return Ok(());
        }
        let _stream = stream();
        // SAFETY: `at..at + dst.len()` is inside the allocation (checked above), which lives as
        // long as `self`; the stream is held, so nothing writes it meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.add(at), dst.len()) };
        dst.copy_from_slice(bytes);
        Ok(())
    }

    /// Runs `f` on bytes `at..at + len` with the stream held: a read-modify-write that no
    /// launch or copy of another thread can come between.
    pub(crate) fn modify(&self, at: usize, len: usize, f: impl FnOnce(&mut [u8])) -> Result<()> {
        if at.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::BadArray(format!("write of {len} bytes at {at} past the end of a {}-byte buffer", self.len)));
        }
        if len == 0 {
            return Ok(());
        }
        let _stream = stream();
        // SAFETY: the range is inside the allocation (checked above), which lives as long as
        // `self`; the stream is held, so no other reference to these bytes is in use until the
        // slice is dropped at the end of this function.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(at), len) };
        f(bytes);
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
    fault: *mut FaultRecord,
    exiting: u32,
    _pad: u32,
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
    assert!(std::mem::offset_of!(HostCtx, fault) as u64 == L::FAULT);
    assert!(std::mem::offset_of!(HostCtx, exiting) as u64 == L::EXITING);
    assert!(std::mem::size_of::<HostCtx>() as u64 == L::SIZE);
};

extern "C" fn no_barrier(_: *mut HostCtx) {}

/// Outside the cooperative executor a thread is alone: a collective answers with its own value.
extern "C" fn no_warp(_: *mut HostCtx, _op: u32, _mask: u32, value: u64, _b: u32, _c: u32) -> u64 {
    value
}

impl HostCtx {
    /// A thread's context; `barrier_data` is what the cooperative executor's `barrier_fn` and
    /// `warp_fn` find the thread's fiber by, `fault` the launch's fault record.
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
        fault: *mut FaultRecord,
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
            fault,
            exiting: 0,
            _pad: 0,
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
    /// Bytes of stack one kernel thread may use.
    pub stack: usize,
}

/// The most stack a kernel thread is given: a launch of code that may use more is refused.
pub(crate) const MAX_THREAD_STACK: usize = 256 << 20;

/// The stack of a worker thread that runs a block's threads one after the other: the kernel's
/// frames and room for the worker's own, at least what Rust gives a thread.
fn worker_stack(frames: usize) -> usize {
    frames.saturating_add(256 << 10).max(2 << 20)
}

/// The stack of a coroutine that runs one thread of a cooperative block: the kernel's frames and
/// room for the switch to the scheduler, at least 256 KiB (virtual memory: pages are touched only
/// as deep as the kernel goes).
pub(crate) fn fiber_stack(frames: usize) -> usize {
    frames.saturating_add(64 << 10).max(256 << 10)
}

struct SendPtr(*const *const u8);
// SAFETY: the parameter block is read-only during the launch and outlives it.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

/// The launch's fault record, shared by the workers: kernels write it only through atomics on
/// its flag (the one thread that wins the flag then writes the rest), and it is read only after
/// every worker has been joined.
struct SendFault(*mut FaultRecord);
// SAFETY: see the type's docs; the record outlives the scope of the workers.
unsafe impl Send for SendFault {}
// SAFETY: as above.
unsafe impl Sync for SendFault {}

/// Runs the grid to completion, holding the host device's stream throughout, and returns the
/// launch's fault record (all zero unless a bounds check failed). `params` holds one pointer
/// per flattened kernel parameter.
///
/// # Safety
///
/// `entry` must be a host kernel entry generated by kache whose code stays loaded until this
/// returns, and `params` must hold one pointer per flattened parameter of that kernel (see
/// [`ParamAbi`](crate::abi::ParamAbi)), each to a live value of the parameter's type.
pub(crate) unsafe fn run(entry: HostEntry, launch: HostLaunch, params: &[*const u8]) -> Result<FaultRecord> {
    let n_blocks = launch.grid.iter().map(|d| *d as usize).product::<usize>();
    let n_threads = launch.block.iter().map(|d| *d as usize).product::<usize>();
    let mut record = FaultRecord::default();
    if n_blocks == 0 || n_threads == 0 {
        return Ok(record);
    }
    let _stream = stream();
    let params = SendPtr(params.as_ptr());
    let params = &params;
    let fault = SendFault(&mut record);
    let fault = &fault;
    if !launch.cooperative {
        let workers = workers().min(n_blocks);
        let next = AtomicUsize::new(0);
        let dyn_len = launch.dyn_shared;
        let stack = worker_stack(launch.stack);
        // The workers that started take every block between them; none is an error.
        let (mut started, mut refused) = (0, None);
        std::thread::scope(|s| {
            for _ in 0..workers {
                let worker = std::thread::Builder::new().stack_size(stack).spawn_scoped(s, || {
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
                        fault.0,
                    );
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= n_blocks {
                            break;
                        }
                        ctx.block_idx = unflatten(b, launch.grid);
                        for t in 0..n_threads {
                            ctx.thread_idx = unflatten(t, launch.block);
                            ctx.exiting = 0;
                            // SAFETY: `entry` was JIT-compiled for exactly this parameter list.
                            unsafe { entry(&mut ctx as *mut HostCtx as *mut u8, params.0) };
                        }
                    }
                });
                match worker {
                    Ok(_) => started += 1,
                    Err(e) => {
                        refused = Some(e);
                        break;
                    }
                }
            }
        });
        if started == 0 {
            let why = refused.map(|e| e.to_string()).unwrap_or_default();
            return Err(Error::Device(format!("could not start a thread with {stack} bytes of stack for the launch: {why}")));
        }
        return Ok(record);
    }
    // Cooperative: the threads of a block are coroutines on one worker (`host_sync`).
    let workers = workers().min(n_blocks);
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                if let Err(e) =
                    super::host_sync::cooperative_worker(entry, launch, n_blocks, n_threads, &next, params.0 as usize, fault.0 as usize)
                {
                    let mut f = failed.lock().unwrap_or_else(|e| e.into_inner());
                    if f.is_none() {
                        *f = Some(e);
                    }
                    next.store(n_blocks, Ordering::Relaxed);
                }
            });
        }
    });
    // A thread that exited on a failed bounds check can leave its warp waiting for it: the
    // fault, the cause, is what the launch reports then.
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner())
        && record.flag == 0
    {
        return Err(Error::Device(e));
    }
    Ok(record)
}

/// The block of linear index `i` in a grid (or the thread of index `i` in a block).
pub(crate) fn unflatten(i: usize, dims: [u32; 3]) -> [u32; 3] {
    let x = dims[0] as usize;
    let y = dims[1] as usize;
    [(i % x) as u32, ((i / x) % y) as u32, (i / (x * y)) as u32]
}
