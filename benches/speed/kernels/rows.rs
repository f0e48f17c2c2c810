//! The speed corpus's row kernels in kache (benches/speed/): layer norm, RMS norm, the
//! three-pass softmax and the top k of each row; their CUDA C twins are in rows.cu beside this
//! file.

mod common;

use common::{BLOCK, FULL, block_max, block_sum};

const EPS: f32 = 1e-5;

// Layer norm of each row, a block per row: the row's sum and sum of squares in one pass, then
// y = (x - mean) / sqrt(var + eps) * gamma + beta in a second.
#[kernel]
pub fn layernorm(x: &Array<f32, 2>, gamma: &[f32], beta: &[f32], y: &mut Array<f32, 2>) {
    let red = shared_array::<f32, 32>();
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut s = 0.0f32;
    let mut s2 = 0.0f32;
    for j in (t..cols).step_by(BLOCK) {
        let v = x[[row, j]];
        s += v;
        s2 += v * v;
    }
    let mean = block_sum(s, red) / cols as f32;
    let var = block_sum(s2, red) / cols as f32 - mean * mean;
    let inv = 1.0 / (var + EPS).sqrt();
    for j in (t..cols).step_by(BLOCK) {
        y[[row, j]] = (x[[row, j]] - mean) * inv * gamma[j] + beta[j];
    }
}

// RMS norm of each row, a block per row: y = x / sqrt(mean(x²) + eps) * w.
#[kernel]
pub fn rmsnorm(x: &Array<f32, 2>, w: &[f32], y: &mut Array<f32, 2>) {
    let red = shared_array::<f32, 32>();
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut s2 = 0.0f32;
    for j in (t..cols).step_by(BLOCK) {
        let v = x[[row, j]];
        s2 += v * v;
    }
    let inv = 1.0 / (block_sum(s2, red) / cols as f32 + EPS).sqrt();
    for j in (t..cols).step_by(BLOCK) {
        y[[row, j]] = x[[row, j]] * inv * w[j];
    }
}

// Softmax of each row in three passes over it, a block per row: the maximum, the sum of
// exponentials relative to it, then each output.
#[kernel]
pub fn softmax3(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let red = shared_array::<f32, 32>();
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut m = f32::NEG_INFINITY;
    for j in (t..cols).step_by(BLOCK) {
        m = m.max(x[[row, j]]);
    }
    let m = block_max(m, red);
    let mut s = 0.0f32;
    for j in (t..cols).step_by(BLOCK) {
        s += (x[[row, j]] - m).exp();
    }
    let s = block_sum(s, red);
    for j in (t..cols).step_by(BLOCK) {
        y[[row, j]] = (x[[row, j]] - m).exp() / s;
    }
}

/// How many of each row's largest values `topk_rows` finds.
const K: usize = 8;

// The K largest values of each row, largest first, and their columns; a warp per row. Each
// lane keeps the K largest of its elements (every 32nd of the row) in registers, sorted: an
// element larger than the smallest kept is carried down the list, swapping with each smaller
// one. Then K rounds: the warp finds the largest head among its lanes (the lower lane on a
// tie) by shuffles, and that lane writes it and moves its list up.
#[kernel]
pub fn topk_rows(x: &Array<f32, 2>, vals: &mut Array<f32, 2>, idx: &mut Array<u32, 2>) {
    let row = global_id_x() / 32;
    let lane = lane_id();
    if row < x.shape(0) {
        let mut top = [f32::NEG_INFINITY; K];
        let mut at = [0u32; K];
        for j in (lane as usize..x.shape(1)).step_by(32) {
            let mut v = x[[row, j]];
            if v > top[K - 1] {
                let mut c = j as u32;
                for k in 0..K {
                    if v > top[k] {
                        let (tv, tc) = (top[k], at[k]);
                        top[k] = v;
                        at[k] = c;
                        v = tv;
                        c = tc;
                    }
                }
            }
        }
        for r in 0..K {
            let mut best = top[0];
            let mut owner = lane;
            let mut d = 16;
            while d > 0 {
                let other = shfl_xor_sync(FULL, best, d);
                let other_lane = shfl_xor_sync(FULL, owner, d);
                if other > best || (other == best && other_lane < owner) {
                    best = other;
                    owner = other_lane;
                }
                d /= 2;
            }
            if lane == owner {
                vals[[row, r]] = top[0];
                idx[[row, r]] = at[0];
                for k in 0..K - 1 {
                    top[k] = top[k + 1];
                    at[k] = at[k + 1];
                }
                top[K - 1] = f32::NEG_INFINITY;
            }
        }
    }
}
