#[tune(BLOCK = [64, 128], block = BLOCK, grid = 1)]
fn helper(x: f32) -> f32 {
    x * 2.0
}
