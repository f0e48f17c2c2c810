//! Elementwise `bf16` kernels of a transformer block: bias and ReLU computed in `bf16`, a tanh
//! GELU computed in `f32`, conversions both ways (rounding to nearest even), a fused
//! multiply-add, and a residual add accumulated into `f32`.

#[kernel]
pub fn bias_relu_bf16(x: &[bf16], bias: &[bf16], y: &mut [bf16]) {
    let i = global_id_x();
    if i < y.len() {
        let v = x[i] + bias[i % bias.len()];
        y[i] = if v > 0.0 { v } else { 0.0 };
    }
}

#[kernel]
pub fn gelu_bf16(x: &[bf16], y: &mut [bf16]) {
    let i = global_id_x();
    if i < y.len() {
        let v = x[i] as f32;
        let inner = 0.7978846 * (v + 0.044715 * v * v * v);
        y[i] = (0.5 * v * (1.0 + inner.tanh())) as bf16;
    }
}

#[kernel]
pub fn widen_bf16(x: &[bf16], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = x[i] as f32;
    }
}

#[kernel]
pub fn narrow_bf16(x: &[f64], y: &mut [bf16], z: &mut [f16]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = x[i] as bf16;
        z[i] = x[i] as f16;
    }
}

#[kernel]
pub fn fma_bf16(a: &[bf16], b: &[bf16], c: &mut [bf16]) {
    let i = global_id_x();
    if i < c.len() {
        c[i] = a[i].mul_add(b[i], c[i]);
    }
}

#[kernel]
pub fn residual_bf16(x: &[bf16], r: &[bf16], scale: bf16, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] += (x[i] * scale - r[i]) as f32;
    }
}
