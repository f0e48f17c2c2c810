#[kernel]
pub fn k(a: &[f32], b: &[f64], out: &mut [f32]) {
    let i = global_id_x();
    out[i] = a[i] + b[i];
}
