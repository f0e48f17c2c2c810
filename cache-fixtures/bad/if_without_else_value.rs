#[kernel]
pub fn k(out: &mut [f32], c: bool) {
    let x: f32 = if c { 1.0 };
    out[0] = x;
}
