#[kernel]
pub fn k(out: &mut [u16], x: u16) {
    out[0] = -x;
}
