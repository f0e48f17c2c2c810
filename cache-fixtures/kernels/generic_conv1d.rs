//! 1-d convolution over any float type with the filter width as a const parameter
//! (`conv1d::<f32, 3>`): a direct version, and a tiled one whose shared tile holds the block
//! and its halo, `{ BLOCK + K - 1 }` elements.

const BLOCK: usize = 64;

/// `y[i] = sum over k of w[k] * x[i + k - K / 2]`, zero outside `x`.
#[kernel]
pub fn conv1d<T: Float, const K: usize>(x: &[T], w: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        let mut acc = T::ZERO;
        for k in 0..K {
            if i + k >= K / 2 && i + k - K / 2 < x.len() {
                acc += w[k] * x[i + k - K / 2];
            }
        }
        y[i] = acc;
    }
}

#[kernel]
pub fn conv1d_tiled<T: Float, const K: usize>(x: &[T], w: &[T], y: &mut [T]) {
    let tile = shared_array::<T, { BLOCK + K - 1 }>();
    let t = thread_idx_x() as usize;
    let base = block_idx_x() as usize * BLOCK;
    // The tile starts K / 2 before the block; each thread loads one or two elements.
    let mut j = t;
    while j < BLOCK + K - 1 {
        let src = base + j;
        tile[j] = if src >= K / 2 && src - K / 2 < x.len() { x[src - K / 2] } else { T::ZERO };
        j += BLOCK;
    }
    sync_threads();
    let i = base + t;
    if i < y.len() {
        let mut acc = T::ZERO;
        for k in 0..K {
            acc += w[k] * tile[t + k];
        }
        y[i] = acc;
    }
}
