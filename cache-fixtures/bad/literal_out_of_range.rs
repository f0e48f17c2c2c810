#[kernel]
pub fn k(out: &mut [i32]) {
    let big: i32 = 3000000000;
    out[0] = big;
}
