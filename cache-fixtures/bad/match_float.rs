#[kernel]
pub fn k(out: &mut [u32], x: f32) {
    out[0] = match x {
        _ => 1,
    };
}
