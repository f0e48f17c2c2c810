#[kernel]
pub fn k(out: &mut [usize]) {
    out[0] = swizzle::<3, 3, 2>(5);
}
