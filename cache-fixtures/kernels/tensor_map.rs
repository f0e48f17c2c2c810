// Tensor maps and the tensor copy (sm_90): each block copies a 32 x 32 tile of `a` by the
// tensor memory accelerator (128-byte swizzled; a tile past the array's edges reads zeros
// there) and writes it transposed, reading the swizzle back with `swizzle::<3, 2, 3>`; launch
// with 256 threads a block and (cols / 32, rows / 32) blocks, rounded up.

#[kernel(max_threads = 256)]
pub fn transpose_tiles(map: &TensorMap<f32, 32, 32, 128>, rows: usize, cols: usize, out: &mut [f32]) {
    let tile = shared_array::<f32, 1024>();
    let bar = shared_array::<u64, 1>();
    let (x, y) = (block_idx_x() as usize * 32, block_idx_y() as usize * 32);
    if thread_idx_x() == 0 {
        mbarrier_init(&mut bar[0], 1);
        fence_proxy_async();
        mbarrier_arrive_expect_tx(&mut bar[0], 4096);
        cp_async_bulk_tensor_2d(&mut tile[0], map, x as i32, y as i32, &mut bar[0]);
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    for e in (thread_idx_x() as usize..1024).step_by(256) {
        let (r, c) = (e / 32, e % 32);
        if y + r < rows && x + c < cols {
            out[(x + c) * rows + y + r] = tile[swizzle::<3, 2, 3>(r * 32 + c)];
        }
    }
}
