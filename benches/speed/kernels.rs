//! The kache side of the execution-speed suite (benches/speed/): each kernel is the same
//! algorithm as its CUDA C twin in benches/speed/cuda.cu, launched with the same grid.

const BLOCK: usize = 256;
const TILE: usize = 32;
const BINS: usize = 256;
const FULL: u32 = 0xffff_ffff;

// y = a * x + y, 4 elements per thread: a block's 256 threads cover 1024 consecutive elements,
// each load instruction coalesced, and all 8 loads are issued before the first store, so a
// thread keeps 8 loads in flight (with one element per thread it keeps 2, which holds an H200
// at 81% of its copy bandwidth, kache and NVRTC alike).
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let n = y.len();
    let i = block_idx_x() as usize * (BLOCK * 4) + thread_idx_x() as usize;
    if i + 3 * BLOCK < n {
        let x0 = x[i];
        let x1 = x[i + BLOCK];
        let x2 = x[i + 2 * BLOCK];
        let x3 = x[i + 3 * BLOCK];
        let y0 = y[i];
        let y1 = y[i + BLOCK];
        let y2 = y[i + 2 * BLOCK];
        let y3 = y[i + 3 * BLOCK];
        y[i] = a * x0 + y0;
        y[i + BLOCK] = a * x1 + y1;
        y[i + 2 * BLOCK] = a * x2 + y2;
        y[i + 3 * BLOCK] = a * x3 + y3;
    } else {
        for k in 0..4 {
            let j = i + k * BLOCK;
            if j < n {
                y[j] = a * x[j] + y[j];
            }
        }
    }
}

// Sum: a grid-strided loop per thread, a tree in shared memory per block, one atomic per block.
#[kernel]
pub fn reduce_block(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut acc = 0.0f32;
    for j in (global_id_x()..x.len()).step_by(stride) {
        acc += x[j];
    }
    tile[t] = acc;
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        atomic_add(&mut out[0], tile[0]);
    }
}

// The same sum with its grid-strided loop spelled as a `while` (issue 33: compiled as the
// `for .. step_by` loop it is).
#[kernel]
pub fn reduce_while(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut acc = 0.0f32;
    let mut j = global_id_x();
    while j < x.len() {
        acc += x[j];
        j += stride;
    }
    tile[t] = acc;
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        atomic_add(&mut out[0], tile[0]);
    }
}

fn warp_sum(v: f32) -> f32 {
    let mut v = v;
    let mut d = 16;
    while d > 0 {
        v += shfl_down_sync(FULL, v, d);
        d /= 2;
    }
    v
}

// The same sum, reduced within each warp by shuffles and across the block's 8 warps in shared
// memory.
#[kernel]
pub fn reduce_warp(x: &[f32], out: &mut [f32]) {
    let warps = shared_array::<f32, 32>();
    let t = thread_idx_x() as usize;
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut acc = 0.0f32;
    for j in (global_id_x()..x.len()).step_by(stride) {
        acc += x[j];
    }
    acc = warp_sum(acc);
    let lane = lane_id() as usize;
    let w = t / 32;
    if lane == 0 {
        warps[w] = acc;
    }
    sync_threads();
    if w == 0 {
        let v = if lane < BLOCK / 32 { warps[lane] } else { 0.0 };
        let total = warp_sum(v);
        if lane == 0 {
            atomic_add(&mut out[0], total);
        }
    }
}

// `s`, a sum of exponentials relative to the maximum `m`, made relative to `to` (>= `m`).
fn rescale(s: f32, m: f32, to: f32) -> f32 {
    if m == to { s } else { s * (m - to).exp() }
}

// The elements of a row each thread holds: rows of up to BLOCK * ITEMS = 4096 columns.
const ITEMS: usize = 16;

// Softmax of each row (one block per row) with the row in registers: each thread loads its 16
// elements (element t + k * BLOCK, so each load is coalesced and all 16 are in flight at once),
// takes their maximum and its sum of exponentials relative to it (one exponential per element,
// kept), the (maximum, sum) pairs are combined across each warp by shuffles and across the
// block's 8 warps through shared memory (one barrier), and each thread scales its exponentials
// by exp(its maximum - the row's) / sum: the row is read once and written once. Rows longer
// than 4096 are not handled (the suite's are 4096; Triton's twin has the same limit). Launch
// bounds as `__launch_bounds__(256, 6)` in cuda.cu: six blocks per SM, so at most 40
// registers. NVRTC's code takes 40 either way; the bounds-checked code's two unrolled copies
// take 66 unbounded (three blocks per SM), 56 under (256, 4) (four), and fit in 40 without a
// spill under (256, 6) (ptxas -v, sm_90).
#[kernel(max_threads = 256, min_blocks = 6)]
pub fn softmax_rows(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let warp_max = shared_array::<f32, 32>();
    let warp_sum = shared_array::<f32, 32>();
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut v = [f32::NEG_INFINITY; ITEMS];
    for k in 0..ITEMS {
        let j = t + k * BLOCK;
        if j < cols {
            v[k] = x[[row, j]];
        }
    }
    let mut mine = f32::NEG_INFINITY;
    for k in 0..ITEMS {
        mine = mine.max(v[k]);
    }
    let mut s = 0.0f32;
    for k in 0..ITEMS {
        // A thread past the row's end holds no element (and its maximum is -inf).
        v[k] = if t + k * BLOCK < cols { (v[k] - mine).exp() } else { 0.0 };
        s += v[k];
    }
    // Each step combines a lane's pair with its partner's, the same sum either way round, so
    // every lane ends with the warp's pair.
    let mut m = mine;
    let mut d = 16;
    while d > 0 {
        let mo = shfl_xor_sync(FULL, m, d);
        let so = shfl_xor_sync(FULL, s, d);
        let to = m.max(mo);
        s = rescale(s, m, to) + rescale(so, mo, to);
        m = to;
        d /= 2;
    }
    if lane_id() == 0 {
        warp_max[t / 32] = m;
        warp_sum[t / 32] = s;
    }
    sync_threads();
    let mut mx = f32::NEG_INFINITY;
    for w in 0..BLOCK / 32 {
        mx = mx.max(warp_max[w]);
    }
    let mut total = 0.0f32;
    for w in 0..BLOCK / 32 {
        total += rescale(warp_sum[w], warp_max[w], mx);
    }
    let scale = rescale(1.0 / total, mine, mx);
    for k in 0..ITEMS {
        let j = t + k * BLOCK;
        if j < cols {
            y[[row, j]] = v[k] * scale;
        }
    }
}

// C = A B with 32 x 32 tiles in shared memory, one output element per thread.
// Launch bounds as CUDA's `__launch_bounds__(1024, 2)` in cuda.cu: two blocks of 1,024
// threads per SM, which bounds the registers ptxas gives a thread to 32 (the bounds-checked
// code's versions would otherwise take 34, and one block per SM).
#[kernel(max_threads = 1024, min_blocks = 2)]
pub fn matmul_tiled(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>) {
    let ta = shared_array::<f32, { TILE * TILE }>();
    let tb = shared_array::<f32, { TILE * TILE }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(1);
    let mut acc = 0.0f32;
    for t in (0..n).step_by(TILE) {
        ta[ty * TILE + tx] = a[[row, t + tx]];
        tb[ty * TILE + tx] = b[[t + ty, col]];
        sync_threads();
        for k in 0..TILE {
            acc += ta[ty * TILE + k] * tb[k * TILE + tx];
        }
        sync_threads();
    }
    c[[row, col]] = acc;
}

// A 256-bin histogram of the low byte: per-block counts with shared-memory atomics, then one
// global atomic per bin and block.
#[kernel]
pub fn histogram(x: &[u32], bins: &mut [u32]) {
    let local = shared_array::<u32, BINS>();
    let t = thread_idx_x() as usize;
    local[t] = 0;
    sync_threads();
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    for j in (global_id_x()..x.len()).step_by(stride) {
        atomic_add(&mut local[(x[j] & 255) as usize], 1);
    }
    sync_threads();
    let c = local[t];
    if c > 0 {
        atomic_add(&mut bins[t], c);
    }
}

fn warp_scan(v: u32, lane: u32) -> u32 {
    let mut v = v;
    let mut d = 1;
    while d < 32 {
        let up = shfl_up_sync(FULL, v, d);
        if lane >= d {
            v += up;
        }
        d *= 2;
    }
    v
}

// The elements of a scan tile each thread holds (consecutive ones): tiles of 4096.
const SCAN_ITEMS: usize = 16;
const SCAN_TILE: usize = BLOCK * SCAN_ITEMS;
// A warp's part of the scan's stage buffer: its 32 * SCAN_ITEMS elements and a pad word after
// every 32, so element i sits at i + i / 32 and no two lanes of a pass meet in one bank of
// shared memory, neither when lane l takes every 32nd element (k * 32 + l) nor when it takes
// consecutive ones (l * SCAN_ITEMS + k).
const SCAN_STAGE: usize = 33 * SCAN_ITEMS;
// A tile's status word: the launch's epoch << 34 | AGGREGATE or PREFIX | a u32 value (the
// tile's own sum, or the inclusive prefix sum up to its end). A word of another epoch (an
// earlier launch's, or 0 before the first) is not published yet.
const AGGREGATE: u64 = 1 << 32;
const PREFIX: u64 = 2 << 32;
const EPOCH_SHIFT: u64 = 34;

// The sum of a value over the warp, in every lane.
fn warp_total(v: u32) -> u32 {
    let mut v = v;
    let mut d = 16;
    while d > 0 {
        v += shfl_xor_sync(FULL, v, d);
        d /= 2;
    }
    v
}

// Decoupled look-back, by the 32 lanes of one warp: the sum of every element before `tile`.
// Each round lane l reads the status of tile end - 1 - l (a relaxed atomic load: `ld.volatile`,
// read afresh on every turn of the wait, never from L1), the warp waits until all 32 are
// published in this launch, then adds the aggregates of the tiles up to the nearest one with a
// prefix, and that prefix; without a prefix among them it goes on 32 tiles further back.
// Before tile 0 there is a prefix of 0. A status word carries its value itself, so no other
// memory needs ordering with it.
fn look_back(status: &mut [u64], tile: usize, epoch: u64, lane: u32) -> u32 {
    let l = lane as usize;
    let mut sum = 0u32;
    let mut end = tile;
    let mut done = tile == 0;
    while !done {
        let mut s = 0u64;
        let mut ready = false;
        while !ready {
            s = if l < end { atomic_load(&status[end - 1 - l]) } else { (epoch << EPOCH_SHIFT) | PREFIX };
            ready = all_sync(FULL, s >> EPOCH_SHIFT == epoch);
        }
        let prefixes = ballot_sync(FULL, s & PREFIX != 0);
        let nearest = prefixes.trailing_zeros();
        sum += warp_total(if lane <= nearest { s as u32 } else { 0 });
        done = nearest < 32;
        if !done {
            end -= 32;
        }
    }
    sum
}

// Inclusive prefix sums in one pass (decoupled look-back): block b scans tile b of 4096
// elements and waits only for tiles before it. That makes progress because blocks are
// dispatched in increasing index order (on the GPU, which CUB's scan relies on in the same
// way, and in the host executor, whose workers take blocks in order and run each to its end):
// every tile a block waits for belongs to a block that has started, and that block waits only
// for earlier ones. (Tiles taken by a ticket, an atomic counter, need no such order, but the
// ticket's round trip and barrier before the first load cost the scan 6-7%: H200 run 20.) Each
// warp loads its 512 elements coalesced (lane l every 32nd) into its part of a shared stage
// buffer and takes back 16 consecutive ones per lane: loading those straight from global
// memory, each load instruction of a warp touches 32 addresses 64 bytes apart, which held the
// scan at a fifth of the copy bandwidth. The block scans them (each thread its 16, warps the
// thread totals by shuffles, the block the 8 warp totals), each thread puts its running sums
// back into the stage buffer (so that none is held in a register across the look-back), the
// block publishes the tile's sum, and its first warp looks back for the sum of the tiles
// before it, publishes its inclusive prefix and hands the sum to the block, which adds its
// part to the staged sums and writes them out coalesced: each element is read once and
// written once. `status` holds a word per tile, zeroed before the first launch; each launch
// passes an `epoch` above the last one's (1, 2, ...), so the statuses serve every later launch
// of the same grid unchanged. Launch bounds as `__launch_bounds__(256, 8)` in cuda.cu: eight
// blocks per SM, so at most 32 registers (kache's code takes 32 without a spill, checked or
// not; NVRTC's spills, less under (256, 6), cuda.cu's `scan_lb6`), and a thread's index is
// below 256, which proves the shared-memory accesses in bounds (without the bounds the safe
// launch ran 1.54x slower in H200 run 17). Tiles of 4096 halve the look-back's chain of tiles
// against 2048 (`SCAN_ITEMS` 8, the suite's `k-t2048` and NVRTC's `scan_t2048`).
#[kernel(max_threads = 256, min_blocks = 8)]
pub fn scan(x: &[u32], y: &mut [u32], status: &mut [u64], epoch: u64) {
    let warp_totals = shared_array::<u32, 32>();
    let before_tile = shared_array::<u32, 1>();
    let stage = shared_array::<u32, { BLOCK / 32 * SCAN_STAGE }>();
    let t = thread_idx_x() as usize;
    let lane = lane_id();
    let l = lane as usize;
    let w = t / 32;
    let tile = block_idx_x() as usize;
    // The warp's first element, and its part of the stage buffer.
    let base = tile * SCAN_TILE + w * 32 * SCAN_ITEMS;
    let own = w * SCAN_STAGE;
    for k in 0..SCAN_ITEMS {
        let i = k * 32 + l;
        stage[own + i + i / 32] = if base + i < x.len() { x[base + i] } else { 0 };
    }
    sync_warp(FULL);
    let mut v = [0u32; SCAN_ITEMS];
    for k in 0..SCAN_ITEMS {
        let i = l * SCAN_ITEMS + k;
        v[k] = stage[own + i + i / 32];
    }
    for k in 1..SCAN_ITEMS {
        v[k] += v[k - 1];
    }
    let mine = v[SCAN_ITEMS - 1];
    for k in 0..SCAN_ITEMS {
        let i = l * SCAN_ITEMS + k;
        stage[own + i + i / 32] = v[k];
    }
    let inclusive = warp_scan(mine, lane);
    if lane == 31 {
        warp_totals[w] = inclusive;
    }
    sync_threads();
    if w == 0 {
        let total = if l < BLOCK / 32 { warp_totals[l] } else { 0 };
        let scanned = warp_scan(total, lane);
        let tile_sum = shfl_sync(FULL, scanned, (BLOCK / 32 - 1) as u32);
        warp_totals[l] = scanned;
        if lane == 0 {
            let flag = if tile == 0 { PREFIX } else { AGGREGATE };
            atomic_exch(&mut status[tile], (epoch << EPOCH_SHIFT) | flag | tile_sum as u64);
        }
        let sum = look_back(status, tile, epoch, lane);
        if lane == 0 {
            if tile > 0 {
                atomic_exch(&mut status[tile], (epoch << EPOCH_SHIFT) | PREFIX | (sum + tile_sum) as u64);
            }
            before_tile[0] = sum;
        }
    }
    sync_threads();
    let before = before_tile[0] + inclusive - mine + if w > 0 { warp_totals[w - 1] } else { 0 };
    // The warp's first element again, computed afresh after the barrier: the stores' indices
    // are not the loads' kept live across the look-back (a 64-bit value per element: with
    // eight, 39 registers instead of 32, six blocks per SM, not eight).
    let base = block_idx_x() as usize * SCAN_TILE + w * 32 * SCAN_ITEMS;
    // Each lane adds its part to the sums it staged, and reads every 32nd for the coalesced stores.
    for k in 0..SCAN_ITEMS {
        let i = l * SCAN_ITEMS + k;
        stage[own + i + i / 32] += before;
    }
    sync_warp(FULL);
    for k in 0..SCAN_ITEMS {
        let i = k * 32 + l;
        if base + i < y.len() {
            y[base + i] = stage[own + i + i / 32];
        }
    }
}
