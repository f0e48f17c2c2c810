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

// Softmax of each row (one block per row), online: one block-strided pass keeps each thread's
// maximum and its sum of exponentials relative to it (rescaling the sum when the maximum
// grows, one exponential per element), the (maximum, sum) pairs are combined across each warp by shuffles and across the
// block's 8 warps through shared memory, then one pass writes the normalised values: the row is
// read twice (once from memory, once from cache) and the block meets one barrier.
#[kernel]
pub fn softmax_rows(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let warp_max = shared_array::<f32, 32>();
    let warp_sum = shared_array::<f32, 32>();
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut m = f32::NEG_INFINITY;
    let mut s = 0.0f32;
    for j in (t..cols).step_by(BLOCK) {
        // One exponential either way: exp(m - v) rescales the sum to a new maximum v, or
        // exp(v - m) adds v's term; no branch, so the unrolled loop's loads are independent.
        let v = x[[row, j]];
        let e = (m.min(v) - m.max(v)).exp();
        s = if v > m { s * e + 1.0 } else { s + e };
        m = m.max(v);
    }
    // Each step combines a lane's pair with its partner's, the same sum either way round, so
    // every lane ends with the warp's pair.
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
    let inv = 1.0 / total;
    for j in (t..cols).step_by(BLOCK) {
        y[[row, j]] = (x[[row, j]] - mx).exp() * inv;
    }
}

// C = A B with 32 x 32 tiles in shared memory, one output element per thread.
#[kernel]
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

// Inclusive prefix sums of blocks of 1024 elements (4 per thread): each thread scans its four,
// warps scan the thread totals with shuffles, the block scans the 8 warp totals; the block's
// total goes to `sums`.
#[kernel]
pub fn scan_blocks(x: &[u32], y: &mut [u32], sums: &mut [u32]) {
    let warp_totals = shared_array::<u32, 32>();
    let t = thread_idx_x() as usize;
    let lane = lane_id();
    let w = t / 32;
    let base = block_idx_x() as usize * (BLOCK * 4) + t * 4;
    let mut v0 = 0;
    let mut v1 = 0;
    let mut v2 = 0;
    let mut v3 = 0;
    if base + 3 < x.len() {
        v0 = x[base];
        v1 = v0 + x[base + 1];
        v2 = v1 + x[base + 2];
        v3 = v2 + x[base + 3];
    } else {
        if base < x.len() {
            v0 = x[base];
        }
        v1 = v0 + if base + 1 < x.len() { x[base + 1] } else { 0 };
        v2 = v1 + if base + 2 < x.len() { x[base + 2] } else { 0 };
        v3 = v2;
    }
    let inclusive = warp_scan(v3, lane);
    if lane == 31 {
        warp_totals[w] = inclusive;
    }
    sync_threads();
    if w == 0 {
        let total = if (lane as usize) < BLOCK / 32 { warp_totals[lane as usize] } else { 0 };
        warp_totals[lane as usize] = warp_scan(total, lane);
    }
    sync_threads();
    let before = inclusive - v3 + if w > 0 { warp_totals[w - 1] } else { 0 };
    if base < y.len() {
        y[base] = before + v0;
    }
    if base + 1 < y.len() {
        y[base + 1] = before + v1;
    }
    if base + 2 < y.len() {
        y[base + 2] = before + v2;
    }
    if base + 3 < y.len() {
        y[base + 3] = before + v3;
    }
    if t == BLOCK - 1 {
        sums[block_idx_x() as usize] = before + v3;
    }
}

// Adds to each block of 1024 the scanned total of the blocks before it.
#[kernel]
pub fn scan_add(y: &mut [u32], scanned_sums: &[u32]) {
    let b = block_idx_x() as usize;
    if b > 0 {
        let off = scanned_sums[b - 1];
        let base = b * (BLOCK * 4) + thread_idx_x() as usize;
        for k in 0..4 {
            let i = base + k * BLOCK;
            if i < y.len() {
                y[i] += off;
            }
        }
    }
}
