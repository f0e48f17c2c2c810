#[kernel]
pub fn k(out: &mut [u32], x: &[u8]) {
    out[0] = match x[0] {
        0..=9 => 1,
        20..=u8::MAX => 2,
    };
}
