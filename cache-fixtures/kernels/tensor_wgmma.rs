//! The warpgroup MMA of sm_90a: one warpgroup (128 threads) computes D = A·B + C for A of
//! 64 x 64 and B of 64 x N, given as Bᵀ (N x 64, B's columns as rows: K-major like A), from
//! shared-memory descriptors of tiles swizzled as the hardware reads them.

/// Rows of 64 16-bit elements (128 bytes): chunk `c` of row `r` sits at chunk `c ^ (r % 8)`.
fn at128(row: usize, col: usize) -> usize {
    swizzle::<3, 3, 3>(row * 64 + col)
}

/// K split into two tiles of rows of 32 elements (64 bytes), each swizzled in 8-row atoms.
fn at64(rows: usize, row: usize, col: usize) -> usize {
    (col / 32) * rows * 32 + swizzle::<2, 3, 3>(row * 32 + col % 32)
}

/// The element of the 64 x N accumulator that register `i` of thread `t` holds.
fn acc_at(t: usize, i: usize, n: usize) -> usize {
    let (w, lane) = (t / 32, t % 32);
    (16 * w + lane / 4 + 8 * ((i / 2) % 2)) * n + 8 * (i / 4) + 2 * (lane % 4) + i % 2
}

/// N = 128 through the 128-byte swizzle, the tiles staged by `cp_async` (16 bytes, 8
/// elements, per copy: the swizzle moves whole chunks).
#[kernel]
pub fn wg_tile<T: Half>(a: &[T], bt: &[T], c: &[f32], d: &mut [f32]) {
    let sa = shared_array::<T, 4096>();
    let sb = shared_array::<T, 8192>();
    let t = thread_idx_x() as usize;
    for j in 0..4 {
        let e = (j * 128 + t) * 8;
        cp_async_cg::<16>(&mut sa[at128(e / 64, e % 64)], &a[e]);
    }
    for j in 0..8 {
        let e = (j * 128 + t) * 8;
        cp_async_cg::<16>(&mut sb[at128(e / 64, e % 64)], &bt[e]);
    }
    cp_async_commit();
    cp_async_wait::<0>();
    // The copies were made by the generic proxy; `wgmma` reads through the async proxy.
    fence_proxy_async();
    sync_threads();
    let mut x = [0.0f32; 64];
    for i in 0..64 {
        x[i] = c[acc_at(t, i, 128)];
    }
    let mut acc = WgAcc::<f32, 128>(x);
    wgmma_fence();
    for k in 0..4 {
        acc = wgmma(wgmma_desc::<128, 64>(&sa[k * 16]), wgmma_desc::<128, 128>(&sb[k * 16]), acc);
    }
    wgmma_commit();
    acc = wgmma_wait::<0>(acc);
    for i in 0..64 {
        d[acc_at(t, i, 128)] = acc.x[i];
    }
}

/// N = 64 through the 64-byte swizzle, in two groups: the second K tile's products are
/// committed separately, and the first wait leaves one group pending.
#[kernel]
pub fn wg_narrow(a: &[bf16], bt: &[bf16], d: &mut [f32]) {
    let sa = shared_array::<bf16, 4096>();
    let sb = shared_array::<bf16, 4096>();
    let t = thread_idx_x() as usize;
    for j in 0..32 {
        let e = j * 128 + t;
        sa[at64(64, e / 64, e % 64)] = a[e];
        sb[at64(64, e / 64, e % 64)] = bt[e];
    }
    fence_proxy_async();
    sync_threads();
    let mut acc = WgAcc::<f32, 64>([0.0; 32]);
    wgmma_fence();
    for kt in 0..2 {
        for k in 0..2 {
            let da = wgmma_desc::<64, 64>(&sa[kt * 2048 + k * 16]);
            acc = wgmma(da, wgmma_desc::<64, 64>(&sb[kt * 2048 + k * 16]), acc);
        }
        wgmma_commit();
    }
    acc = wgmma_wait::<1>(acc);
    acc = wgmma_wait::<0>(acc);
    for i in 0..32 {
        d[acc_at(t, i, 64)] = acc.x[i];
    }
}

/// Rows of 32 `f32`s (128 bytes), read as tf32: chunk `c` of row `r` sits at chunk `c ^ (r % 8)`.
fn at32(row: usize, col: usize) -> usize {
    swizzle::<3, 2, 3>(row * 32 + col)
}

/// tf32 on the warpgroup MMA, warp-specialised: warpgroup 0 stages A (64 x 32) and Bᵀ (128 x 32)
/// and gives back registers (`setmaxnreg_dec`), warpgroups 1 and 2 take them and each multiply A
/// by its half of Bᵀ: columns 64 wg .. 64 wg + 64 of D (64 x 128).
#[kernel(max_threads = 384, min_blocks = 1)]
pub fn wg_tf32_split(a: &[f32], bt: &[f32], d: &mut [f32]) {
    let sa = shared_array::<f32, 2048>();
    let sb = shared_array::<f32, 4096>();
    let t = thread_idx_x() as usize;
    if t < 128 {
        setmaxnreg_dec::<56>();
        for j in 0..16 {
            let e = j * 128 + t;
            sa[at32(e / 32, e % 32)] = a[e];
        }
        for j in 0..32 {
            let e = j * 128 + t;
            sb[at32(e / 32, e % 32)] = bt[e];
        }
        fence_proxy_async();
    } else {
        setmaxnreg_inc::<224>();
    }
    sync_threads();
    if t >= 128 {
        let (wg, r) = (t / 128 - 1, t % 128);
        let mut acc = WgAcc::<f32, 64>([0.0; 32]);
        wgmma_fence();
        for k in 0..4 {
            acc = wgmma(wgmma_desc::<128, 64>(&sa[k * 8]), wgmma_desc::<128, 64>(&sb[wg * 64 * 32 + k * 8]), acc);
        }
        wgmma_commit();
        acc = wgmma_wait::<0>(acc);
        for i in 0..32 {
            let at = acc_at(r, i, 64);
            d[at / 64 * 128 + wg * 64 + at % 64] = acc.x[i];
        }
    }
}
