#[kernel]
pub fn k(x: &mut [bf16], flag: bool) {
    x[0] = flag as bf16;
}
