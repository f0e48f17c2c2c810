//! Tiled matrix multiplication with the tile size as a const parameter: each block computes a
//! `TILE x TILE` tile of `c` through two shared tiles of `{ TILE * TILE }` elements
//! (`matmul_tiled::<16>` runs 16 x 16 blocks), and the same over any number type.

#[kernel]
pub fn matmul_tiled<const TILE: usize>(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>) {
    let ta = shared_array::<f32, { TILE * TILE }>();
    let tb = shared_array::<f32, { TILE * TILE }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(1);
    let mut acc = 0.0f32;
    for t in 0..(n + TILE - 1) / TILE {
        let k = t * TILE;
        ta[ty * TILE + tx] = if row < a.shape(0) && k + tx < n { a[[row, k + tx]] } else { 0.0 };
        tb[ty * TILE + tx] = if k + ty < n && col < b.shape(1) { b[[k + ty, col]] } else { 0.0 };
        sync_threads();
        for j in 0..TILE {
            acc += ta[ty * TILE + j] * tb[j * TILE + tx];
        }
        sync_threads();
    }
    if row < c.shape(0) && col < c.shape(1) {
        c[[row, col]] = acc;
    }
}

#[kernel]
pub fn matmul_tiled_t<T: Num, const TILE: usize>(a: &Array<T, 2>, b: &Array<T, 2>, c: &mut Array<T, 2>) {
    let ta = shared_array::<T, { TILE * TILE }>();
    let tb = shared_array::<T, { TILE * TILE }>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let row = block_idx_y() as usize * TILE + ty;
    let col = block_idx_x() as usize * TILE + tx;
    let n = a.shape(1);
    let mut acc = T::ZERO;
    let mut k = 0;
    while k < n {
        ta[ty * TILE + tx] = if row < a.shape(0) && k + tx < n { a[[row, k + tx]] } else { T::ZERO };
        tb[ty * TILE + tx] = if k + ty < n && col < b.shape(1) { b[[k + ty, col]] } else { T::ZERO };
        sync_threads();
        for j in 0..TILE {
            acc += ta[ty * TILE + j] * tb[j * TILE + tx];
        }
        sync_threads();
        k += TILE;
    }
    if row < c.shape(0) && col < c.shape(1) {
        c[[row, col]] = acc;
    }
}
