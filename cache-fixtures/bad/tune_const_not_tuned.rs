#[kernel]
#[tune(BLOCK = [64, 128], block = BLOCK, grid = x.len().div_ceil(BLOCK))]
pub fn k<const ITEMS: usize>(x: &mut [f32]) {
    x[0] = ITEMS as f32;
}
