//! Threads that each handle a few contiguous elements, as code written for wide memory accesses
//! has them: four `f32`s per thread, a row per thread of a flat array and of a 2-d one, a
//! 16-byte and an 8-byte struct per thread, `f16` pairs, eight `bf16`s, four `u32`s and two `f64`s per thread.
//! On the GPU each group moves in one 8- or 16-byte access where the arrays (and the rows'
//! length) are aligned for it, and element by element where they are not (a view that starts
//! one element in).

#[derive(Clone, Copy)]
pub struct Quad {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

#[derive(Clone, Copy)]
pub struct Pair {
    pub x: f32,
    pub y: f32,
}

#[kernel]
pub fn axpy4(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if 4 * i + 3 < y.len() {
        for k in 0..4 {
            y[4 * i + k] = a * x[4 * i + k] + y[4 * i + k];
        }
    }
}

#[kernel]
pub fn row_dot(a: &[f32], x: &[f32], cols: usize, y: &mut [f32]) {
    let r = global_id_x();
    if r < y.len() {
        let mut acc = 0.0f32;
        for j in 0..cols {
            acc += a[r * cols + j] * x[j];
        }
        y[r] = acc;
    }
}

#[kernel]
pub fn row_sums(m: &Array<f32, 2>, y: &mut [f32]) {
    let r = global_id_x();
    if r < m.shape(0) && r < y.len() {
        let mut acc = 0.0f32;
        for j in 0..m.shape(1) {
            acc += m[[r, j]];
        }
        y[r] = acc;
    }
}

#[kernel]
pub fn quads(p: &[Quad], out: &mut [Quad]) {
    let i = global_id_x();
    if i < p.len() && i < out.len() {
        let q = p[i];
        out[i] = Quad { x: q.y, y: q.x * 2.0, z: q.z + q.w, w: q.w - q.x };
    }
}

#[kernel]
pub fn pairs(p: &[Pair], out: &mut [Pair]) {
    let i = global_id_x();
    if i < p.len() && i < out.len() {
        let q = p[i];
        out[i] = Pair { x: q.x + q.y, y: q.x * q.y };
    }
}

#[kernel]
pub fn half_pairs(h: &[f16], out: &mut [f16]) {
    let i = global_id_x();
    if 2 * i + 1 < h.len() && 2 * i + 1 < out.len() {
        let a = h[2 * i];
        let b = h[2 * i + 1];
        out[2 * i] = a + b;
        out[2 * i + 1] = a * b;
    }
}

#[kernel]
pub fn scale_bf16x8(s: bf16, x: &[bf16], out: &mut [bf16]) {
    let base = 8 * global_id_x();
    if base + 7 < out.len() {
        for k in 0..8 {
            out[base + k] = s * x[base + k];
        }
    }
}

#[kernel]
pub fn mix_u32x4(x: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if 4 * i + 3 < out.len() {
        for k in 0..4 {
            out[4 * i + k] = (x[4 * i + k] << (k as u32 + 1)) ^ (i as u32);
        }
    }
}

#[kernel]
pub fn add_f64x2(x: &[f64], y: &[f64], out: &mut [f64]) {
    let i = global_id_x();
    if 2 * i + 1 < out.len() {
        for k in 0..2 {
            out[2 * i + k] = x[2 * i + k] + y[2 * i + k];
        }
    }
}
