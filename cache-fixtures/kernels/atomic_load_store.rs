// Relaxed atomic loads and stores: values other threads wrote, read through global and shared
// arrays of every 32- and 64-bit type, and a flag one block publishes and the next spins on.

// Each thread stores a value of its own with atomic_store in the first half of each array and,
// after the barrier, reads its right-hand neighbour's (within the block, wrapping) with
// atomic_load into the second half; `s` goes through shared memory the same way.
#[kernel]
pub fn pass_right(a: &mut [i32], b: &mut [u32], c: &mut [i64], d: &mut [u64], e: &mut [usize], f: &mut [f32], g: &mut [f64]) {
    let s = shared_array::<u64, 64>();
    let w = shared_array::<f32, 64>();
    let n = block_dim_x() as usize;
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let j = i - t + (t + 1) % n;
    let half = a.len() / 2;
    atomic_store(&mut a[i], -(i as i32) - 1);
    atomic_store(&mut b[i], (i as u32).wrapping_mul(2_654_435_761));
    atomic_store(&mut c[i], (i as i64 - 40) << 35);
    atomic_store(&mut d[i], u64::MAX - i as u64);
    atomic_store(&mut e[i], i * 1_000_003);
    atomic_store(&mut f[i], i as f32 * 0.5 - 3.0);
    atomic_store(&mut g[i], i as f64 * 0.25 - 1e10);
    atomic_store(&mut s[t], (i as u64) << 40 | 7);
    atomic_store(&mut w[t], -(i as f32));
    sync_threads();
    let r = (t + 1) % n;
    a[half + i] = atomic_load(&a[j]);
    b[half + i] = atomic_load(&b[j]);
    c[half + i] = atomic_load(&c[j]);
    d[half + i] = atomic_load(&d[j]) ^ atomic_load(&s[r]);
    e[half + i] = atomic_load(&mut e[j]);
    f[half + i] = atomic_load(&f[j]) + atomic_load(&w[r]);
    g[half + i] = atomic_load(&g[j]);
}

// Running totals handed from block to block: the block with ticket k sums its chunk, waits
// until the block with ticket k - 1 has published its running total (spinning on its flag
// with atomic_load), adds its own and publishes it: the total first, then a fence, then the
// flag, so a block that sees the flag set sees the total too. Tickets, not block indices, set
// the order, so every block waited for has started (blocks need not be scheduled in order).
#[kernel]
pub fn chained_totals(x: &[u32], totals: &mut [u64], ready: &mut [u32], ticket: &mut [u32]) {
    let order = shared_array::<u32, 1>();
    let sum = shared_array::<u32, 1>();
    let t = thread_idx_x() as usize;
    if t == 0 {
        order[0] = atomic_add(&mut ticket[0], 1);
        sum[0] = 0;
    }
    sync_threads();
    let k = order[0] as usize;
    let i = k * block_dim_x() as usize + t;
    if i < x.len() {
        atomic_add(&mut sum[0], x[i]);
    }
    sync_threads();
    if t == 0 {
        let mut before = 0u64;
        if k > 0 {
            while atomic_load(&ready[k - 1]) == 0 {}
            threadfence();
            before = atomic_load(&totals[k - 1]);
        }
        atomic_store(&mut totals[k], before + sum[0] as u64);
        threadfence();
        atomic_store(&mut ready[k], 1);
    }
}
