// Transposes: a naive one over any layout, and a tiled one through a padded shared tile.
const T: usize = 8;

#[kernel]
pub fn transpose_naive(a: &Array<f64, 2>, out: &mut Array<f64, 2>) {
    let c = global_id_x();
    let r = global_id_y();
    if r < a.shape(0) && c < a.shape(1) {
        out[[c, r]] = a[[r, c]];
    }
}

#[kernel]
pub fn transpose_tiled(a: &Array<f32, 2>, out: &mut Array<f32, 2>) {
    // T x (T + 1): the padding column avoids bank conflicts on a GPU.
    let tile = shared_array::<f32, 72>();
    let tx = thread_idx_x() as usize;
    let ty = thread_idx_y() as usize;
    let bx = block_idx_x() as usize * T;
    let by = block_idx_y() as usize * T;
    let r = by + ty;
    let c = bx + tx;
    if r < a.shape(0) && c < a.shape(1) {
        tile[ty * (T + 1) + tx] = a[[r, c]];
    }
    sync_threads();
    let orow = bx + ty;
    let ocol = by + tx;
    if orow < out.shape(0) && ocol < out.shape(1) {
        out[[orow, ocol]] = tile[tx * (T + 1) + ty];
    }
}
