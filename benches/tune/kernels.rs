//! Tunable kernels of the tuning bench (`benches/tune/main.rs`, docs/benchmarks.md "Autotuning"):
//! the speed suite's tiled matmul and row softmax (benches/speed/kernels.rs) with their tile,
//! block and per-thread work as const parameters, declared with `#[tune(..)]`, and a saxpy over
//! block size and items per thread. Each is correct for every configuration of its space.

// C = A B with TILE x TILE tiles in shared memory; each thread computes ROWS outputs of a
// column (thread coarsening: blocks of TILE x TILE / ROWS threads). Sizes are multiples of 32,
// as the speed suite's.
#[kernel]
#[tune(
    TILE = [8, 16, 32],
    ROWS = [1, 2, 4, 8],
    require = ROWS <= TILE && TILE * TILE / ROWS >= 32,
    block = (TILE, TILE / ROWS),
    grid = (c.shape(1).div_ceil(TILE), c.shape(0).div_ceil(TILE)),
    key = (a.shape(0).next_power_of_two(), a.shape(1).next_power_of_two(), b.shape(1).next_power_of_two()),
)]
pub fn matmul_tuned<const TILE: usize, const ROWS: usize>(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>) {
    let ta = shared_array::<f32, { TILE * TILE }>();
    let tb = shared_array::<f32, { TILE * TILE }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row0 = block_idx_y() as usize * TILE;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(1);
    let mut acc = [0.0f32; ROWS];
    for t in (0..n).step_by(TILE) {
        for r in 0..ROWS {
            let y = ty + r * (TILE / ROWS);
            ta[y * TILE + tx] = a[[row0 + y, t + tx]];
            tb[y * TILE + tx] = b[[t + y, col]];
        }
        sync_threads();
        for k in 0..TILE {
            let bk = tb[k * TILE + tx];
            for r in 0..ROWS {
                acc[r] += ta[(ty + r * (TILE / ROWS)) * TILE + k] * bk;
            }
        }
        sync_threads();
    }
    for r in 0..ROWS {
        c[[row0 + ty + r * (TILE / ROWS), col]] = acc[r];
    }
}

fn rescale(s: f32, m: f32, to: f32) -> f32 {
    if m == to { s } else { s * (m - to).exp() }
}

// Softmax of each row (one block per row), the row in registers: each thread holds ITEMS
// elements (element t + k * BLOCK), as the speed suite's softmax_rows with BLOCK = 256 and
// ITEMS = 16. Rows of up to BLOCK * ITEMS columns; every configuration holds 4,096 or more.
#[kernel]
#[tune(
    BLOCK = [128, 256, 512, 1024],
    ITEMS = [4, 8, 16, 32],
    require = BLOCK * ITEMS >= 4096 && BLOCK * ITEMS <= 8192,
    block = BLOCK,
    grid = x.shape(0),
    key = x.shape(1).next_power_of_two(),
)]
pub fn softmax_tuned<const BLOCK: usize, const ITEMS: usize>(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
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
        v[k] = if t + k * BLOCK < cols { (v[k] - mine).exp() } else { 0.0 };
        s += v[k];
    }
    let mut m = mine;
    let mut d = 16;
    while d > 0 {
        let mo = shfl_xor_sync(0xffffffff, m, d);
        let so = shfl_xor_sync(0xffffffff, s, d);
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

// y = a x + y, each thread ITEMS consecutive elements, in blocks of BLOCK threads.
#[kernel]
#[tune(
    BLOCK = [128, 256, 512, 1024],
    ITEMS = [1, 2, 4, 8],
    block = BLOCK,
    grid = y.len().div_ceil(BLOCK * ITEMS),
    key = y.len().next_power_of_two(),
)]
pub fn saxpy_tuned<const ITEMS: usize>(a: f32, x: &[f32], y: &mut [f32]) {
    let first = global_id_x() * ITEMS;
    for k in 0..ITEMS {
        let i = first + k;
        if i < y.len() {
            y[i] = a * x[i] + y[i];
        }
    }
}
