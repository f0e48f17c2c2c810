#[kernel]
pub fn k(h: &mut [u16]) {
    atomic_store(&mut h[0], 7);
}
