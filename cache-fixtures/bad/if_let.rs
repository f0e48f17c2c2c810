#[kernel]
pub fn k(out: &mut [f32], x: f32) {
    if let Some(v) = x {
        out[0] = v;
    }
}
