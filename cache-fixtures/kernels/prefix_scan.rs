// Inclusive prefix sums within each block (Hillis-Steele, double-buffered in shared memory),
// plus each block's total.
const B: usize = 64;

#[kernel]
pub fn block_scan_i32(x: &[i32], out: &mut [i32], block_totals: &mut [i32]) {
    let ping = shared_array::<i32, B>();
    let pong = shared_array::<i32, B>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    ping[t] = if i < x.len() { x[i] } else { 0 };
    sync_threads();
    let mut offset = 1;
    let mut from_ping = true;
    while offset < B {
        if from_ping {
            pong[t] = if t >= offset { ping[t] + ping[t - offset] } else { ping[t] };
        } else {
            ping[t] = if t >= offset { pong[t] + pong[t - offset] } else { pong[t] };
        }
        sync_threads();
        from_ping = !from_ping;
        offset *= 2;
    }
    let v = if from_ping { ping[t] } else { pong[t] };
    if i < x.len() {
        out[i] = v;
    }
    if t == B - 1 {
        block_totals[block_idx_x() as usize] = v;
    }
}

// Adds the exclusive scan of the block totals (computed serially by one thread per block) to
// finish a multi-block scan.
#[kernel]
pub fn add_block_offsets(out: &mut [i32], block_totals: &[i32]) {
    let i = global_id_x();
    let b = block_idx_x() as usize;
    if i < out.len() {
        let mut off = 0;
        for k in 0..b {
            off += block_totals[k];
        }
        out[i] += off;
    }
}
