#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = std::f32::GOLDEN;
}
