#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = 7i128 as u32;
}
