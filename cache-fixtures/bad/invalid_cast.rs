#[kernel]
pub fn k(out: &mut [f32], flag: bool) {
    out[0] = flag as f32;
}
