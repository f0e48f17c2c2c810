#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = 1.5;
}
