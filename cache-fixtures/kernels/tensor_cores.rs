//! The tensor-core builtins: `mma` of 16-bit floats, tf32 and 8-bit integers with fragments
//! loaded by the PTX ISA's layouts, `ldmatrix` (plain and transposed) from swizzled shared
//! tiles staged by `cp_async` groups, `tf32_round`, and a generic kernel over the `Half` types.
//! Every matrix is row-major; one warp computes one 16 x 8 tile of D = A·B + C.

/// Chunk `c` (8 elements) of row `r` of a tile of 64-element rows sits at chunk `c ^ (r % 8)`.
fn at(row: usize, col: usize) -> usize {
    swizzle::<3, 3, 3>(row * 64 + col)
}

/// A (16 x 64) times B (64 x 8): A staged as is, B transposed (8 x 64) for `ldmatrix_x2` and
/// as is (64 x 8, padded to rows of 64) for `ldmatrix_x2_trans`; both products are returned,
/// plus C.
#[kernel]
pub fn tile_64<T: Half>(a: &[T], b: &[T], c: &[f32], d: &mut [f32], d_trans: &mut [f32]) {
    let sa = shared_array::<T, 1024>();
    let sbt = shared_array::<T, 512>();
    let sb = shared_array::<T, 4096>();
    let lane = lane_id() as usize;
    for i in 0..4 {
        let e = (i * 32 + lane) * 8;
        cp_async_cg::<16>(&mut sa[at(e / 64, e % 64)], &a[e]);
    }
    cp_async_commit();
    // Bᵀ element by element: B is 64 x 8.
    for i in 0..16 {
        let e = i * 32 + lane;
        sbt[at(e / 64, e % 64)] = b[(e % 64) * 8 + e / 64];
    }
    // B's rows of 8 elements, one 16-byte copy each, in the first chunk of each 64-wide row.
    for i in 0..2 {
        let r = i * 32 + lane;
        cp_async::<16>(&mut sb[at(r, 0)], &b[r * 8]);
    }
    cp_async_commit();
    cp_async_wait::<1>();
    cp_async_wait::<0>();
    sync_warp(0xffff_ffff);
    let (g, t) = (lane / 4, lane % 4);
    let mut c0 = [0.0f32; 4];
    for i in 0..4 {
        c0[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    }
    let mut acc = FragC::<f32, 16, 8>(c0);
    let mut acc_t = FragC::<f32, 16, 8>(c0);
    for k in 0..4 {
        let fa = FragA::<T, 16, 8, 16>(ldmatrix_x4(&sa[at(lane % 16, k * 16 + lane / 16 * 8)]));
        let fb = FragB::<T, 16, 8, 16>(ldmatrix_x2(&sbt[at(lane % 8, k * 16 + lane / 8 % 2 * 8)]));
        acc = mma(fa, fb, acc);
        let fbt = FragB::<T, 16, 8, 16>(ldmatrix_x2_trans(&sb[at(k * 16 + lane % 16, 0)]));
        acc_t = mma(fa, fbt, acc_t);
    }
    for i in 0..4 {
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc.x[i];
        d_trans[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc_t.x[i];
    }
}

/// tf32: A (16 x 8) and B (8 x 8) rounded with `tf32_round`, D = A·B + C.
#[kernel]
pub fn tile_tf32(a: &[f32], b: &[f32], c: &[f32], d: &mut [f32]) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let mut xa = [0.0f32; 4];
    for i in 0..4 {
        xa[i] = tf32_round(a[(g + 8 * (i % 2)) * 8 + t + 4 * (i / 2)]);
    }
    let xb = [tf32_round(b[t * 8 + g]), tf32_round(b[(t + 4) * 8 + g])];
    let mut xc = [0.0f32; 4];
    for i in 0..4 {
        xc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    }
    let out = mma(FragA::<f32, 16, 8, 8>(xa), FragB::<f32, 16, 8, 8>(xb), FragC::<f32, 16, 8>(xc));
    for i in 0..4 {
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = out.x[i];
    }
}

/// int8: A (16 x 32) and B (32 x 8), D = A·B + C in `i32`; and the unsigned form on the same
/// bytes.
#[kernel]
pub fn tile_i8(a: &[i8], b: &[i8], au: &[u8], bu: &[u8], c: &[i32], d: &mut [i32], du: &mut [i32]) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let mut xa = [0i8; 16];
    let mut ua = [0u8; 16];
    for i in 0..16 {
        let e = (g + 8 * ((i / 4) % 2)) * 32 + 4 * t + i % 4 + 16 * (i / 8);
        xa[i] = a[e];
        ua[i] = au[e];
    }
    let mut xb = [0i8; 8];
    let mut ub = [0u8; 8];
    for i in 0..8 {
        let e = (4 * t + i % 4 + 16 * (i / 4)) * 8 + g;
        xb[i] = b[e];
        ub[i] = bu[e];
    }
    let mut xc = [0i32; 4];
    for i in 0..4 {
        xc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    }
    let s = mma(FragA::<i8, 16, 8, 32>(xa), FragB::<i8, 16, 8, 32>(xb), FragC::<i32, 16, 8>(xc));
    let u = mma(FragA::<u8, 16, 8, 32>(ua), FragB::<u8, 16, 8, 32>(ub), FragC::<i32, 16, 8>(xc));
    for i in 0..4 {
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = s.x[i];
        du[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = u.x[i];
    }
}

/// Every `ldmatrix` form over 32 rows of 8 `u16` (lane `l` names row `l`): each lane's words, in
/// order x1, x1_trans, x2, x2_trans, x4, x4_trans (14 words, 28 elements per lane).
#[kernel]
pub fn ldmatrix_forms(x: &[u16], out: &mut [u16]) {
    let tile = shared_array::<u16, 256>();
    let lane = lane_id() as usize;
    for c in 0..8 {
        tile[lane * 8 + c] = x[lane * 8 + c];
    }
    sync_warp(0xffff_ffff);
    let r = lane * 8;
    let a = ldmatrix_x1(&tile[r]);
    let b = ldmatrix_x1_trans(&tile[r]);
    let c = ldmatrix_x2(&tile[r]);
    let d = ldmatrix_x2_trans(&tile[r]);
    let e = ldmatrix_x4(&tile[r]);
    let f = ldmatrix_x4_trans(&tile[r]);
    let o = lane * 28;
    for i in 0..2 {
        out[o + i] = a[i];
        out[o + 2 + i] = b[i];
    }
    for i in 0..4 {
        out[o + 4 + i] = c[i];
        out[o + 8 + i] = d[i];
    }
    for i in 0..8 {
        out[o + 12 + i] = e[i];
        out[o + 20 + i] = f[i];
    }
}
