#[kernel]
pub fn k(out: &mut [f32], x: u32) {
    out[0] = match x {
        0 => 1.0,
        _ => 2,
    };
}
