//! The speed corpus's sorting pieces in kache (benches/speed/): a bitonic sort step, the digit
//! histograms of a radix sort and stream compaction; their CUDA C twins are in sort.cu beside
//! this file.

mod common;

use common::FULL;

const BINS: usize = 256;

// One compare-and-exchange step of a bitonic sort (stage `k`, partner distance `j`), out of
// place: each thread writes its own element, the smaller or the larger of it and its partner's
// (element i ^ j), as its position in the pair and the direction of its sequence say.
#[kernel]
pub fn bitonic_step(x: &[u32], y: &mut [u32], j: u32, k: u32) {
    let i = global_id_x();
    if i < x.len() {
        let p = i ^ j as usize;
        let (a, b) = (x[i], x[p]);
        let ascending = i & k as usize == 0;
        y[i] = if (i < p) == ascending { a.min(b) } else { a.max(b) };
    }
}

// The four 8-bit digit histograms of 32-bit keys (what each pass of an LSD radix sort needs),
// in one pass: per-block counts in shared memory, then one global atomic per bin and block.
// counts[d * 256 + b] counts the keys whose digit d is b.
#[kernel]
pub fn radix_hist(keys: &[u32], counts: &mut [u32]) {
    let local = shared_array::<u32, { 4 * BINS }>();
    let t = thread_idx_x() as usize;
    for d in 0..4 {
        local[d * BINS + t] = 0;
    }
    sync_threads();
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    for i in (global_id_x()..keys.len()).step_by(stride) {
        let key = keys[i];
        for d in 0..4 {
            let digit = (key >> (8 * d)) & 255;
            atomic_add(&mut local[d * BINS + digit as usize], 1);
        }
    }
    sync_threads();
    for d in 0..4 {
        let c = local[d * BINS + t];
        if c > 0 {
            atomic_add(&mut counts[d * BINS + t], c);
        }
    }
}

// Stream compaction: the elements above `threshold`, in no particular order, into `out`, and
// their number into count[0] (zero before the launch). One element per thread; each warp takes
// its place in `out` with one atomic (a ballot of the lanes that keep theirs), and each lane
// that keeps one writes it at the warp's place plus the keepers in the lanes below it.
#[kernel]
pub fn compact(x: &[f32], threshold: f32, out: &mut [f32], count: &mut [u32]) {
    let i = global_id_x();
    let keep = i < x.len() && x[i] > threshold;
    let mask = ballot_sync(FULL, keep);
    let lane = lane_id();
    let mut base = 0u32;
    if lane == 0 && mask != 0 {
        base = atomic_add(&mut count[0], mask.count_ones());
    }
    base = shfl_sync(FULL, base, 0);
    if keep {
        let below = mask & ((1u32 << lane) - 1);
        out[(base + below.count_ones()) as usize] = x[i];
    }
}
