#[kernel]
pub fn k(out: &mut [f32], mode: u32) {
    out[0] = match mode {
        0 => 1.0,
        _ => 2.0,
    };
}
