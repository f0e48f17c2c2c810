// Reductions through the launch's dynamic shared memory: the block size is not a constant,
// so the tree halves `block_dim_x()` (a power of two) at run time.
#[kernel]
pub fn dyn_block_sum_f64(x: &[f64], partials: &mut [f64]) {
    let tile = dynamic_shared_array::<f64>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut stride = (block_dim_x() / 2) as usize;
    while stride > 0 {
        if t < stride {
            tile[t] += tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        partials[block_idx_x() as usize] = tile[0];
    }
}

// Reverses each block's slice of `x` in place, staged through dynamic shared memory.
#[kernel]
pub fn dyn_reverse_blocks(x: &mut [i32]) {
    let buf = dynamic_shared_array::<i32>();
    let t = thread_idx_x() as usize;
    let n = block_dim_x() as usize;
    let base = block_idx_x() as usize * n;
    // The last block may be partial: reverse only the elements it holds.
    let count = if base + n <= x.len() { n } else { x.len() - base };
    if t < count {
        buf[t] = x[base + t];
    }
    sync_threads();
    if t < count {
        x[base + t] = buf[count - 1 - t];
    }
}

// Two `dynamic_shared_array` calls view the same memory; atomics work on it.
#[kernel]
pub fn dyn_aliases(out: &mut [i32]) {
    let a = dynamic_shared_array::<i32>();
    let b = dynamic_shared_array::<i32>();
    let t = thread_idx_x() as usize;
    a[t] = t as i32 * 2;
    sync_threads();
    out[t] = b[t];
    sync_threads();
    atomic_add(&mut a[0], 1);
    sync_threads();
    if t == 0 {
        out[0] = a[0];
    }
}

/// 32 KiB of static shared memory beside the launch's dynamic part: with 24 KiB of that, the
/// block takes 56 KiB, past the 48 KiB a function gets without opting in (the launch opts in).
/// Each block stages its 128 elements in both arrays and writes their sum, reversed.
#[kernel]
pub fn dyn_beside_static(x: &[f32], out: &mut [f32]) {
    let fixed = shared_array::<f32, 8192>();
    let dynamic = dynamic_shared_array::<f32>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let last = dynamic.len() - 1;
    fixed[8191 - t] = if i < x.len() { x[i] } else { 0.0 };
    dynamic[last - t] = 2.0 * fixed[8191 - t];
    sync_threads();
    if i < out.len() {
        out[i] = fixed[8191 - (127 - t)] + dynamic[last - (127 - t)];
    }
}
