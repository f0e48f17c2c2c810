#[kernel]
pub fn k(out: &mut [f32], p: (f32, f32)) {
    out[0] = p.0;
}
