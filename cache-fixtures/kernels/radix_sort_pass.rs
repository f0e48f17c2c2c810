// One pass of a least-significant-digit radix sort on 4-bit digits, stable: every block counts
// its digits (shared-memory atomics), the host scans the counts digit-major, and one warp per
// block scatters its tile 32 keys at a time, ranking equal digits with ballot_sync.
const FULL: u32 = 0xffff_ffff;
const DIGITS: usize = 16;
const TILE: usize = 256;

fn digit(k: u32, shift: u32) -> usize {
    ((k >> shift) & 15) as usize
}

// counts[d * blocks + b]: keys of block b (a tile of TILE keys) with digit d.
#[kernel]
pub fn digit_counts(keys: &[u32], shift: u32, counts: &mut [u32]) {
    let local = shared_array::<u32, DIGITS>();
    let t = thread_idx_x() as usize;
    let b = block_idx_x() as usize;
    let blocks = grid_dim_x() as usize;
    if t < DIGITS {
        local[t] = 0;
    }
    sync_threads();
    for j in (t..TILE).step_by(block_dim_x() as usize) {
        let i = b * TILE + j;
        if i < keys.len() {
            atomic_add(&mut local[digit(keys[i], shift)], 1);
        }
    }
    sync_threads();
    if t < DIGITS {
        counts[t * blocks + b] = local[t];
    }
}

// One warp per block; offsets[d * blocks + b] is where block b's first key with digit d goes.
#[kernel]
pub fn scatter_digits(keys: &[u32], shift: u32, offsets: &[u32], out: &mut [u32]) {
    let next = shared_array::<u32, DIGITS>();
    let lane = lane_id() as usize;
    let b = block_idx_x() as usize;
    let blocks = grid_dim_x() as usize;
    if lane < DIGITS {
        next[lane] = offsets[lane * blocks + b];
    }
    sync_warp(FULL);
    for base in (0..TILE).step_by(32) {
        let i = b * TILE + base + lane;
        let live = i < keys.len();
        let k = if live { keys[i] } else { 0 };
        let d = digit(k, shift);
        let below = (1u32 << lane as u32) - 1;
        for e in 0..DIGITS {
            let same = ballot_sync(FULL, live && d == e);
            if live && d == e {
                out[(next[e] + (same & below).count_ones()) as usize] = k;
            }
            sync_warp(FULL);
            if lane == 0 {
                next[e] += same.count_ones();
            }
            sync_warp(FULL);
        }
    }
}
