const A: u32 = B + 1;
const B: u32 = A + 1;

#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = A;
}
