//! The speed suite's fused attention forward (benches/speed/cases/attention.rs measures it),
//! FlashAttention-2's algorithm on the tensor cores: O = softmax(Q Kᵀ · scale) V for each
//! (batch, head), bf16 in and out, f32 accumulation, never materialising the scores.
//!
//! Q, K, V and O are `[batch · heads][seq][D]` row-major. A block of 4 warps takes 128 query
//! rows (32 per warp: two m16 tiles, so that each K and V fragment read from shared memory
//! feeds two `mma`s) and walks the keys in tiles of `4096 / D` (64 for D = 64, 32 for D = 128,
//! so that the scores stay in registers beside the output accumulator), K and V in one shared
//! buffer each, filled by `cp_async` as FlashAttention-2 does: the next K tile loads while the
//! scores are turned into probabilities and multiplied by V, the next V tile while the next
//! scores are computed (Q, K and V fit the 48 KiB of static shared memory). Per tile: S = Q Kᵀ (Q's fragments by `ldmatrix`, K's by
//! `ldmatrix` over its rows), the online softmax in base 2 (row maxima across the quad of lanes
//! that share a row by two shuffles; the output rescaled by `exp2(m_old - m_new)`), then
//! O += P V with P the score accumulators rounded to bf16 in place as A fragments (no trip
//! through shared memory) and V's fragments by `ldmatrix_x4_trans`. Causal attention visits
//! only the key tiles at or before the block's last row, masks only those that cross the
//! diagonal, and starts the blocks with the most work first.

/// Query rows per block.
const AM: usize = 128;
/// Lanes of a full warp.
const FULL: u32 = 0xffff_ffff;

/// Where element (r, c) of a tile of `D`-element rows is: rows of 128 or 256 bytes, 16-byte
/// chunks spread over the banks by the row.
fn at<const D: usize>(r: usize, c: usize) -> usize {
    if D == 64 { swizzle::<3, 3, 3>(r * D + c) } else { swizzle::<3, 3, 4>(r * D + c) }
}

/// The row and column of the 8-element chunk `c` of a tile of `D`-element rows: a thread's
/// copies are chunks `tid + 128 i` (4 of each key tile, `D / 8` of Q).
fn chunk<const D: usize>(c: usize) -> (usize, usize) {
    (c / (D / 8), c % (D / 8) * 8)
}

/// Head dimension 64: `attention::<64, false>`, launched with `Grid::new((seq / 128, batch *
/// heads), 128)`; `seq` is a multiple of 128.
#[kernel(max_threads = 128)]
pub fn attn_d64(q: &[bf16], k: &[bf16], v: &[bf16], o: &mut [bf16], seq: usize, scale: f32) {
    attention::<64, false>(q, k, v, o, seq, scale);
}

/// Head dimension 64, causal.
#[kernel(max_threads = 128)]
pub fn attn_d64_causal(q: &[bf16], k: &[bf16], v: &[bf16], o: &mut [bf16], seq: usize, scale: f32) {
    attention::<64, true>(q, k, v, o, seq, scale);
}

/// Head dimension 128.
#[kernel(max_threads = 128)]
pub fn attn_d128(q: &[bf16], k: &[bf16], v: &[bf16], o: &mut [bf16], seq: usize, scale: f32) {
    attention::<128, false>(q, k, v, o, seq, scale);
}

/// Head dimension 128, causal.
#[kernel(max_threads = 128)]
pub fn attn_d128_causal(q: &[bf16], k: &[bf16], v: &[bf16], o: &mut [bf16], seq: usize, scale: f32) {
    attention::<128, true>(q, k, v, o, seq, scale);
}

/// One head's attention for 128 query rows (the block's), by 4 warps.
fn attention<const D: usize, const CAUSAL: bool>(q: &[bf16], k: &[bf16], v: &[bf16], o: &mut [bf16], seq: usize, scale: f32) {
    // Q (AM x D), then K's tile, then V's (4096 elements each).
    let sm = shared_array::<bf16, { AM * D + 8192 }>();
    let (kb, vb) = (AM * D, AM * D + 4096);
    let tid = thread_idx_x() as usize;
    let (warp, lane) = (tid / 32, tid % 32);
    let (g, t) = (lane / 4, lane % 4);
    let blocks = grid_dim_x() as usize;
    let bx = block_idx_x() as usize;
    let row0 = if CAUSAL { (blocks - 1 - bx) * AM } else { bx * AM };
    let base = block_idx_y() as usize * seq * D;
    for i in 0..D / 8 {
        let (r, c) = chunk::<D>(tid + 128 * i);
        cp_async_cg::<16>(&mut sm[at::<D>(r, c)], &q[base + (row0 + r) * D + c]);
    }
    for i in 0..4 {
        let (r, c) = chunk::<D>(tid + 128 * i);
        cp_async_cg::<16>(&mut sm[kb + at::<D>(r, c)], &k[base + r * D + c]);
    }
    cp_async_commit();
    for i in 0..4 {
        let (r, c) = chunk::<D>(tid + 128 * i);
        cp_async_cg::<16>(&mut sm[vb + at::<D>(r, c)], &v[base + r * D + c]);
    }
    cp_async_commit();
    let tiles = if CAUSAL { (row0 + AM) / (4096 / D) } else { seq / (4096 / D) };
    let scale2 = scale * 1.442_695_f32;
    let mut acc = [[FragC::<f32, 16, 8>([0.0; 4]); { D / 8 }]; 2];
    let mut m = [f32::NEG_INFINITY; 4];
    let mut l = [0.0f32; 4];
    let wrow = 32 * warp;
    for j in 0..tiles {
        // K's tile j (and Q) have landed; V's may still be on its way.
        cp_async_wait::<1>();
        sync_threads();
        // S = Q Kᵀ: 2 x (tile / 8) accumulators of 16 x 8.
        let mut s = [[FragC::<f32, 16, 8>([0.0; 4]); { 512 / D }]; 2];
        for ks in 0..D / 16 {
            let qa0 = FragA::<bf16, 16, 8, 16>(ldmatrix_x4(&sm[at::<D>(wrow + lane % 16, 16 * ks + lane / 16 * 8)]));
            let qa1 = FragA::<bf16, 16, 8, 16>(ldmatrix_x4(&sm[at::<D>(wrow + 16 + lane % 16, 16 * ks + lane / 16 * 8)]));
            for nj in 0..4096 / D / 16 {
                let jj = lane / 8;
                let w = ldmatrix_x4(&sm[kb + at::<D>(16 * nj + jj / 2 * 8 + lane % 8, 16 * ks + jj % 2 * 8)]);
                let b0 = FragB::<bf16, 16, 8, 16>([w[0], w[1], w[2], w[3]]);
                let b1 = FragB::<bf16, 16, 8, 16>([w[4], w[5], w[6], w[7]]);
                s[0][2 * nj] = mma(qa0, b0, s[0][2 * nj]);
                s[0][2 * nj + 1] = mma(qa0, b1, s[0][2 * nj + 1]);
                s[1][2 * nj] = mma(qa1, b0, s[1][2 * nj]);
                s[1][2 * nj + 1] = mma(qa1, b1, s[1][2 * nj + 1]);
            }
        }
        // Every warp is done with K's tile: the next one may load over it.
        sync_threads();
        if j + 1 < tiles {
            for i in 0..4 {
                let (r, c) = chunk::<D>(tid + 128 * i);
                cp_async_cg::<16>(&mut sm[kb + at::<D>(r, c)], &k[base + ((j + 1) * (4096 / D) + r) * D + c]);
            }
        }
        cp_async_commit();
        // The online softmax, row by row of the thread's four (two per m16 tile).
        let key0 = j * (4096 / D);
        let diagonal = CAUSAL && key0 + 4096 / D > row0;
        for mi in 0..2 {
            for h in 0..2 {
                let row = row0 + wrow + 16 * mi + g + 8 * h;
                let slot = 2 * mi + h;
                let mut mx = f32::NEG_INFINITY;
                for ni in 0..512 / D {
                    for e in 0..2 {
                        let mut x = s[mi][ni].x[2 * h + e] * scale2;
                        if diagonal && key0 + 8 * ni + 2 * t + e > row {
                            x = f32::NEG_INFINITY;
                        }
                        s[mi][ni].x[2 * h + e] = x;
                        mx = mx.max(x);
                    }
                }
                mx = mx.max(shfl_xor_sync(FULL, mx, 1));
                mx = mx.max(shfl_xor_sync(FULL, mx, 2));
                let m_new = m[slot].max(mx);
                let alpha = (m[slot] - m_new).exp2();
                m[slot] = m_new;
                let mut sum = 0.0f32;
                for ni in 0..512 / D {
                    for e in 0..2 {
                        let p = (s[mi][ni].x[2 * h + e] - m_new).exp2();
                        s[mi][ni].x[2 * h + e] = p;
                        sum += p;
                    }
                }
                l[slot] = l[slot] * alpha + sum;
                for nd in 0..D / 8 {
                    acc[mi][nd].x[2 * h] *= alpha;
                    acc[mi][nd].x[2 * h + 1] *= alpha;
                }
            }
        }
        // V's tile j has landed (K's next may still be on its way).
        cp_async_wait::<1>();
        sync_threads();
        // O += P V: P's two 16 x 8 accumulators per 16 keys are, rounded, an A fragment.
        for kk in 0..256 / D {
            let mut pa = [FragA::<bf16, 16, 8, 16>([0.0; 8]); 2];
            for mi in 0..2 {
                let (p0, p1) = (s[mi][2 * kk].x, s[mi][2 * kk + 1].x);
                pa[mi] = FragA::<bf16, 16, 8, 16>([
                    p0[0] as bf16,
                    p0[1] as bf16,
                    p0[2] as bf16,
                    p0[3] as bf16,
                    p1[0] as bf16,
                    p1[1] as bf16,
                    p1[2] as bf16,
                    p1[3] as bf16,
                ]);
            }
            for nd in 0..D / 16 {
                let jj = lane / 8;
                let w = ldmatrix_x4_trans(&sm[vb + at::<D>(16 * kk + jj % 2 * 8 + lane % 8, 16 * nd + jj / 2 * 8)]);
                let b0 = FragB::<bf16, 16, 8, 16>([w[0], w[1], w[2], w[3]]);
                let b1 = FragB::<bf16, 16, 8, 16>([w[4], w[5], w[6], w[7]]);
                for mi in 0..2 {
                    acc[mi][2 * nd] = mma(pa[mi], b0, acc[mi][2 * nd]);
                    acc[mi][2 * nd + 1] = mma(pa[mi], b1, acc[mi][2 * nd + 1]);
                }
            }
        }
        // Every warp is done with V's tile: the next one may load over it.
        sync_threads();
        if j + 1 < tiles {
            for i in 0..4 {
                let (r, c) = chunk::<D>(tid + 128 * i);
                cp_async_cg::<16>(&mut sm[vb + at::<D>(r, c)], &v[base + ((j + 1) * (4096 / D) + r) * D + c]);
            }
        }
        cp_async_commit();
    }
    // Each row's sum over the quad that shares it, then O / l.
    for mi in 0..2 {
        for h in 0..2 {
            let slot = 2 * mi + h;
            let mut sum = l[slot];
            sum += shfl_xor_sync(FULL, sum, 1);
            sum += shfl_xor_sync(FULL, sum, 2);
            let inv = 1.0 / sum;
            let row = row0 + wrow + 16 * mi + g + 8 * h;
            for nd in 0..D / 8 {
                let col = 8 * nd + 2 * t;
                o[base + row * D + col] = (acc[mi][nd].x[2 * h] * inv) as bf16;
                o[base + row * D + col + 1] = (acc[mi][nd].x[2 * h + 1] * inv) as bf16;
            }
        }
    }
}
