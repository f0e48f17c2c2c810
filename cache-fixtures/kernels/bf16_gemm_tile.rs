//! A tiled GEMM over `bf16` matrices with `f32` accumulation: tiles staged in shared memory
//! whose sizes are constant expressions of a `const` item, and a `static` table whose length
//! is one too.

const TILE: usize = 16;
const TAPS: usize = 4;
static WEIGHTS: [f32; TAPS] = [0.125, 0.25, 0.25, 0.375];
static IDENTITY: [[f32; TAPS]; { TAPS / 2 }] = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]];

#[kernel]
pub fn gemm_bf16(a: &Array<bf16, 2>, b: &Array<bf16, 2>, c: &mut Array<f32, 2>) {
    let ta = shared_array::<bf16, { TILE * TILE }>();
    let tb = shared_array::<bf16, { TILE * TILE }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(0);
    let k = a.shape(1);
    let m = b.shape(1);
    let mut acc = 0.0f32;
    let mut t0 = 0;
    while t0 < k {
        ta[ty * TILE + tx] = if row < n && t0 + tx < k { a[[row, t0 + tx]] } else { 0.0 };
        tb[ty * TILE + tx] = if t0 + ty < k && col < m { b[[t0 + ty, col]] } else { 0.0 };
        sync_threads();
        for j in 0..TILE {
            acc += ta[ty * TILE + j] as f32 * tb[j * TILE + tx] as f32;
        }
        sync_threads();
        t0 += TILE;
    }
    if row < n && col < m {
        c[[row, col]] = acc;
    }
}

#[kernel]
pub fn smooth_taps(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i + TAPS <= x.len() && i < y.len() {
        let mut s = 0.0f32;
        for t in 0..TAPS {
            s += WEIGHTS[t] * x[i + t] * IDENTITY[[0, 0]];
        }
        y[i] = s;
    }
}
