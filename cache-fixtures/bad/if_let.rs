#[kernel]
pub fn k(out: &mut [f32], x: f32) {
    if let 0 = 1 {
        out[0] = x;
    }
}
