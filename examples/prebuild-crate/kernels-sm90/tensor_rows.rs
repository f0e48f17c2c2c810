// Tensor copies (sm_90): each block copies 8 rows of 32 `f32` from `map`'s array with the
// tensor memory accelerator and writes them doubled; rows past the array's end arrive as zeros
// and are not written. Launch with 256 threads a block, one block per 8 rows.
#[kernel(max_threads = 256)]
pub fn double_rows(map: &TensorMap<f32, 32, 8, 0>, rows: usize, out: &mut [f32]) {
    let tile = shared_array::<f32, 256>();
    let bar = shared_array::<u64, 1>();
    let t = thread_idx_x() as usize;
    let row0 = block_idx_x() as usize * 8;
    if t == 0 {
        mbarrier_init(&mut bar[0], 1);
        fence_proxy_async();
        mbarrier_arrive_expect_tx(&mut bar[0], 1024);
        cp_async_bulk_tensor_2d(&mut tile[0], map, 0, row0 as i32, &mut bar[0]);
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    let r = row0 + t / 32;
    if r < rows {
        out[r * 32 + t % 32] = 2.0 * tile[t];
    }
}
