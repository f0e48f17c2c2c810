//! Bulk copies and mbarriers (sm_90): a ring of 4 shared stages of 256 `f32` fed by one
//! thread's `cp_async_bulk`s, each stage's "full" barrier completed by the copy's bytes, its
//! "empty" barrier by every thread's arrival once it has read the stage; the phases' parities
//! wrap as the ring does.

#[kernel(max_threads = 128)]
pub fn ring_sum(x: &[f32], out: &mut [f32]) {
    let tiles = shared_array::<f32, 1024>();
    let full = shared_array::<u64, 4>();
    let empty = shared_array::<u64, 4>();
    let t = thread_idx_x() as usize;
    let chunks = x.len() / 256;
    if t == 0 {
        for s in 0..4 {
            mbarrier_init(&mut full[s], 1);
            mbarrier_init(&mut empty[s], block_dim_x());
        }
    }
    // The barriers' initial state, visible to the copies' (async) proxy and to every thread.
    fence_proxy_async();
    sync_threads();
    if t == 0 {
        for c in 0..chunks.min(4) {
            mbarrier_arrive_expect_tx(&mut full[c], 1024);
            cp_async_bulk::<1024>(&mut tiles[c * 256], &x[c * 256], &mut full[c]);
        }
    }
    let mut acc = 0.0f32;
    for c in 0..chunks {
        let s = c % 4;
        let parity = ((c / 4) % 2) as u32;
        while !mbarrier_try_wait_parity(&full[s], parity) {}
        acc += tiles[s * 256 + t] + 2.0 * tiles[s * 256 + 128 + t];
        mbarrier_arrive(&mut empty[s]);
        if t == 0 && c + 4 < chunks {
            while !mbarrier_try_wait_parity(&empty[s], parity) {}
            mbarrier_arrive_expect_tx(&mut full[s], 1024);
            cp_async_bulk::<1024>(&mut tiles[s * 256], &x[(c + 4) * 256], &mut full[s]);
        }
    }
    out[block_idx_x() as usize * 128 + t] = acc;
    sync_threads();
    if t == 0 {
        for s in 0..4 {
            mbarrier_inval(&mut full[s]);
            mbarrier_inval(&mut empty[s]);
        }
    }
}
