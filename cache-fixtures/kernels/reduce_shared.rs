// Tree reductions in static shared memory: one partial per block, and a grand total with one
// atomic per block.
const BLOCK: usize = 128;

#[kernel]
pub fn block_sum_f32(x: &[f32], partials: &mut [f32], total: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] += tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        partials[block_idx_x() as usize] = tile[0];
        atomic_add(&mut total[0], tile[0]);
    }
}

#[kernel]
pub fn block_sum_i64(x: &[i64], total: &mut Array<i64, 0>) {
    let tile = shared_array::<i64, BLOCK>();
    let t = thread_idx_x() as usize;
    let mut acc: i64 = 0;
    // Grid-stride accumulation first, so any grid covers any length.
    let step = (grid_dim_x() * block_dim_x()) as usize;
    for i in (global_id_x()..x.len()).step_by(step) {
        acc += x[i];
    }
    tile[t] = acc;
    sync_threads();
    let mut stride = BLOCK >> 1;
    while stride >= 1 {
        if t < stride {
            tile[t] = tile[t] + tile[t + stride];
        }
        sync_threads();
        stride >>= 1;
    }
    if t == 0 {
        atomic_add(&mut total[[]], tile[0]);
    }
}

#[kernel]
pub fn block_max_i32(x: &[i32], out: &mut [i32]) {
    let tile = shared_array::<i32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { i32::MIN };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] = tile[t].max(tile[t + stride]);
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        atomic_max(&mut out[0], tile[0]);
    }
}
