#[kernel]
pub fn k(out: &mut [u32], x: i64) {
    out[0] = match x {
        10..=5 => 1,
        _ => 2,
    };
}
