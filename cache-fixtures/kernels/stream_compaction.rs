// Ordered stream compaction with ballot_sync: count the kept elements of each block (a ballot
// per warp, population counts summed in shared memory), then, from the scanned counts, write
// each kept element at its block's offset plus the kept elements before it.
const FULL: u32 = 0xffff_ffff;
const WARPS: usize = 8;

fn keep(v: f32) -> bool {
    v.is_finite() && v > 0.5
}

#[kernel]
pub fn count_kept(x: &[f32], counts: &mut [u32]) {
    let per_warp = shared_array::<u32, WARPS>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let k = i < x.len() && keep(x[i]);
    let m = ballot_sync(FULL, k);
    if lane_id() == 0 {
        per_warp[t / 32] = m.count_ones();
    }
    sync_threads();
    if t == 0 {
        let mut c = 0;
        for w in 0..WARPS {
            c += per_warp[w];
        }
        counts[block_idx_x() as usize] = c;
    }
}

#[kernel]
pub fn scatter_kept(x: &[f32], offsets: &[u32], out: &mut [f32]) {
    let per_warp = shared_array::<u32, WARPS>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    let lane = lane_id();
    let k = i < x.len() && keep(x[i]);
    let m = ballot_sync(FULL, k);
    if lane == 0 {
        per_warp[t / 32] = m.count_ones();
    }
    sync_threads();
    if k {
        let mut before = offsets[block_idx_x() as usize];
        for w in 0..t / 32 {
            before += per_warp[w];
        }
        let lower = m & ((1u32 << lane) - 1);
        out[(before + lower.count_ones()) as usize] = x[i];
    }
}
