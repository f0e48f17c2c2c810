//! The speed corpus's matrix kernels in kache (benches/speed/): transposes, gemv, CSR spmv and
//! a direct 2-D convolution; their CUDA C twins are in matrix.cu beside this file.

mod common;

use common::warp_sum;

const TILE: usize = 32;
/// Rows of threads of a transpose block: each thread moves TILE / ROWS elements.
const ROWS: usize = 8;

// t = aᵀ, one element per thread: the loads are coalesced, the stores are not.
#[kernel]
pub fn transpose_naive(a: &Array<f32, 2>, t: &mut Array<f32, 2>) {
    let i = global_id_y();
    let j = global_id_x();
    if i < a.shape(0) && j < a.shape(1) {
        t[[j, i]] = a[[i, j]];
    }
}

// t = aᵀ through a 32 x 33 tile in shared memory (the pad column keeps a column's reads in
// distinct banks): blocks of 32 x 8 threads, each thread moving 4 elements in and 4 out, both
// coalesced.
#[kernel]
pub fn transpose_tiled(a: &Array<f32, 2>, t: &mut Array<f32, 2>) {
    let tile = shared_array::<f32, { TILE * (TILE + 1) }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let (rows, cols) = (a.shape(0), a.shape(1));
    let bx = block_idx_x() as usize * TILE;
    let by = block_idx_y() as usize * TILE;
    for k in (0..TILE).step_by(ROWS) {
        let (i, j) = (by + ty + k, bx + tx);
        if i < rows && j < cols {
            tile[(ty + k) * (TILE + 1) + tx] = a[[i, j]];
        }
    }
    sync_threads();
    for k in (0..TILE).step_by(ROWS) {
        let (i, j) = (bx + ty + k, by + tx);
        if i < cols && j < rows {
            t[[i, j]] = tile[tx * (TILE + 1) + ty + k];
        }
    }
}

// y = A x, a warp per row: lane l sums every 32nd product of the row from column l, then the
// warp's sum by shuffles.
#[kernel]
pub fn gemv(a: &Array<f32, 2>, x: &[f32], y: &mut [f32]) {
    let row = global_id_x() / 32;
    let lane = lane_id() as usize;
    if row < a.shape(0) {
        let mut acc = 0.0f32;
        for j in (lane..a.shape(1)).step_by(32) {
            acc += a[[row, j]] * x[j];
        }
        let total = warp_sum(acc);
        if lane == 0 {
            y[row] = total;
        }
    }
}

// y = A x for A in CSR form (row_ptr, cols, vals), a warp per row, as gemv.
#[kernel]
pub fn spmv_csr(row_ptr: &[u32], cols: &[u32], vals: &[f32], x: &[f32], y: &mut [f32]) {
    let row = global_id_x() / 32;
    let lane = lane_id() as usize;
    if row < y.len() {
        let start = row_ptr[row] as usize;
        let end = row_ptr[row + 1] as usize;
        let mut acc = 0.0f32;
        for k in (start + lane..end).step_by(32) {
            acc += vals[k] * x[cols[k] as usize];
        }
        let total = warp_sum(acc);
        if lane == 0 {
            y[row] = total;
        }
    }
}

// A 3 x 3 convolution with zero padding, every input channel into each output channel:
// y[co, r, c] = sum over ci, ky, kx of x[ci, r + ky - 1, c + kx - 1] w[co, ci, ky, kx]. A thread
// per output pixel; blocks of 32 x 8 pixels, the grid's z the output channel.
#[kernel]
pub fn conv2d(x: &Array<f32, 3>, w: &Array<f32, 4>, y: &mut Array<f32, 3>) {
    let c = global_id_x();
    let r = global_id_y();
    let co = block_idx_z() as usize;
    let (channels, h, wd) = (x.shape(0), x.shape(1), x.shape(2));
    if r < h && c < wd {
        let mut acc = 0.0f32;
        for ci in 0..channels {
            for ky in 0..3 {
                for kx in 0..3 {
                    // The input pixel is (r + ky - 1, c + kx - 1): inside when both are in range.
                    let (iy, ix) = (r + ky, c + kx);
                    if iy >= 1 && iy <= h && ix >= 1 && ix <= wd {
                        acc += x[[ci, iy - 1, ix - 1]] * w[[co, ci, ky, kx]];
                    }
                }
            }
        }
        y[[co, r, c]] = acc;
    }
}
