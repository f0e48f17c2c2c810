const N: u32 = 4;

#[kernel]
pub fn k(out: &mut [u32]) {
    N = 5;
}
