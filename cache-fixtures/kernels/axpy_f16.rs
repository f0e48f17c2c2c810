//! Half-precision BLAS-1 as mixed-precision code writes it: `f16` storage with `f32`
//! arithmetic (axpy, a dot product reduced in shared memory), and the same axpy computed in
//! `f16` itself for comparison; clamping to the `f16` range with its constants.

const BLOCK: usize = 256;

#[kernel]
pub fn axpy_f16_acc_f32(a: f32, x: &[f16], y: &mut [f16]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = (a * x[i] as f32 + y[i] as f32) as f16;
    }
}

#[kernel]
pub fn axpy_f16(a: f16, x: &[f16], y: &mut [f16]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

#[kernel]
pub fn dot_f16(x: &[f16], y: &[f16], out: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] as f32 * y[i] as f32 } else { 0.0 };
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

#[kernel]
pub fn scale_clamp_f16(x: &mut Array<f16, 2>, s: f32) {
    let r = global_id_y();
    let c = global_id_x();
    if r < x.shape(0) && c < x.shape(1) {
        let lo: f16 = -60000.0;
        let v = (x[[r, c]] as f32 * s).min(f16::MAX as f32) as f16;
        x[[r, c]] = v.max(lo);
    }
}
