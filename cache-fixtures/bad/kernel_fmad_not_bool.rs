#[kernel(fmad = "yes")]
pub fn k(x: &mut [f32]) {
    x[0] = x[0] * 2.0 + 1.0;
}
