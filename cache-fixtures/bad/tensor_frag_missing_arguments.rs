#[kernel]
pub fn k(out: &mut [f32], c: FragC<f32, 16>) {
    out[0] = c.x[0];
}
