// Sum of an array: a tree reduction in shared memory per block, then one atomic per block.
const BLOCK: usize = 256;

#[kernel]
pub fn sum(x: &[f32], total: &mut [f32]) {
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
        atomic_add(&mut total[0], tile[0]);
    }
}
