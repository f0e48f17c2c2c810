// Shared memory handed to device functions (read and written there), a barrier inside a
// device function, a shared length given by a constant expression, a static bool table, and
// compound assignment on a 0-d array.
const BLOCK: usize = 32;
static FLAGS: [bool; 3] = [true, false, true];

fn tile_sum(t: &mut [f32], n: usize) -> f32 {
    let mut s = 0.0;
    for k in 0..n {
        s += t[k];
    }
    t[n - 1] = s;
    s
}

fn barrier_then_read(t: &[f32], k: usize) -> f32 {
    sync_threads();
    t[k]
}

// out[0] = sum of 0..32; out[1 + t] = tile[31 - t] read after a barrier in a device function.
#[kernel]
pub fn shared_to_device_fn(out: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    tile[t] = t as f32;
    sync_threads();
    let v = barrier_then_read(tile, BLOCK - 1 - t);
    sync_threads();
    if t == 0 {
        out[0] = tile_sum(tile, BLOCK);
    }
    out[1 + t] = v;
}

#[kernel]
pub fn shared_const_expr_len(out: &mut [i32], z: &mut Array<i32, 0>) {
    let t = thread_idx_x() as usize;
    let s = shared_array::<i32, { 2 * BLOCK }>();
    s[t] = t as i32;
    s[t + BLOCK] = 100;
    sync_threads();
    if t == 0 {
        out[0] = FLAGS[0] as i32 + FLAGS[1] as i32 * 2 + FLAGS[2] as i32 * 4;
        out[1] = s[BLOCK - 1] + s[2 * BLOCK - 1];
        z[[]] += 5;
        z[[]] <<= 1;
    }
}
