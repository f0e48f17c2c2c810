#[kernel]
pub fn k(out: &mut [f16]) {
    let big: f16 = 70000.0;
    out[0] = big;
}
