#[kernel]
#[tune(BLOCK = [64, 128], block = BLOCK, grid = x.len().div_ceil(BLOCK), key = x.len() as f32)]
pub fn k(x: &mut [f32]) {
    x[0] = 1.0;
}
