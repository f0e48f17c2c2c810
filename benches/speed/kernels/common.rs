//! What the corpus's kernel files share (`mod common;` in each): warp and block reductions.

pub const FULL: u32 = 0xffff_ffff;
/// Threads per block of the block-per-row kernels.
pub const BLOCK: usize = 256;

/// The sum of `v` over the warp, in lane 0.
pub fn warp_sum(v: f32) -> f32 {
    let mut v = v;
    let mut d = 16;
    while d > 0 {
        v += shfl_down_sync(FULL, v, d);
        d /= 2;
    }
    v
}

/// The sum of `v` over the block of `BLOCK` threads, in every thread; `red` is a shared array
/// of 32 the block passes in (free again when this returns).
pub fn block_sum(v: f32, red: &mut [f32]) -> f32 {
    let v = warp_sum(v);
    let t = thread_idx_x() as usize;
    if lane_id() == 0 {
        red[t / 32] = v;
    }
    sync_threads();
    let mut total = 0.0f32;
    for w in 0..BLOCK / 32 {
        total += red[w];
    }
    sync_threads();
    total
}

/// The maximum of `v` over the block of `BLOCK` threads, in every thread (as `block_sum`).
pub fn block_max(v: f32, red: &mut [f32]) -> f32 {
    let mut v = v;
    let mut d = 16;
    while d > 0 {
        v = v.max(shfl_down_sync(FULL, v, d));
        d /= 2;
    }
    let t = thread_idx_x() as usize;
    if lane_id() == 0 {
        red[t / 32] = v;
    }
    sync_threads();
    let mut m = f32::NEG_INFINITY;
    for w in 0..BLOCK / 32 {
        m = m.max(red[w]);
    }
    sync_threads();
    m
}
