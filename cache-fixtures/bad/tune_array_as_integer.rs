#[kernel]
#[tune(BLOCK = [64, 128], block = BLOCK, grid = x.div_ceil(BLOCK))]
pub fn k(x: &mut [f32]) {
    x[0] = 1.0;
}
