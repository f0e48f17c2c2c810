// Block-wide scans built from warp scans (shfl_up_sync): an inclusive scan of i64 and an
// exclusive scan of f64, each warp's total carried through shared memory.
const FULL: u32 = 0xffff_ffff;
const BLOCK: usize = 128;

fn warp_inclusive_i64(v: i64) -> i64 {
    let lane = lane_id();
    let mut v = v;
    let mut d = 1u32;
    while d < 32 {
        let up = shfl_up_sync(FULL, v, d);
        if lane >= d {
            v += up;
        }
        d *= 2;
    }
    v
}

#[kernel]
pub fn block_inclusive_scan_i64(x: &[i64], y: &mut [i64]) {
    let totals = shared_array::<i64, 4>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let v = if i < x.len() { x[i] } else { 0 };
    let inc = warp_inclusive_i64(v);
    let w = t / 32;
    if lane_id() == 31 {
        totals[w] = inc;
    }
    sync_threads();
    let mut before = 0i64;
    for k in 0..w {
        before += totals[k];
    }
    if i < y.len() {
        y[i] = before + inc;
    }
}

#[kernel]
pub fn block_exclusive_scan_f64(x: &[f64], y: &mut [f64]) {
    let totals = shared_array::<f64, { BLOCK / 32 }>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let lane = lane_id();
    let v = if i < x.len() { x[i] } else { 0.0 };
    let mut inc = v;
    for k in 0..5 {
        let d = 1u32 << k;
        let up = shfl_up_sync(FULL, inc, d, 32);
        if lane >= d {
            inc += up;
        }
    }
    if lane == 31 {
        totals[t / 32] = inc;
    }
    sync_threads();
    if t < 32 {
        let mut s = if t < BLOCK / 32 { totals[t] } else { 0.0 };
        for k in 0..2 {
            let up = shfl_up_sync(FULL, s, 1u32 << k, 4);
            if lane % 4 >= 1u32 << k {
                s += up;
            }
        }
        if t < BLOCK / 32 {
            totals[t] = s;
        }
    }
    sync_threads();
    let w = t / 32;
    let base = if w == 0 { 0.0 } else { totals[w - 1] };
    if i < y.len() {
        y[i] = base + inc - v;
    }
}
