// Grid-stride loops: a fixed small grid covers any length with `(start..n).step_by(stride)`.
#[kernel]
pub fn grid_stride_scale(x: &mut [f64], factor: f64) {
    let stride = (grid_dim_x() * block_dim_x()) as usize;
    for i in (global_id_x()..x.len()).step_by(stride) {
        x[i] *= factor;
    }
}

// The same with a `while` loop and u32 counters, writing i squared.
#[kernel]
pub fn grid_stride_squares(out: &mut [u64]) {
    let stride = grid_dim_x() * block_dim_x();
    let mut i = block_idx_x() * block_dim_x() + thread_idx_x();
    while (i as usize) < out.len() {
        out[i as usize] = (i as u64) * (i as u64);
        i += stride;
    }
}

// 2-d grid-stride over rows (y) and columns (x).
#[kernel]
pub fn grid_stride_2d(a: &mut Array<i32, 2>) {
    let sy = (grid_dim_y() * block_dim_y()) as usize;
    let sx = (grid_dim_x() * block_dim_x()) as usize;
    for r in (global_id_y()..a.shape(0)).step_by(sy) {
        for c in (global_id_x()..a.shape(1)).step_by(sx) {
            a[[r, c]] += (r * 1000 + c) as i32;
        }
    }
}
