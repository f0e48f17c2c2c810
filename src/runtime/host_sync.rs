//! The host backend's cooperative executor: a block's threads as fibers on one worker, and the
//! two rendezvous that suspend them, `sync_threads` (the block) and the warp collectives
//! (`shfl_*_sync`, `ballot_sync`, `all_sync`, `any_sync`, `activemask`, `sync_warp`, and the
//! tensor cores' `mma`, `ldmatrix` and `wgmma`, answered by `host_tensor`), and the threads'
//! mbarrier operations, a wait answered once its phase has completed.
//!
//! Each fiber runs until it reaches a rendezvous and suspends with its request, or returns.
//! When every fiber has, the scheduler answers what can be answered: a warp collective once
//! every live lane its mask names waits in the same collective with the same mask (lanes that
//! have exited, and lanes a partial last warp does not have, take no part), `activemask` for
//! the lanes waiting at the same call site, the barrier once every live thread of the block is
//! there. Values are exchanged as the GPU does (`shfl.sync` semantics of PTX, segments and
//! clamps included), so a warp's lanes run in lockstep from one collective to the next.
//!
//! What CUDA leaves undefined is defined here: a shuffle from a lane that takes no part
//! returns the caller's own value. What CUDA calls a hang or undefined behaviour is an error
//! of the launch: a lane whose mask leaves itself out, and a deadlock (threads waiting for
//! each other in different places). After such an error the block runs to its end with every
//! rendezvous answered at once, and the launch reports the first error.

use std::sync::atomic::{AtomicUsize, Ordering};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::host::{HostCtx, HostLaunch, unflatten};
use crate::abi::{HostEntry, warp_op};

const WARP: usize = 32;

/// What a suspended thread waits in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Request {
    /// `sync_threads()`
    Barrier,
    /// A warp collective.
    Warp(WarpRequest),
}

/// A warp collective and this lane's operands (see `abi::warp_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WarpRequest {
    op: u32,
    mask: u32,
    value: u64,
    b: u32,
    c: u32,
}

/// A kibibyte of shared memory, 1024-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(1024))]
struct Kib([u8; 1024]);

type Fiber = Coroutine<u64, Request, (), DefaultStack>;
type FiberYielder = Yielder<u64, Request>;

extern "C" fn barrier_yield(ctx: *mut HostCtx) {
    // SAFETY: in cooperative mode `barrier_data` points to the yielder of the coroutine that
    // runs this thread, and this function runs on that coroutine's stack.
    unsafe {
        let y = (*ctx).barrier_data() as *const FiberYielder;
        if let Some(y) = y.as_ref() {
            y.suspend(Request::Barrier);
        }
    }
}

extern "C" fn warp_yield(ctx: *mut HostCtx, op: u32, mask: u32, value: u64, b: u32, c: u32) -> u64 {
    // SAFETY: as in `barrier_yield`.
    unsafe {
        let y = (*ctx).barrier_data() as *const FiberYielder;
        match y.as_ref() {
            Some(y) => y.suspend(Request::Warp(WarpRequest { op, mask, value, b, c })),
            None => value,
        }
    }
}

/// Where each thread of the block is.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Runnable; resumed with this value (a collective's answer).
    Ready(u64),
    Waiting(Request),
    Done,
}

pub(crate) fn cooperative_worker(
    entry: HostEntry,
    launch: HostLaunch,
    n_blocks: usize,
    n_threads: usize,
    next: &AtomicUsize,
    params: usize,
    fault: usize,
) -> Result<(), String> {
    let mut stacks = Vec::with_capacity(n_threads);
    for _ in 0..n_threads {
        stacks.push(
            DefaultStack::new(super::host::fiber_stack(launch.stack))
                .map_err(|e| format!("could not allocate a stack for a simulated thread: {e}"))?,
        );
    }
    // 1024-byte blocks, so that the buffers are aligned as the GPU's shared memory is (an
    // `ldmatrix` row, a 16-byte `cp_async`, a `wgmma` tile's swizzle atoms: `abi::shared_align`).
    let mut shared = vec![Kib([0; 1024]); launch.static_shared.div_ceil(1024).max(1)];
    let mut dyn_shared = vec![Kib([0; 1024]); launch.dyn_shared.div_ceil(1024).max(1)];
    loop {
        let b = next.fetch_add(1, Ordering::Relaxed);
        if b >= n_blocks {
            return Ok(());
        }
        shared.fill(Kib([0; 1024]));
        dyn_shared.fill(Kib([0; 1024]));
        let block_idx = unflatten(b, launch.grid);
        let shared_ptr = shared.as_mut_ptr() as usize;
        let dyn_ptr = dyn_shared.as_mut_ptr() as usize;
        let mut fibers: Vec<Option<Fiber>> = Vec::with_capacity(n_threads);
        for t in 0..n_threads {
            let Some(stack) = stacks.pop() else { return Err("stack pool exhausted".into()) };
            let thread_idx = unflatten(t, launch.block);
            fibers.push(Some(Coroutine::with_stack(stack, move |y: &FiberYielder, _: u64| {
                let mut ctx = HostCtx::new(
                    thread_idx,
                    block_idx,
                    &launch,
                    dyn_ptr as *mut u8,
                    shared_ptr as *mut u8,
                    barrier_yield,
                    warp_yield,
                    y as *const FiberYielder as *const std::ffi::c_void,
                    fault as *mut super::fault::FaultRecord,
                );
                // SAFETY: `entry` was JIT-compiled for this parameter list; `params`, the shared
                // buffers and the yielder outlive the fiber (it completes before the block ends).
                unsafe { entry(&mut ctx as *mut HostCtx as *mut u8, params as *const *const u8) };
            })));
        }
        let error = run_block(&mut fibers, &mut stacks, block_idx);
        if let Some(e) = error {
            return Err(e);
        }
    }
}

/// Runs one block's fibers to their end; the first synchronisation error, if any.
fn run_block(fibers: &mut [Option<Fiber>], stacks: &mut Vec<DefaultStack>, block_idx: [u32; 3]) -> Option<String> {
    let mut states = vec![State::Ready(0); fibers.len()];
    let mut error: Option<String> = None;
    loop {
        for (t, slot) in fibers.iter_mut().enumerate() {
            let State::Ready(input) = states[t] else { continue };
            let Some(f) = slot else { continue };
            states[t] = match f.resume(input) {
                CoroutineResult::Yield(r) => State::Waiting(r),
                CoroutineResult::Return(()) => {
                    if let Some(done) = slot.take() {
                        stacks.push(done.into_stack());
                    }
                    State::Done
                }
            };
        }
        if states.iter().all(|s| matches!(s, State::Done)) {
            return error;
        }
        if error.is_some() {
            answer_alone(&mut states);
            continue;
        }
        match schedule(&mut states) {
            Ok(true) => {}
            Ok(false) => {
                error = Some(format!("block {block_idx:?}: {}", deadlock(&states)));
                answer_alone(&mut states);
            }
            Err(e) => {
                error = Some(format!("block {block_idx:?}: {e}"));
                answer_alone(&mut states);
            }
        }
    }
}

/// Answers every waiting thread at once, as if it were alone (after an error).
fn answer_alone(states: &mut [State]) {
    for (t, s) in states.iter_mut().enumerate() {
        if let State::Waiting(r) = *s {
            let lane = (t % WARP) as u32;
            *s = State::Ready(match r {
                Request::Barrier => 0,
                Request::Warp(w) => match w.op {
                    warp_op::BALLOT => ((w.value != 0) as u64) << lane,
                    warp_op::ACTIVEMASK => 1 << lane,
                    warp_op::SYNC_WARP | warp_op::MMA | warp_op::LDMATRIX | warp_op::WGMMA => 0,
                    // A wait ends (its loop too); nothing else is done after an error.
                    warp_op::MBARRIER => 1,
                    _ => w.value,
                },
            });
        }
    }
}

/// Answers what can be answered: warp collectives, `activemask`, then the block barrier.
/// `Ok(false)` when nothing could be (a deadlock); `Err` for a lane that misuses a mask.
fn schedule(states: &mut [State]) -> Result<bool, String> {
    let n = states.len();
    let mut progress = answer_mbarriers(states);
    for base in (0..n).step_by(WARP) {
        let lanes = (n - base).min(WARP);
        progress |= answer_warp(&mut states[base..base + lanes], base / WARP)?;
    }
    if progress {
        return Ok(true);
    }
    let live = states.iter().filter(|s| !matches!(s, State::Done)).count();
    let at_barrier = states.iter().filter(|s| matches!(s, State::Waiting(Request::Barrier))).count();
    if live > 0 && at_barrier == live {
        for s in states.iter_mut() {
            if let State::Waiting(Request::Barrier) = s {
                *s = State::Ready(0);
            }
        }
        return Ok(true);
    }
    Ok(false)
}

/// The threads' mbarrier operations, made in the threads' order; then the waits whose phase
/// has completed are answered (the others keep waiting: a wait that never ends is a deadlock).
fn answer_mbarriers(states: &mut [State]) -> bool {
    let mut progress = false;
    for s in states.iter_mut() {
        if let Some(w) = warp_request(s).filter(|w| w.op == warp_op::MBARRIER && w.b != warp_op::MBAR_TRY_WAIT) {
            // SAFETY: generated code passes the address of a barrier it checked (or, unchecked,
            // was promised) is an 8-byte aligned `u64` of the block's shared memory, which lives
            // while the block runs; the block's threads run one at a time.
            unsafe { super::host_tensor::mbarrier(w.value, w.b, w.c) };
            *s = State::Ready(0);
            progress = true;
        }
    }
    for s in states.iter_mut() {
        if let Some(w) = warp_request(s).filter(|w| w.op == warp_op::MBARRIER)
            // SAFETY: as above.
            && unsafe { super::host_tensor::mbarrier_phase_done(w.value, w.c) }
        {
            *s = State::Ready(1);
            progress = true;
        }
    }
    progress
}

fn warp_request(s: &State) -> Option<WarpRequest> {
    match s {
        State::Waiting(Request::Warp(w)) => Some(*w),
        _ => None,
    }
}

/// The collectives of one warp (`lanes` holds its threads, fewer than 32 for a partial warp).
fn answer_warp(lanes: &mut [State], warp: usize) -> Result<bool, String> {
    let mut progress = false;
    // activemask: the lanes at the same call site are the ones active together.
    let mut sites: Vec<(u32, u32)> = Vec::new();
    for (l, s) in lanes.iter().enumerate() {
        if let Some(w) = warp_request(s).filter(|w| w.op == warp_op::ACTIVEMASK) {
            match sites.iter_mut().find(|(site, _)| *site == w.b) {
                Some((_, m)) => *m |= 1 << l,
                None => sites.push((w.b, 1 << l)),
            }
        }
    }
    for (site, mask) in sites {
        for (l, s) in lanes.iter_mut().enumerate() {
            if mask & (1 << l) != 0 && warp_request(s).is_some_and(|w| w.op == warp_op::ACTIVEMASK && w.b == site) {
                *s = State::Ready(mask as u64);
                progress = true;
            }
        }
    }
    let live: u32 = lanes.iter().enumerate().filter(|(_, s)| !matches!(s, State::Done)).fold(0, |m, (l, _)| m | 1 << l);
    for l in 0..lanes.len() {
        let Some(r) = warp_request(&lanes[l]) else { continue };
        if r.op == warp_op::MBARRIER {
            // A thread's own operation, not the warp's (`answer_mbarriers`).
            continue;
        }
        if r.mask & (1 << l) == 0 {
            return Err(format!(
                "warp {warp}, lane {l} calls {} with mask {:#010x}, which leaves the lane itself out",
                op_name(r.op),
                r.mask
            ));
        }
        let part = r.mask & live;
        let together = (0..lanes.len())
            .filter(|p| part & (1 << p) != 0)
            .all(|p| warp_request(&lanes[p]).is_some_and(|q| q.op == r.op && q.mask == r.mask));
        if !together {
            continue;
        }
        let reqs: Vec<Option<WarpRequest>> = lanes.iter().map(warp_request).collect();
        if matches!(r.op, warp_op::MMA | warp_op::LDMATRIX | warp_op::WGMMA) {
            // Warp-wide by definition: every lane of the warp takes part, with the same form.
            if let Some(l) = (0..WARP).find(|l| part & (1 << l) == 0) {
                let why = if l >= lanes.len() { "the block's last warp does not have it" } else { "it has returned" };
                return Err(format!("warp {warp} runs {} without lane {l}: {why}; it needs all 32 lanes", op_name(r.op)));
            }
            if let Some(l) = (0..WARP).find(|l| reqs[*l].is_some_and(|q| q.b != r.b)) {
                return Err(format!("warp {warp}: lanes 0 and {l} run different forms of {}", op_name(r.op)));
            }
            let bufs: [u64; WARP] = std::array::from_fn(|l| reqs[l].map_or(0, |q| q.value));
            // SAFETY: each lane passed the address of its own buffer, laid out as `abi::warp_op`
            // says, which stays live while the lane waits here; its addresses were checked (or,
            // unchecked, promised) in bounds by the generated code.
            unsafe { super::host_tensor::collective(r.op, r.b, &bufs) }.map_err(|e| format!("warp {warp}: {e}"))?;
        }
        for p in (0..lanes.len()).filter(|p| part & (1 << p) != 0) {
            let mine = reqs[p].unwrap_or(r);
            lanes[p] = State::Ready(answer(r.op, p, &mine, part, &reqs));
        }
        progress = true;
    }
    Ok(progress)
}

/// Lane `p`'s answer to collective `op` among the lanes of `part`.
fn answer(op: u32, p: usize, mine: &WarpRequest, part: u32, reqs: &[Option<WarpRequest>]) -> u64 {
    let pred = |l: usize| reqs[l].is_some_and(|q| q.value != 0);
    let members = || (0..reqs.len()).filter(move |l| part & (1 << l) != 0);
    match op {
        warp_op::BALLOT => members().filter(|l| pred(*l)).fold(0u64, |m, l| m | 1 << l),
        warp_op::ALL => members().all(pred) as u64,
        warp_op::ANY => members().any(pred) as u64,
        warp_op::SYNC_WARP | warp_op::MMA | warp_op::LDMATRIX | warp_op::WGMMA => 0,
        _ => {
            let src = shfl_source(op, p as u32, mine.b, mine.c) as usize;
            if src < reqs.len() && part & (1 << src) != 0 { reqs[src].map_or(mine.value, |q| q.value) } else { mine.value }
        }
    }
}

/// The lane `lane` reads in a `shfl.sync` of mode `op` with operands `b` and `c`, as PTX
/// defines it: `c` packs the segment mask (bits 8..13) and the clamp (bits 0..5); a source
/// outside the segment's bounds is the lane itself.
fn shfl_source(op: u32, lane: u32, b: u32, c: u32) -> u32 {
    let lane = lane as i32;
    let bval = (b & 31) as i32;
    let cval = (c & 31) as i32;
    let segmask = ((c >> 8) & 31) as i32;
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, in_range) = match op {
        warp_op::SHFL_UP => (lane - bval, lane - bval >= max_lane),
        warp_op::SHFL_DOWN => (lane + bval, lane + bval <= max_lane),
        warp_op::SHFL_XOR => (lane ^ bval, (lane ^ bval) <= max_lane),
        _ => (min_lane | (bval & !segmask), (min_lane | (bval & !segmask)) <= max_lane),
    };
    if in_range { j as u32 } else { lane as u32 }
}

fn op_name(op: u32) -> &'static str {
    match op {
        warp_op::SHFL_IDX => "shfl_sync",
        warp_op::SHFL_UP => "shfl_up_sync",
        warp_op::SHFL_DOWN => "shfl_down_sync",
        warp_op::SHFL_XOR => "shfl_xor_sync",
        warp_op::BALLOT => "ballot_sync",
        warp_op::ALL => "all_sync",
        warp_op::ANY => "any_sync",
        warp_op::ACTIVEMASK => "activemask",
        warp_op::MMA => "mma",
        warp_op::LDMATRIX => "ldmatrix",
        warp_op::WGMMA => "wgmma",
        warp_op::MBARRIER => "mbarrier_try_wait_parity",
        _ => "sync_warp",
    }
}

fn describe(s: &State) -> String {
    match s {
        State::Waiting(Request::Barrier) => "waits at sync_threads".into(),
        State::Waiting(Request::Warp(w)) => format!("waits in {} with mask {:#010x}", op_name(w.op), w.mask),
        State::Ready(_) => "is running".into(),
        State::Done => "has returned".into(),
    }
}

/// Why nothing can go on: the first thread that waits for another that waits elsewhere.
fn deadlock(states: &[State]) -> String {
    if let Some((t, w)) = states.iter().enumerate().find_map(|(t, s)| warp_request(s).filter(|w| w.op == warp_op::MBARRIER).map(|w| (t, w)))
    {
        return format!(
            "deadlock: thread {t} waits in mbarrier_try_wait_parity for the phase of parity {} of a barrier that no thread left \
             running can complete (its arrivals or its expected bytes never come)",
            w.c & 1
        );
    }
    for (t, s) in states.iter().enumerate() {
        let Some(w) = warp_request(s) else { continue };
        let base = t - t % WARP;
        for p in 0..WARP.min(states.len() - base) {
            let other = &states[base + p];
            if w.mask & (1 << p) != 0
                && !matches!(other, State::Done)
                && warp_request(other).is_none_or(|q| q.op != w.op || q.mask != w.mask)
            {
                return format!(
                    "deadlock: thread {t} (warp {}, lane {}) waits in {} with mask {:#010x} for lane {p}, which {}",
                    t / WARP,
                    t % WARP,
                    op_name(w.op),
                    w.mask,
                    describe(other)
                );
            }
        }
    }
    let waiting = states.iter().position(|s| matches!(s, State::Waiting(Request::Barrier)));
    let other = states.iter().position(|s| matches!(s, State::Waiting(Request::Warp(_))));
    match (waiting, other) {
        (Some(a), Some(b)) => format!("deadlock: thread {a} waits at sync_threads while thread {b} {}", describe(&states[b])),
        _ => "deadlock: the block's threads wait for each other".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUDA's `c` operand for a width: `((32 - width) << 8) | clamp`.
    fn c(width: u32, up: bool) -> u32 {
        ((32 - width) << 8) | if up { 0 } else { 31 }
    }

    #[test]
    fn shuffle_sources_follow_ptx() {
        use warp_op::*;
        // Whole warp: down/up clamp at the warp's ends; xor and idx wrap within it.
        assert_eq!(shfl_source(SHFL_DOWN, 3, 4, c(32, false)), 7);
        assert_eq!(shfl_source(SHFL_DOWN, 30, 4, c(32, false)), 30);
        assert_eq!(shfl_source(SHFL_UP, 3, 4, c(32, true)), 3);
        assert_eq!(shfl_source(SHFL_UP, 7, 4, c(32, true)), 3);
        assert_eq!(shfl_source(SHFL_XOR, 5, 16, c(32, false)), 21);
        assert_eq!(shfl_source(SHFL_IDX, 9, 0, c(32, false)), 0);
        // The lane operand is taken modulo 32, as PTX reads its low five bits.
        assert_eq!(shfl_source(SHFL_IDX, 9, 33, c(32, false)), 1);
        // Segments of 8: idx reads within the segment, down stops at its end, up at its start,
        // xor may reach an earlier segment but not a later one.
        assert_eq!(shfl_source(SHFL_IDX, 13, 2, c(8, false)), 10);
        assert_eq!(shfl_source(SHFL_IDX, 13, 10, c(8, false)), 10);
        assert_eq!(shfl_source(SHFL_DOWN, 13, 2, c(8, false)), 15);
        assert_eq!(shfl_source(SHFL_DOWN, 14, 2, c(8, false)), 14);
        assert_eq!(shfl_source(SHFL_UP, 9, 2, c(8, true)), 9);
        assert_eq!(shfl_source(SHFL_UP, 10, 2, c(8, true)), 8);
        assert_eq!(shfl_source(SHFL_XOR, 13, 8, c(8, false)), 5);
        assert_eq!(shfl_source(SHFL_XOR, 5, 8, c(8, false)), 5);
    }
}
