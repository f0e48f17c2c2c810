//! Quantised integer arithmetic as inference kernels do it: int8 dot products accumulated in
//! `i32`, a quantised matrix-vector product with per-row `f32` scales, requantisation with
//! Rust's saturating `as i8`, an unsigned-by-signed dot product reduced in shared memory, and
//! `i16` multiply-accumulate into `i64`.

const BLOCK: usize = 128;

#[kernel]
pub fn dot_i8(a: &[i8], b: &[i8], out: &mut [i32]) {
    let mut acc: i32 = 0;
    let mut i = global_id_x();
    let stride = (grid_dim_x() * block_dim_x()) as usize;
    while i < a.len() {
        acc += a[i] as i32 * b[i] as i32;
        i += stride;
    }
    atomic_add(&mut out[0], acc);
}

#[kernel]
pub fn qmatvec(w: &Array<i8, 2>, x: &[i8], row_scale: &[f32], x_scale: f32, y: &mut [f32]) {
    let row = global_id_x();
    if row < w.shape(0) {
        let mut acc = 0i32;
        for c in 0..w.shape(1) {
            acc += w[[row, c]] as i32 * x[c] as i32;
        }
        y[row] = acc as f32 * row_scale[row] * x_scale;
    }
}

#[kernel]
pub fn requantize(x: &[f32], inv_scale: f32, q: &mut [i8]) {
    let i = global_id_x();
    if i < x.len() {
        q[i] = (x[i] * inv_scale).round() as i8;
    }
}

#[kernel]
pub fn dot_u8_i8_shared(a: &[u8], b: &[i8], partial: &mut [i32]) {
    let tile = shared_array::<i32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < a.len() { a[i] as i32 * b[i] as i32 } else { 0 };
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s >>= 1;
    }
    if t == 0 {
        partial[block_idx_x() as usize] = tile[0];
    }
}

#[kernel]
pub fn mac_i16(a: &[i16], b: &[i16], acc: &mut [i64], wrapped: &mut [i16]) {
    let i = global_id_x();
    if i < a.len() {
        acc[i] += a[i] as i64 * b[i] as i64;
        wrapped[i] = a[i].wrapping_mul(b[i]);
    }
}
