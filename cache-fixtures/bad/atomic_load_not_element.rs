#[kernel]
pub fn k(out: &mut [u32], x: u32) {
    out[0] = atomic_load(&x);
}
