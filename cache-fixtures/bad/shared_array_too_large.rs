#[kernel]
pub fn k(out: &mut [f32]) {
    let tile = shared_array::<f32, 1048576>();
    let t = thread_idx_x() as usize;
    tile[t] = 1.0;
    sync_threads();
    out[t] = tile[t];
}
