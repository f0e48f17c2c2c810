#[kernel]
pub fn k(out: &mut [u8]) {
    out[0] = 256;
}
