#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = compute(1.0);
}
