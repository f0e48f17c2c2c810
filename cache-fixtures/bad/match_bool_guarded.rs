#[kernel]
pub fn k(out: &mut [u32], x: u32) {
    out[0] = match x > 3 {
        true => 1,
        false if x == 0 => 2,
    };
}
