#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = 7u8 as u32;
}
