// 1-d convolution with a static filter and zero padding, plus a shared-memory tiled version
// with a halo.
const RADIUS: usize = 2;
static WEIGHTS: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
const TILE: usize = 32;

#[kernel]
pub fn conv1d(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let mut acc = 0.0f32;
        for k in 0..=2 * RADIUS {
            // i + k - RADIUS, skipping taps outside the array.
            if i + k >= RADIUS && i + k - RADIUS < x.len() {
                acc += WEIGHTS[k] * x[i + k - RADIUS];
            }
        }
        y[i] = acc;
    }
}

#[kernel]
pub fn conv1d_tiled(x: &[f32], y: &mut [f32]) {
    let tile = shared_array::<f32, 36>(); // TILE + 2 * RADIUS
    let t = thread_idx_x() as usize;
    let base = block_idx_x() as usize * TILE;
    // Each thread loads one element, the first 2*RADIUS threads load the halo too.
    tile[t + RADIUS] = if base + t < x.len() { x[base + t] } else { 0.0 };
    if t < RADIUS {
        tile[t] = if base + t >= RADIUS { x[base + t - RADIUS] } else { 0.0 };
        let r = base + TILE + t;
        tile[TILE + RADIUS + t] = if r < x.len() { x[r] } else { 0.0 };
    }
    sync_threads();
    let i = base + t;
    if i < x.len() {
        let mut acc = 0.0;
        for k in 0..2 * RADIUS + 1 {
            acc += WEIGHTS[k] * tile[t + k];
        }
        y[i] = acc;
    }
}
