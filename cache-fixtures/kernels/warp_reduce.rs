// Reductions within a warp by shuffles: a tree with shfl_down_sync (lane 0 gets the sum), a
// butterfly with shfl_xor_sync (every lane gets the maximum), and a block sum of u64 built
// from warp sums.
const FULL: u32 = 0xffff_ffff;

fn warp_sum_f32(v: f32) -> f32 {
    let mut v = v;
    let mut d = 16;
    while d > 0 {
        v += shfl_down_sync(FULL, v, d);
        d /= 2;
    }
    v
}

fn warp_max_i64(v: i64) -> i64 {
    let mut v = v;
    for k in 0..5 {
        v = v.max(shfl_xor_sync(FULL, v, 1u32 << k));
    }
    v
}

// One sum per warp of 32 threads.
#[kernel]
pub fn warp_sums(x: &[f32], sums: &mut [f32]) {
    let i = global_id_x();
    let v = if i < x.len() { x[i] } else { 0.0 };
    let s = warp_sum_f32(v);
    if lane_id() == 0 {
        sums[i / 32] = s;
    }
}

// Every lane learns its warp's maximum.
#[kernel]
pub fn warp_max(x: &[i64], out: &mut [i64]) {
    let i = global_id_x();
    let v = if i < x.len() { x[i] } else { i64::MIN };
    let m = warp_max_i64(v);
    if i < out.len() {
        out[i] = m;
    }
}

// A block's sum of u64: warps reduce by shuffles, the first warp reduces the warp sums.
#[kernel]
pub fn block_sum_u64(x: &[u64], sums: &mut [u64]) {
    let partial = shared_array::<u64, 32>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let mut v = if i < x.len() { x[i] } else { 0 };
    let mut d = 16;
    while d > 0 {
        v = v.wrapping_add(shfl_down_sync(FULL, v, d));
        d /= 2;
    }
    if lane_id() == 0 {
        partial[t / 32] = v;
    }
    sync_threads();
    if t < 32 {
        let warps = (block_dim_x() + warp_size() - 1) as usize / 32;
        let mut w = if t < warps { partial[t] } else { 0 };
        let mut d = 16;
        while d > 0 {
            w += shfl_down_sync(FULL, w, d);
            d /= 2;
        }
        if t == 0 {
            sums[block_idx_x() as usize] = w;
        }
    }
}

// Whether all, any, and which lanes of each warp hold a positive value.
#[kernel]
pub fn warp_votes(x: &[i32], all: &mut [bool], any: &mut [bool], which: &mut [u32]) {
    let i = global_id_x();
    let p = i < x.len() && x[i] > 0;
    let a = all_sync(FULL, p);
    let s = any_sync(FULL, p);
    let w = ballot_sync(FULL, p);
    if i < x.len() && lane_id() == 0 {
        all[i / 32] = a;
        any[i / 32] = s;
        which[i / 32] = w;
    }
}
