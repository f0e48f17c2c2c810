#[kernel]
pub fn k(out: &mut [f32], mode: i32) {
    out[0] = match mode {
        0 => 1.0,
        1 | 2 => 2.0,
    };
}
