//! The speed suite's matrix products on the tensor cores and in f32 (cases/gemm.rs measures
//! them): C = A·B with A M x K and B K x N row-major, every dimension a multiple of the block
//! tile (the host side sizes them so).
//!
//! - `gemm::<bf16>`, `gemm::<f16>`: the tensor cores' `mma` m16n8k16 with f32 accumulation.
//!   Blocks of 8 warps compute 128 x 128 tiles of C, each warp 64 x 32 (4 x 4 accumulators of
//!   16 x 8); K advances by 16 through a 4-stage ring of shared tiles filled by `cp_async`
//!   (8 KiB a stage, static shared memory of a power-of-two length, so that the compiler proves
//!   every shared index in bounds and the safe launch carries no check in the loop), so three
//!   tiles are in flight while one is multiplied. A's rows of 64 bytes are stored `swizzle::<2, 3, 3>` and B's of 256 bytes
//!   `swizzle::<3, 3, 4>`, so that the 8 rows each `ldmatrix` reads hit 8 different bank groups.
//!   Blocks run in groups of 8 block-rows (as Triton's matmul tutorial orders them), so that
//!   the tiles of A and B a wave of blocks reads stay in L2.
//! - `gemm_bias_gelu::<T>`: the same product, then `gelu(c + bias[col])` (erf form, as
//!   torch's default) in f32 before the one rounding to T.
//! - `gemm_tf32`: `mma` m16n8k8 on f32 (as tf32), 128 x 128 x 8 tiles, 4 stages of 8 KiB;
//!   A's fragments by `ldmatrix` over 32-bit elements, B's by loads from a swizzled tile.
//! - `sgemm`: f32 on the FMA units, no tensor cores: 128 x 128 x 8 tiles, 4 stages by 4-byte
//!   (A, transposed on the way) and 16-byte (B) `cp_async`, each of 256 threads accumulating an
//!   8 x 8 block of C in registers from 8 + 8 values per step of K.

const BM: usize = 128;
const BN: usize = 128;
const BK: usize = 16;
const STAGES: usize = 4;
const A_TILE: usize = BM * BK;
const STAGE: usize = A_TILE + BK * BN;

/// Where element (r, c) of a stage's A tile (BM x BK) is: rows of 32 bytes, the 16-byte
/// chunks of rows 4-7 of every 8 swapped, so that the 8 rows an `ldmatrix` reads hit 8 bank
/// groups.
fn a_at(r: usize, c: usize) -> usize {
    swizzle::<1, 3, 3>(r * BK + c)
}

/// Where element (r, c) of a stage's B tile (BK x BN) is, after the A tile.
fn b_at(r: usize, c: usize) -> usize {
    A_TILE + swizzle::<3, 3, 4>(r * BN + c)
}

/// The block's tile of C: blocks in groups of 8 block-rows, column-major within a group.
fn block_tile(m: usize, n: usize) -> (usize, usize) {
    grouped_tile(m, n, BM, BN)
}

/// The block's tile (`bm` x `bn`) of C, blocks in groups of 8 block-rows.
fn grouped_tile(m: usize, n: usize, bm: usize, bn: usize) -> (usize, usize) {
    tile_origin(m, n, bm, bn, block_idx_x() as usize)
}

/// The origin (row, column) of tile number `bid` (`bm` x `bn`) of C, tiles numbered in groups of
/// 8 tile-rows, column-major within a group (as Triton's matmul tutorial orders its programs),
/// so that the tiles of A and B a wave of blocks reads stay in L2.
fn tile_origin(m: usize, n: usize, bm: usize, bn: usize, bid: usize) -> (usize, usize) {
    let (grid_m, grid_n) = (m / bm, n / bn);
    let per_group = 8 * grid_n;
    let first = bid / per_group * 8;
    let rows = (grid_m - first).min(8);
    let within = bid % per_group;
    ((first + within % rows) * bm, within / rows * bn)
}

/// The block's 128 x 128 tile of A·B: this warp's 64 x 32 part, as 4 x 4 accumulators. The
/// shared ring is declared here and every access to it written here, so that the compiler sees
/// each index's bounds and alignment (they are constant-folded out of the checked code).
fn mainloop<T: Half>(a: &[T], b: &[T], m: usize, n: usize, k: usize) -> [[FragC<f32, 16, 8>; 4]; 4] {
    let sm = shared_array::<T, { STAGES * STAGE }>();
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (row0, col0) = block_tile(m, n);
    let (wm, wn) = (warp / 4 * 64, warp % 4 * 32);
    let tiles = k / BK;
    // Each thread copies one 16-byte chunk of A (row tid / 2, chunk tid % 2) and one of B (row
    // tid / 16, chunk tid % 16) per stage.
    let (ar, ac) = (tid / 2, tid % 2 * 8);
    let (br, bc) = (tid / 16, tid % 16 * 8);
    let mut acc = [[FragC::<f32, 16, 8>([0.0; 4]); 4]; 4];
    for s in 0..STAGES - 1 {
        if s < tiles {
            let base = s * STAGE;
            cp_async_cg::<16>(&mut sm[base + a_at(ar, ac)], &a[(row0 + ar) * k + s * BK + ac]);
            cp_async_cg::<16>(&mut sm[base + b_at(br, bc)], &b[(s * BK + br) * n + col0 + bc]);
        }
        cp_async_commit();
    }
    for kt in 0..tiles {
        cp_async_wait::<{ STAGES - 2 }>();
        sync_threads();
        // The stage tile kt + 3 goes into was read in step kt - 1, which every warp has
        // finished: it passed the barrier above.
        let next = kt + STAGES - 1;
        if next < tiles {
            let base = next % STAGES * STAGE;
            cp_async_cg::<16>(&mut sm[base + a_at(ar, ac)], &a[(row0 + ar) * k + next * BK + ac]);
            cp_async_cg::<16>(&mut sm[base + b_at(br, bc)], &b[(next * BK + br) * n + col0 + bc]);
        }
        cp_async_commit();
        let base = kt % STAGES * STAGE;
        for kk in 0..BK / 16 {
            let mut fa = [FragA::<T, 16, 8, 16>([T::ZERO; 8]); 4];
            for mi in 0..4 {
                fa[mi] = FragA::<T, 16, 8, 16>(ldmatrix_x4(&sm[base + a_at(wm + 16 * mi + lane % 16, 16 * kk + lane / 16 * 8)]));
            }
            let mut fb = [FragB::<T, 16, 8, 16>([T::ZERO; 4]); 4];
            for nj in 0..2 {
                // Lanes 8j..8j+8 name the rows of matrix j: k 0-7 and 8-15 of the first 8
                // columns, then of the next 8.
                let j = lane / 8;
                let w = ldmatrix_x4_trans(&sm[base + b_at(16 * kk + j % 2 * 8 + lane % 8, wn + 16 * nj + j / 2 * 8)]);
                fb[2 * nj] = FragB::<T, 16, 8, 16>([w[0], w[1], w[2], w[3]]);
                fb[2 * nj + 1] = FragB::<T, 16, 8, 16>([w[4], w[5], w[6], w[7]]);
            }
            for mi in 0..4 {
                for ni in 0..4 {
                    acc[mi][ni] = mma(fa[mi], fb[ni], acc[mi][ni]);
                }
            }
        }
    }
    acc
}

/// C = A·B over 16-bit floats, f32 accumulation; launch with one block of 256 threads per
/// 128 x 128 tile of C.
#[kernel(max_threads = 256, min_blocks = 2)]
pub fn gemm<T: Half>(a: &[T], b: &[T], c: &mut [T], m: usize, n: usize, k: usize) {
    let acc = mainloop(a, b, m, n, k);
    let (row0, col0) = block_tile(m, n);
    let lane = thread_idx_x() as usize % 32;
    let warp = thread_idx_x() as usize / 32;
    let (r0, c0) = (row0 + warp / 4 * 64 + lane / 4, col0 + warp % 4 * 32 + lane % 4 * 2);
    for mi in 0..4 {
        for ni in 0..4 {
            let v = acc[mi][ni].x;
            let (r, col) = (r0 + 16 * mi, c0 + 8 * ni);
            c[r * n + col] = v[0] as T;
            c[r * n + col + 1] = v[1] as T;
            c[(r + 8) * n + col] = v[2] as T;
            c[(r + 8) * n + col + 1] = v[3] as T;
        }
    }
}

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (x * 0.70710678118654752).erf())
}

/// C = gelu(A·B + bias), bias one value per column, in f32 before the rounding to T.
#[kernel(max_threads = 256, min_blocks = 2)]
pub fn gemm_bias_gelu<T: Half>(a: &[T], b: &[T], bias: &[T], c: &mut [T], m: usize, n: usize, k: usize) {
    let acc = mainloop(a, b, m, n, k);
    let (row0, col0) = block_tile(m, n);
    let lane = thread_idx_x() as usize % 32;
    let warp = thread_idx_x() as usize / 32;
    let (r0, c0) = (row0 + warp / 4 * 64 + lane / 4, col0 + warp % 4 * 32 + lane % 4 * 2);
    for mi in 0..4 {
        for ni in 0..4 {
            let v = acc[mi][ni].x;
            let (r, col) = (r0 + 16 * mi, c0 + 8 * ni);
            let (b0, b1) = (bias[col] as f32, bias[col + 1] as f32);
            c[r * n + col] = gelu(v[0] + b0) as T;
            c[r * n + col + 1] = gelu(v[1] + b1) as T;
            c[(r + 8) * n + col] = gelu(v[2] + b0) as T;
            c[(r + 8) * n + col + 1] = gelu(v[3] + b1) as T;
        }
    }
}

const TK: usize = 8;
const TA_TILE: usize = BM * TK;
const T_STAGE: usize = TA_TILE + TK * BN;

/// A tf32 stage's A tile (BM x TK): rows of 32 bytes, the 16-byte chunks of rows 4-7 of every
/// 8 swapped.
fn ta_at(r: usize, c: usize) -> usize {
    swizzle::<1, 2, 3>(r * TK + c)
}

/// Its B tile (TK x BN): rows of 512 bytes, pairs of chunks spread by the row, so that the 4
/// rows a B fragment reads hit 4 different bank groups.
fn tb_at(r: usize, c: usize) -> usize {
    TA_TILE + swizzle::<2, 3, 4>(r * BN + c)
}

/// C = A·B on the tensor cores as tf32 (the low 13 bits of each input's mantissa ignored), f32
/// accumulation: 128 x 128 tiles as `gemm`, K by 8 in a 4-stage ring of 8 KiB stages; A's
/// fragments by `ldmatrix` over 32-bit elements, B's by loads from a swizzled tile.
#[kernel(max_threads = 256, min_blocks = 2)]
pub fn gemm_tf32(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    let sm = shared_array::<f32, { STAGES * T_STAGE }>();
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let (row0, col0) = block_tile(m, n);
    let (wm, wn) = (warp / 4 * 64, warp % 4 * 32);
    let tiles = k / TK;
    // Copies per stage: A's row tid / 2 (chunk tid % 2), B's row tid / 32 (chunk tid % 32), 16
    // bytes each.
    let (ar, ac) = (tid / 2, tid % 2 * 4);
    let (br, bc) = (tid / 32, tid % 32 * 4);
    let mut acc = [[FragC::<f32, 16, 8>([0.0; 4]); 4]; 4];
    for s in 0..STAGES - 1 {
        if s < tiles {
            let base = s * T_STAGE;
            cp_async_cg::<16>(&mut sm[base + ta_at(ar, ac)], &a[(row0 + ar) * k + s * TK + ac]);
            cp_async_cg::<16>(&mut sm[base + tb_at(br, bc)], &b[(s * TK + br) * n + col0 + bc]);
        }
        cp_async_commit();
    }
    for kt in 0..tiles {
        cp_async_wait::<{ STAGES - 2 }>();
        sync_threads();
        let next = kt + STAGES - 1;
        if next < tiles {
            let base = next % STAGES * T_STAGE;
            cp_async_cg::<16>(&mut sm[base + ta_at(ar, ac)], &a[(row0 + ar) * k + next * TK + ac]);
            cp_async_cg::<16>(&mut sm[base + tb_at(br, bc)], &b[(next * TK + br) * n + col0 + bc]);
        }
        cp_async_commit();
        let base = kt % STAGES * T_STAGE;
        for kk in 0..TK / 8 {
            let mut fa = [FragA::<f32, 16, 8, 8>([0.0; 4]); 4];
            for mi in 0..4 {
                // Matrices of 8 rows x 4 f32: rows 0-7 then 8-15 of k 0-3, then of k 4-7.
                fa[mi] = FragA::<f32, 16, 8, 8>(ldmatrix_x4(&sm[base + ta_at(wm + 16 * mi + lane % 16, 8 * kk + lane / 16 * 4)]));
            }
            let mut fb = [FragB::<f32, 16, 8, 8>([0.0; 2]); 4];
            for ni in 0..4 {
                let col = wn + 8 * ni + g;
                fb[ni] = FragB::<f32, 16, 8, 8>([sm[base + tb_at(8 * kk + t, col)], sm[base + tb_at(8 * kk + t + 4, col)]]);
            }
            for mi in 0..4 {
                for ni in 0..4 {
                    acc[mi][ni] = mma(fa[mi], fb[ni], acc[mi][ni]);
                }
            }
        }
    }
    let (r0, c0) = (row0 + wm + g, col0 + wn + 2 * t);
    for mi in 0..4 {
        for ni in 0..4 {
            let v = acc[mi][ni].x;
            let (r, col) = (r0 + 16 * mi, c0 + 8 * ni);
            c[r * n + col] = v[0];
            c[r * n + col + 1] = v[1];
            c[(r + 8) * n + col] = v[2];
            c[(r + 8) * n + col + 1] = v[3];
        }
    }
}

const SK: usize = 8;
const S_STAGES: usize = 4;

/// C = A·B in f32 on the FMA units.
#[kernel(max_threads = 256, min_blocks = 2)]
pub fn sgemm(a: &[f32], b: &[f32], c: &mut [f32], m: usize, n: usize, k: usize) {
    // Stage s: A transposed (SK x BM: k-major, so that a thread's 8 rows are two runs of 4),
    // then B (SK x BN).
    let sa = shared_array::<f32, { S_STAGES * SK * BM }>();
    let sb = shared_array::<f32, { S_STAGES * SK * BN }>();
    let tid = thread_idx_x() as usize;
    let (tx, ty) = (tid % 16, tid / 16);
    let (row0, col0) = block_tile(m, n);
    let tiles = k / SK;
    // Copies: A's row tid / 2, its k's 4 (tid % 2) .. + 4, one element each (transposing);
    // B's row tid / 32, columns 4 (tid % 32) .. + 4 as one 16-byte chunk.
    let (ar, ak) = (tid / 2, tid % 2 * 4);
    let (br, bc) = (tid / 32, tid % 32 * 4);
    let mut acc = [[0.0f32; 8]; 8];
    for s in 0..S_STAGES - 1 {
        if s < tiles {
            for j in 0..4 {
                cp_async::<4>(&mut sa[(s * SK + ak + j) * BM + ar], &a[(row0 + ar) * k + s * SK + ak + j]);
            }
            cp_async_cg::<16>(&mut sb[(s * SK + br) * BN + bc], &b[(s * SK + br) * n + col0 + bc]);
        }
        cp_async_commit();
    }
    for kt in 0..tiles {
        cp_async_wait::<{ S_STAGES - 2 }>();
        sync_threads();
        let next = kt + S_STAGES - 1;
        if next < tiles {
            let s = next % S_STAGES;
            for j in 0..4 {
                cp_async::<4>(&mut sa[(s * SK + ak + j) * BM + ar], &a[(row0 + ar) * k + next * SK + ak + j]);
            }
            cp_async_cg::<16>(&mut sb[(s * SK + br) * BN + bc], &b[(next * SK + br) * n + col0 + bc]);
        }
        cp_async_commit();
        let s = kt % S_STAGES;
        for kk in 0..SK {
            let row = (s * SK + kk) * BM;
            let mut ra = [0.0f32; 8];
            let mut rb = [0.0f32; 8];
            for i in 0..4 {
                ra[i] = sa[row + 4 * ty + i];
                ra[4 + i] = sa[row + 64 + 4 * ty + i];
                rb[i] = sb[row + 4 * tx + i];
                rb[4 + i] = sb[row + 64 + 4 * tx + i];
            }
            for i in 0..8 {
                for j in 0..8 {
                    acc[i][j] += ra[i] * rb[j];
                }
            }
        }
    }
    for i in 0..8 {
        let r = row0 + 4 * ty + i % 4 + i / 4 * 64;
        for j in 0..8 {
            c[r * n + col0 + 4 * tx + j % 4 + j / 4 * 64] = acc[i][j];
        }
    }
}

/// The `mma.sync` m16n8k16 bf16 throughput: each warp runs 8 independent accumulators through
/// `iters` rounds (every `mma` of a round independent of the others, as a GEMM's are).
#[kernel(max_threads = 256, min_blocks = 2)]
pub fn mma_peak(x: &[bf16], out: &mut [f32], iters: u32) {
    let lane = lane_id() as usize;
    let a = FragA::<bf16, 16, 8, 16>([x[lane], x[lane + 1], x[lane + 2], x[lane + 3], x[lane + 4], x[lane + 5], x[lane + 6], x[lane + 7]]);
    let b = FragB::<bf16, 16, 8, 16>([x[lane + 8], x[lane + 9], x[lane + 10], x[lane + 11]]);
    let mut acc = [FragC::<f32, 16, 8>([0.0; 4]); 8];
    for _ in 0..iters {
        for i in 0..8 {
            acc[i] = mma(a, b, acc[i]);
        }
    }
    let mut s = 0.0f32;
    for i in 0..8 {
        s += acc[i].x[0] + acc[i].x[1] + acc[i].x[2] + acc[i].x[3];
    }
    out[global_id_x()] = s;
}

// The warpgroup MMA of sm_90a (Hopper): `gemm_wg::<T>` computes C = A·Bᵀ with Bᵀ given N x K
// row-major (as a linear layer's weight is stored: both operands K-major, the layout `wgmma`
// reads). Blocks of two warpgroups (256 threads) compute 128 x 256 tiles of C, each warpgroup
// 64 x 256 as one `WgAcc<f32, 256>`; K advances by 64 (four `wgmma` m64n256k16 a step) through a
// 4-stage ring of 48 KiB stages in dynamic shared memory (192 KiB), filled by `cp_async` two
// steps ahead, so that one step's `wgmma`s run while the next is waited for (`wgmma_wait::<1>`):
// a stage is refilled only after the `wgmma`s that read it two steps before are done. Tiles
// are 128-byte swizzled rows of 64 elements, as `wgmma_desc::<128, _>` reads them.

const WM: usize = 128;
const WN: usize = 256;
const WK: usize = 64;
const W_STAGES: usize = 4;
const W_A: usize = WM * WK;
const W_STAGE: usize = W_A + WN * WK;

/// Element (r, c) of a 128-byte swizzled tile of 64-element rows.
fn w_at(r: usize, c: usize) -> usize {
    swizzle::<3, 3, 3>(r * WK + c)
}

/// The block's tile of C (128 x 256).
fn w_tile(m: usize, n: usize) -> (usize, usize) {
    grouped_tile(m, n, WM, WN)
}

/// Step `kt`'s tiles of A (128 x 64) and Bᵀ (256 x 64) into stage `slot`: 12 copies of 16
/// bytes a thread.
fn w_load<T: Half>(sm: &mut [T], a: &[T], bt: &[T], slot: usize, kt: usize, row0: usize, col0: usize, k: usize, tid: usize) {
    let base = slot * W_STAGE;
    for j in 0..4 {
        let e = j * 256 + tid;
        let (r, c) = (e / 8, e % 8 * 8);
        cp_async_cg::<16>(&mut sm[base + w_at(r, c)], &a[(row0 + r) * k + kt * WK + c]);
    }
    for j in 0..8 {
        let e = j * 256 + tid;
        let (r, c) = (e / 8, e % 8 * 8);
        cp_async_cg::<16>(&mut sm[base + W_A + w_at(r, c)], &bt[(col0 + r) * k + kt * WK + c]);
    }
}

/// One K step of warpgroup `wg` (its 64 rows of the tile) on the stage at `base`: four
/// `wgmma` m64n256k16 in one committed group.
fn w_step<T: Half>(sm: &[T], base: usize, wg: usize, acc: WgAcc<f32, 256>) -> WgAcc<f32, 256> {
    let mut acc = acc;
    wgmma_fence();
    for kk in 0..WK / 16 {
        let da = wgmma_desc::<128, 64>(&sm[base + wg * 64 * WK + kk * 16]);
        let db = wgmma_desc::<128, 256>(&sm[base + W_A + kk * 16]);
        acc = wgmma(da, db, acc);
    }
    wgmma_commit();
    acc
}

/// The block's 128 x 256 tile of A·Bᵀ: this warpgroup's 64 x 256 part.
fn w_mainloop<T: Half>(a: &[T], bt: &[T], m: usize, n: usize, k: usize) -> WgAcc<f32, 256> {
    let sm = dynamic_shared_array::<T>();
    let tid = thread_idx_x() as usize;
    let wg = tid / 128;
    let (row0, col0) = w_tile(m, n);
    let tiles = k / WK;
    for s in 0..2 {
        if s < tiles {
            w_load(sm, a, bt, s, s, row0, col0, k, tid);
        }
        cp_async_commit();
    }
    let mut acc = WgAcc::<f32, 256>([0.0; 128]);
    for kt in 0..tiles {
        // Step kt's copies are done (at most the one group of step kt + 1 pending), visible to
        // the async proxy, and every thread's are (the barrier).
        cp_async_wait::<1>();
        fence_proxy_async();
        sync_threads();
        // Stage (kt + 2) % 4 was read by step kt - 2's `wgmma`s, which both warpgroups waited
        // for (`wgmma_wait::<1>` at the end of step kt - 1) before the barrier above.
        if kt + 2 < tiles {
            w_load(sm, a, bt, (kt + 2) % W_STAGES, kt + 2, row0, col0, k, tid);
        }
        cp_async_commit();
        acc = w_step(sm, kt % W_STAGES * W_STAGE, wg, acc);
        acc = wgmma_wait::<1>(acc);
    }
    wgmma_wait::<0>(acc)
}

/// Where pair j (elements 2j, 2j + 1 of an accumulator) of thread t of the tile's warpgroup wg
/// (0 for rows 0..64, 1 for rows 64..128) is in C: row, column. Each kernel stores its pairs
/// in a loop of its own, `for e in 0..2 { c[2 * h + e] = .. }` with `h = r * (n / 2) + col / 2`,
/// so that the pair is one 4-byte (8-byte for f32) store where `c` is aligned (docs/language.md,
/// wide accesses: the analysis sees the kernel's own array parameters, not a helper's), in safe
/// launches too: the loop's bounds check is versioned once for the pair (H100 run 9: the safe
/// `gemm_tma` 9% faster at 4096^3). `gemm_ws`'s consumers write the pair as two statements
/// instead (one check each): with the loop its safe code spills 1.5 KiB a thread at 168
/// registers; so do the `_bias_gelu` kernels, whose safe launches were 1.3 to 1.5 times slower
/// with the loop (run 9 against run 8).
fn w_pair(m: usize, n: usize, wg: usize, t: usize, j: usize) -> (usize, usize) {
    let (row0, col0) = w_tile(m, n);
    pair_at(row0, col0, wg, t, j)
}

/// C = A·Bᵀ over 16-bit floats, f32 accumulation, on sm_90a; launch with one block of 256
/// threads per 128 x 256 tile of C and 192 KiB of dynamic shared memory.
#[kernel(max_threads = 256, min_blocks = 1)]
pub fn gemm_wg<T: Half>(a: &[T], bt: &[T], c: &mut [T], m: usize, n: usize, k: usize) {
    let acc = w_mainloop(a, bt, m, n, k);
    let tid = thread_idx_x() as usize;
    for j in 0..64 {
        let (r, col) = w_pair(m, n, tid / 128, tid % 128, j);
        let h = r * (n / 2) + col / 2;
        for e in 0..2 {
            c[2 * h + e] = acc.x[2 * j + e] as T;
        }
    }
}

/// C = gelu(A·Bᵀ + bias) on sm_90a, as `gemm_bias_gelu` computes it: bias one value per
/// column, in f32 before the one rounding to T.
#[kernel(max_threads = 256, min_blocks = 1)]
pub fn gemm_wg_bias_gelu<T: Half>(a: &[T], bt: &[T], bias: &[T], c: &mut [T], m: usize, n: usize, k: usize) {
    let acc = w_mainloop(a, bt, m, n, k);
    let tid = thread_idx_x() as usize;
    for j in 0..64 {
        let (r, col) = w_pair(m, n, tid / 128, tid % 128, j);
        let (h, hc) = (r * (n / 2) + col / 2, col / 2);
        // Both values first: `erf`'s branches between the two stores would keep them apart.
        let v0 = gelu(acc.x[2 * j] + bias[2 * hc] as f32) as T;
        let v1 = gelu(acc.x[2 * j + 1] + bias[2 * hc + 1] as f32) as T;
        c[2 * h] = v0;
        c[2 * h + 1] = v1;
    }
}

// `gemm_tma::<T>`: `gemm_wg`'s tiles and ring, filled by the tensor memory accelerator instead
// of every thread's `cp_async`s. Thread 0 arms a stage's barrier with the stage's bytes and
// issues two tensor copies (A's 128 x 64 box and Bᵀ's 256 x 64 box, both 128-byte swizzled as
// `wgmma_desc::<128, _>` reads them); every thread waits on the barrier's phase. A stage is
// refilled two steps ahead, after the barrier that follows every warpgroup's wait for the
// `wgmma`s that read it.

/// Step `kt`'s boxes into stage `slot`, completing on `full[slot]`.
fn t_load<T: Half>(
    sm: &mut [T],
    ma: &TensorMap<T, 64, 128, 128>,
    mb: &TensorMap<T, 64, 256, 128>,
    full: &mut [u64],
    slot: usize,
    kt: usize,
    row0: usize,
    col0: usize,
) {
    let base = slot * W_STAGE;
    mbarrier_arrive_expect_tx(&mut full[slot], (W_STAGE * 2) as u32);
    cp_async_bulk_tensor_2d(&mut sm[base], ma, (kt * WK) as i32, row0 as i32, &mut full[slot]);
    cp_async_bulk_tensor_2d(&mut sm[base + W_A], mb, (kt * WK) as i32, col0 as i32, &mut full[slot]);
}

/// The block's 128 x 256 tile of A·Bᵀ through tensor copies: this warpgroup's 64 x 256 part.
fn t_mainloop<T: Half>(
    ma: &TensorMap<T, 64, 128, 128>,
    mb: &TensorMap<T, 64, 256, 128>,
    m: usize,
    n: usize,
    k: usize,
) -> WgAcc<f32, 256> {
    let sm = dynamic_shared_array::<T>();
    let full = shared_array::<u64, W_STAGES>();
    let tid = thread_idx_x() as usize;
    let wg = tid / 128;
    let (row0, col0) = w_tile(m, n);
    let tiles = k / WK;
    if tid == 0 {
        for s in 0..W_STAGES {
            mbarrier_init(&mut full[s], 1);
        }
        // The barriers' initial state, visible to the tensor copies that complete on them.
        fence_proxy_async();
        for s in 0..2 {
            if s < tiles {
                t_load(sm, ma, mb, full, s, s, row0, col0);
            }
        }
    }
    sync_threads();
    let mut acc = WgAcc::<f32, 256>([0.0; 128]);
    for kt in 0..tiles {
        let slot = kt % W_STAGES;
        while !mbarrier_try_wait_parity(&full[slot], ((kt / W_STAGES) % 2) as u32) {}
        // Stage (kt + 2) % 4 was read by step kt - 2's `wgmma`s, which both warpgroups waited
        // for (`wgmma_wait::<1>` at the end of step kt - 1) before this barrier.
        sync_threads();
        if tid == 0 && kt + 2 < tiles {
            t_load(sm, ma, mb, full, (kt + 2) % W_STAGES, kt + 2, row0, col0);
        }
        acc = w_step(sm, slot * W_STAGE, wg, acc);
        acc = wgmma_wait::<1>(acc);
    }
    wgmma_wait::<0>(acc)
}

/// C = A·Bᵀ as `gemm_wg` computes it, its tiles brought by tensor copies: `ma` maps A (M x K)
/// in 128 x 64 boxes, `mb` maps Bᵀ (N x K) in 256 x 64 boxes, both swizzled by 128 bytes.
/// Launch as `gemm_wg` (256 threads per 128 x 256 tile of C, 192 KiB of dynamic shared memory).
#[kernel(max_threads = 256, min_blocks = 1)]
pub fn gemm_tma<T: Half>(ma: &TensorMap<T, 64, 128, 128>, mb: &TensorMap<T, 64, 256, 128>, c: &mut [T], m: usize, n: usize, k: usize) {
    let acc = t_mainloop(ma, mb, m, n, k);
    let tid = thread_idx_x() as usize;
    for j in 0..64 {
        let (r, col) = w_pair(m, n, tid / 128, tid % 128, j);
        let h = r * (n / 2) + col / 2;
        for e in 0..2 {
            c[2 * h + e] = acc.x[2 * j + e] as T;
        }
    }
}

/// C = gelu(A·Bᵀ + bias), `gemm_wg_bias_gelu` through tensor copies.
#[kernel(max_threads = 256, min_blocks = 1)]
pub fn gemm_tma_bias_gelu<T: Half>(
    ma: &TensorMap<T, 64, 128, 128>,
    mb: &TensorMap<T, 64, 256, 128>,
    bias: &[T],
    c: &mut [T],
    m: usize,
    n: usize,
    k: usize,
) {
    let acc = t_mainloop(ma, mb, m, n, k);
    let tid = thread_idx_x() as usize;
    for j in 0..64 {
        let (r, col) = w_pair(m, n, tid / 128, tid % 128, j);
        let (h, hc) = (r * (n / 2) + col / 2, col / 2);
        // Both values first: `erf`'s branches between the two stores would keep them apart.
        let v0 = gelu(acc.x[2 * j] + bias[2 * hc] as f32) as T;
        let v1 = gelu(acc.x[2 * j + 1] + bias[2 * hc + 1] as f32) as T;
        c[2 * h] = v0;
        c[2 * h + 1] = v1;
    }
}

// `gemm_ws::<T>`: `gemm_tma`'s tiles, ring and tensor copies, warp-specialised and persistent as
// CUTLASS's Hopper kernels are: a third warpgroup (threads 0..128) only feeds the ring, its
// thread 0 issuing the copies, while the two consumer warpgroups (threads 128..384) each compute
// 64 x 256 of a tile. Each stage has two barriers, `full` (its boxes' bytes have landed) and
// `empty` (every consumer thread is done reading it): no `sync_threads` in the main loop, and
// the producer runs up to four stages ahead. A block computes tiles `block_idx_x()`,
// `+ grid_dim_x()`, ... (launch one block per SM, or one per tile): the producer goes on to the
// next tile's stages while the consumers store the last one's C, so neither the ring's filling
// nor the epilogue stalls the copies. Both sides count steps across tiles (`it`), which gives
// each step's stage and barrier phase. The producer warpgroup gives back registers
// (`setmaxnreg_dec::<56>`) that the consumers take (`setmaxnreg_inc::<224>`): 168 a thread at
// launch would leave the consumers' 128 accumulator registers short of room. The plan balances
// (128 x 112 given, 256 x 56 taken) because ptxas gives these kernels 168 registers (`ptxas -v`);
// only unchecked launches, whose caller promises that, run it (safe ones run without it).

/// The producer: every step of every tile of this block into the ring.
fn ws_produce<T: Half>(
    sm: &mut [T],
    ma: &TensorMap<T, 64, 128, 128>,
    mb: &TensorMap<T, 64, 256, 128>,
    full: &mut [u64],
    empty: &[u64],
    m: usize,
    n: usize,
    k: usize,
) {
    let (count, steps) = ((m / WM) * (n / WN), k / WK);
    let mut tile = block_idx_x() as usize;
    let mut it = 0;
    while tile < count {
        let (row0, col0) = tile_origin(m, n, WM, WN, tile);
        for kt in 0..steps {
            let slot = it % W_STAGES;
            // The stage's previous round (step it - 4) has been read by every consumer.
            if it >= W_STAGES {
                while !mbarrier_try_wait_parity(&empty[slot], ((it / W_STAGES + 1) % 2) as u32) {}
            }
            t_load(sm, ma, mb, full, slot, kt, row0, col0);
            it += 1;
        }
        tile += grid_dim_x() as usize;
    }
}

/// A consumer warpgroup's (`wg`) 64 x 256 part of one tile: `steps` steps from step `it0` of
/// the block's count, each stage released (`empty`) once its `wgmma`s are done.
fn ws_consume<T: Half>(sm: &[T], full: &[u64], empty: &mut [u64], wg: usize, steps: usize, it0: usize) -> WgAcc<f32, 256> {
    let mut acc = WgAcc::<f32, 256>([0.0; 128]);
    for kt in 0..steps {
        let it = it0 + kt;
        let slot = it % W_STAGES;
        while !mbarrier_try_wait_parity(&full[slot], ((it / W_STAGES) % 2) as u32) {}
        acc = w_step(sm, slot * W_STAGE, wg, acc);
        // Step it - 1's `wgmma`s are done: their stage may be refilled.
        acc = wgmma_wait::<1>(acc);
        if kt > 0 {
            mbarrier_arrive(&mut empty[(it - 1) % W_STAGES]);
        }
    }
    acc = wgmma_wait::<0>(acc);
    if steps > 0 {
        mbarrier_arrive(&mut empty[(it0 + steps - 1) % W_STAGES]);
    }
    acc
}

/// Pair j of thread t of warpgroup wg in the tile at (row0, col0): row, column (as `w_pair`).
fn pair_at(row0: usize, col0: usize, wg: usize, t: usize, j: usize) -> (usize, usize) {
    let (w, g, q) = (t / 32, t % 32 / 4, t % 4);
    (row0 + wg * 64 + 16 * w + g + 8 * (j % 2), col0 + 8 * (j / 2) + 2 * q)
}

/// The ring's barriers, initialised by thread 0 (`full`: one arrival, the producer's, plus the
/// bytes; `empty`: the 256 consumer threads), visible to every thread and the tensor copies.
fn ws_barriers(full: &mut [u64], empty: &mut [u64]) {
    if thread_idx_x() == 0 {
        for s in 0..W_STAGES {
            mbarrier_init(&mut full[s], 1);
            mbarrier_init(&mut empty[s], 256);
        }
        fence_proxy_async();
    }
    sync_threads();
}

/// C = A·Bᵀ as `gemm_tma` computes it, warp-specialised and persistent: launch blocks of 384
/// threads with 192 KiB of dynamic shared memory, as many as the GPU has SMs (or one per 128 x
/// 256 tile of C, if fewer).
#[kernel(max_threads = 384, min_blocks = 1)]
pub fn gemm_ws<T: Half>(ma: &TensorMap<T, 64, 128, 128>, mb: &TensorMap<T, 64, 256, 128>, c: &mut [T], m: usize, n: usize, k: usize) {
    let sm = dynamic_shared_array::<T>();
    let full = shared_array::<u64, W_STAGES>();
    let empty = shared_array::<u64, W_STAGES>();
    ws_barriers(full, empty);
    let tid = thread_idx_x() as usize;
    if tid < 128 {
        // The producer's one copying thread needs few registers; the consumers' accumulators
        // (128 a thread) and their addressing take what it gives back.
        setmaxnreg_dec::<56>();
        if tid == 0 {
            ws_produce(sm, ma, mb, full, empty, m, n, k);
        }
    } else {
        setmaxnreg_inc::<224>();
        let (wg, t) = (tid / 128 - 1, tid % 128);
        let (count, steps) = ((m / WM) * (n / WN), k / WK);
        let mut tile = block_idx_x() as usize;
        let mut done = 0;
        while tile < count {
            let acc = ws_consume(sm, full, empty, wg, steps, done * steps);
            let (row0, col0) = tile_origin(m, n, WM, WN, tile);
            for j in 0..64 {
                let (r, col) = pair_at(row0, col0, wg, t, j);
                let h = r * (n / 2) + col / 2;
                c[2 * h] = acc.x[2 * j] as T;
                c[2 * h + 1] = acc.x[2 * j + 1] as T;
            }
            tile += grid_dim_x() as usize;
            done += 1;
        }
    }
}

/// C = gelu(A·Bᵀ + bias), `gemm_tma_bias_gelu` warp-specialised and persistent (launched as
/// `gemm_ws`).
#[kernel(max_threads = 384, min_blocks = 1)]
pub fn gemm_ws_bias_gelu<T: Half>(
    ma: &TensorMap<T, 64, 128, 128>,
    mb: &TensorMap<T, 64, 256, 128>,
    bias: &[T],
    c: &mut [T],
    m: usize,
    n: usize,
    k: usize,
) {
    let sm = dynamic_shared_array::<T>();
    let full = shared_array::<u64, W_STAGES>();
    let empty = shared_array::<u64, W_STAGES>();
    ws_barriers(full, empty);
    let tid = thread_idx_x() as usize;
    if tid < 128 {
        // The producer's one copying thread needs few registers; the consumers' accumulators
        // (128 a thread) and their addressing take what it gives back.
        setmaxnreg_dec::<56>();
        if tid == 0 {
            ws_produce(sm, ma, mb, full, empty, m, n, k);
        }
    } else {
        setmaxnreg_inc::<224>();
        let (wg, t) = (tid / 128 - 1, tid % 128);
        let (count, steps) = ((m / WM) * (n / WN), k / WK);
        let mut tile = block_idx_x() as usize;
        let mut done = 0;
        while tile < count {
            let acc = ws_consume(sm, full, empty, wg, steps, done * steps);
            let (row0, col0) = tile_origin(m, n, WM, WN, tile);
            for j in 0..64 {
                let (r, col) = pair_at(row0, col0, wg, t, j);
                let (h, hc) = (r * (n / 2) + col / 2, col / 2);
                let v0 = gelu(acc.x[2 * j] + bias[2 * hc] as f32) as T;
                let v1 = gelu(acc.x[2 * j + 1] + bias[2 * hc + 1] as f32) as T;
                c[2 * h] = v0;
                c[2 * h + 1] = v1;
            }
            tile += grid_dim_x() as usize;
            done += 1;
        }
    }
}

// `gemm_tma_tf32` and `gemm_ws_tf32`: `gemm_tma`'s and `gemm_ws`'s tiles, ring and tensor copies
// for f32 inputs read as tf32 by `wgmma` m64n256k8 (tf32 reads both operands K-major, so Bᵀ is
// given N x K as for the 16-bit kernels). A row of a 128-byte swizzled tile holds 32 `f32`s, so
// a stage (48 KiB, as theirs) advances K by 32 in four `wgmma`s of K 8; C is f32.

const FK: usize = 32;
const F_A: usize = WM * FK;
const F_STAGE: usize = F_A + WN * FK;

/// Step `kt`'s boxes of A (128 x 32) and Bᵀ (256 x 32) into stage `slot`, completing on
/// `full[slot]`.
fn f_load(
    sm: &mut [f32],
    ma: &TensorMap<f32, 32, 128, 128>,
    mb: &TensorMap<f32, 32, 256, 128>,
    full: &mut [u64],
    slot: usize,
    kt: usize,
    row0: usize,
    col0: usize,
) {
    let base = slot * F_STAGE;
    mbarrier_arrive_expect_tx(&mut full[slot], (F_STAGE * 4) as u32);
    cp_async_bulk_tensor_2d(&mut sm[base], ma, (kt * FK) as i32, row0 as i32, &mut full[slot]);
    cp_async_bulk_tensor_2d(&mut sm[base + F_A], mb, (kt * FK) as i32, col0 as i32, &mut full[slot]);
}

/// One K step (32) of warpgroup `wg` on the stage at `base`: four `wgmma` m64n256k8 of tf32.
fn f_step(sm: &[f32], base: usize, wg: usize, acc: WgAcc<f32, 256>) -> WgAcc<f32, 256> {
    let mut acc = acc;
    wgmma_fence();
    for kk in 0..FK / 8 {
        let da = wgmma_desc::<128, 64>(&sm[base + wg * 64 * FK + kk * 8]);
        let db = wgmma_desc::<128, 256>(&sm[base + F_A + kk * 8]);
        acc = wgmma(da, db, acc);
    }
    wgmma_commit();
    acc
}

/// C = A·Bᵀ on f32 inputs read as tf32, f32 accumulation, as `gemm_tma` computes it: `ma` maps
/// A (M x K) in 128 x 32 boxes, `mb` maps Bᵀ (N x K) in 256 x 32 boxes, both swizzled by 128
/// bytes. Launch as `gemm_tma` (256 threads per 128 x 256 tile of C, 192 KiB of dynamic shared
/// memory).
#[kernel(max_threads = 256, min_blocks = 1)]
pub fn gemm_tma_tf32(ma: &TensorMap<f32, 32, 128, 128>, mb: &TensorMap<f32, 32, 256, 128>, c: &mut [f32], m: usize, n: usize, k: usize) {
    let sm = dynamic_shared_array::<f32>();
    let full = shared_array::<u64, W_STAGES>();
    let tid = thread_idx_x() as usize;
    let wg = tid / 128;
    let (row0, col0) = w_tile(m, n);
    let tiles = k / FK;
    if tid == 0 {
        for s in 0..W_STAGES {
            mbarrier_init(&mut full[s], 1);
        }
        fence_proxy_async();
        for s in 0..2 {
            if s < tiles {
                f_load(sm, ma, mb, full, s, s, row0, col0);
            }
        }
    }
    sync_threads();
    let mut acc = WgAcc::<f32, 256>([0.0; 128]);
    for kt in 0..tiles {
        let slot = kt % W_STAGES;
        while !mbarrier_try_wait_parity(&full[slot], ((kt / W_STAGES) % 2) as u32) {}
        // As `gemm_tma`: the stage refilled here was read by step kt - 2, waited for by both
        // warpgroups before this barrier.
        sync_threads();
        if tid == 0 && kt + 2 < tiles {
            f_load(sm, ma, mb, full, (kt + 2) % W_STAGES, kt + 2, row0, col0);
        }
        acc = f_step(sm, slot * F_STAGE, wg, acc);
        acc = wgmma_wait::<1>(acc);
    }
    acc = wgmma_wait::<0>(acc);
    for j in 0..64 {
        let (r, col) = w_pair(m, n, wg, tid % 128, j);
        let h = r * (n / 2) + col / 2;
        for e in 0..2 {
            c[2 * h + e] = acc.x[2 * j + e];
        }
    }
}

/// The producer of `gemm_ws_tf32`: `ws_produce` of f32 boxes.
fn f_produce(
    sm: &mut [f32],
    ma: &TensorMap<f32, 32, 128, 128>,
    mb: &TensorMap<f32, 32, 256, 128>,
    full: &mut [u64],
    empty: &[u64],
    m: usize,
    n: usize,
    k: usize,
) {
    let (count, steps) = ((m / WM) * (n / WN), k / FK);
    let mut tile = block_idx_x() as usize;
    let mut it = 0;
    while tile < count {
        let (row0, col0) = tile_origin(m, n, WM, WN, tile);
        for kt in 0..steps {
            let slot = it % W_STAGES;
            if it >= W_STAGES {
                while !mbarrier_try_wait_parity(&empty[slot], ((it / W_STAGES + 1) % 2) as u32) {}
            }
            f_load(sm, ma, mb, full, slot, kt, row0, col0);
            it += 1;
        }
        tile += grid_dim_x() as usize;
    }
}

/// A consumer of `gemm_ws_tf32`: `ws_consume` of tf32 steps.
fn f_consume(sm: &[f32], full: &[u64], empty: &mut [u64], wg: usize, steps: usize, it0: usize) -> WgAcc<f32, 256> {
    let mut acc = WgAcc::<f32, 256>([0.0; 128]);
    for kt in 0..steps {
        let it = it0 + kt;
        let slot = it % W_STAGES;
        while !mbarrier_try_wait_parity(&full[slot], ((it / W_STAGES) % 2) as u32) {}
        acc = f_step(sm, slot * F_STAGE, wg, acc);
        acc = wgmma_wait::<1>(acc);
        if kt > 0 {
            mbarrier_arrive(&mut empty[(it - 1) % W_STAGES]);
        }
    }
    acc = wgmma_wait::<0>(acc);
    if steps > 0 {
        mbarrier_arrive(&mut empty[(it0 + steps - 1) % W_STAGES]);
    }
    acc
}

/// C = A·Bᵀ as `gemm_tma_tf32` computes it, warp-specialised and persistent as `gemm_ws` (and
/// launched as it).
#[kernel(max_threads = 384, min_blocks = 1)]
pub fn gemm_ws_tf32(ma: &TensorMap<f32, 32, 128, 128>, mb: &TensorMap<f32, 32, 256, 128>, c: &mut [f32], m: usize, n: usize, k: usize) {
    let sm = dynamic_shared_array::<f32>();
    let full = shared_array::<u64, W_STAGES>();
    let empty = shared_array::<u64, W_STAGES>();
    ws_barriers(full, empty);
    let tid = thread_idx_x() as usize;
    if tid < 128 {
        // The producer's one copying thread needs few registers; the consumers' accumulators
        // (128 a thread) and their addressing take what it gives back.
        setmaxnreg_dec::<56>();
        if tid == 0 {
            f_produce(sm, ma, mb, full, empty, m, n, k);
        }
    } else {
        setmaxnreg_inc::<224>();
        let (wg, t) = (tid / 128 - 1, tid % 128);
        let (count, steps) = ((m / WM) * (n / WN), k / FK);
        let mut tile = block_idx_x() as usize;
        let mut done = 0;
        while tile < count {
            let acc = f_consume(sm, full, empty, wg, steps, done * steps);
            let (row0, col0) = tile_origin(m, n, WM, WN, tile);
            for j in 0..64 {
                let (r, col) = pair_at(row0, col0, wg, t, j);
                let h = r * (n / 2) + col / 2;
                c[2 * h] = acc.x[2 * j];
                c[2 * h + 1] = acc.x[2 * j + 1];
            }
            tile += grid_dim_x() as usize;
            done += 1;
        }
    }
}
