#[kernel]
pub fn k(x: &mut [f16]) {
    x[0] = x[0] & x[1];
}
