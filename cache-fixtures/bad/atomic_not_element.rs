#[kernel]
pub fn k(out: &mut [u32], x: u32) {
    atomic_add(x, 1);
}
