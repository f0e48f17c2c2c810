#[kernel]
pub fn k(x: &mut [f16], s: f32) {
    x[0] = x[0] * s;
}
