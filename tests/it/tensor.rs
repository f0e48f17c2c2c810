//! Tests: the tensor-core primitives on the host backend, against models written here from the
//! PTX ISA (each lane's fragment elements, `ldmatrix`'s rows and columns, `cvt.rna.tf32`), and
//! their PTX: every primitive assembles for sm_80 and sm_90, and one the target lacks is an
//! error at its call naming the architecture it needs. Misuse (mixing fragments, shapes `mma`
//! lacks, a misaligned or out-of-place access) is an error at compile or launch time.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use kache::{Arch, Device, Error, Grid, Layout, Specialization, Target};

use crate::common;

/// One `mma` shape: its element types and, per fragment, the (row, column) of element `i`
/// written as the PTX ISA's figures give them, in the kernel language (`g` = lane / 4, `t` =
/// lane % 4).
struct Shape {
    name: &'static str,
    ab: &'static str,
    acc: &'static str,
    m: usize,
    n: usize,
    k: usize,
    a: &'static str,
    b: &'static str,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "bf16_k16",
        ab: "bf16",
        acc: "f32",
        m: 16,
        n: 8,
        k: 16,
        a: "(g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4))",
        b: "(2 * t + i % 2 + 8 * (i / 2), g)",
    },
    Shape {
        name: "f16_k16",
        ab: "f16",
        acc: "f32",
        m: 16,
        n: 8,
        k: 16,
        a: "(g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4))",
        b: "(2 * t + i % 2 + 8 * (i / 2), g)",
    },
    Shape { name: "f16_k8", ab: "f16", acc: "f32", m: 16, n: 8, k: 8, a: "(g + 8 * (i / 2), 2 * t + i % 2)", b: "(2 * t + i, g)" },
    Shape { name: "bf16_k8", ab: "bf16", acc: "f32", m: 16, n: 8, k: 8, a: "(g + 8 * (i / 2), 2 * t + i % 2)", b: "(2 * t + i, g)" },
    Shape { name: "tf32_k8", ab: "f32", acc: "f32", m: 16, n: 8, k: 8, a: "(g + 8 * (i % 2), t + 4 * (i / 2))", b: "(t + 4 * i, g)" },
    Shape { name: "tf32_k4", ab: "f32", acc: "f32", m: 16, n: 8, k: 4, a: "(g + 8 * i, t)", b: "(t, g)" },
    Shape {
        name: "s8_k32",
        ab: "i8",
        acc: "i32",
        m: 16,
        n: 8,
        k: 32,
        a: "(g + 8 * ((i / 4) % 2), 4 * t + i % 4 + 16 * (i / 8))",
        b: "(4 * t + i % 4 + 16 * (i / 4), g)",
    },
    Shape {
        name: "u8_k32",
        ab: "u8",
        acc: "i32",
        m: 16,
        n: 8,
        k: 32,
        a: "(g + 8 * ((i / 4) % 2), 4 * t + i % 4 + 16 * (i / 8))",
        b: "(4 * t + i % 4 + 16 * (i / 4), g)",
    },
    Shape { name: "s8_k16", ab: "i8", acc: "i32", m: 16, n: 8, k: 16, a: "(g + 8 * (i / 4), 4 * t + i % 4)", b: "(4 * t + i, g)" },
    Shape { name: "u8_k16", ab: "u8", acc: "i32", m: 16, n: 8, k: 16, a: "(g + 8 * (i / 4), 4 * t + i % 4)", b: "(4 * t + i, g)" },
];

/// The accumulator's element `i` of a lane, from the PTX ISA.
const C_COORD: &str = "(g + 8 * (i / 2), 2 * t + i % 2)";

/// A kernel that loads A (M x K), B (K x N) and C (M x N), all row-major, into fragments by
/// the PTX ISA's layouts, multiplies, and stores D the same way.
fn mma_kernel(s: &Shape) -> String {
    let (ea, eb) = (s.m * s.k / 32, s.k * s.n / 32);
    let zero = if s.acc == "f32" { "0.0" } else { "0" };
    let abz = if s.ab.starts_with('f') || s.ab == "bf16" { format!("0.0 as {}", s.ab) } else { format!("0 as {}", s.ab) };
    format!(
        r#"
#[kernel]
pub fn mma_{name}(a: &[{ab}], b: &[{ab}], c: &[{acc}], d: &mut [{acc}]) {{
    let lane = lane_id() as usize;
    let g = lane / 4;
    let t = lane % 4;
    let mut xa = [{abz}; {ea}];
    for i in 0..{ea} {{
        let (r, col) = {ca};
        xa[i] = a[r * {k} + col];
    }}
    let mut xb = [{abz}; {eb}];
    for i in 0..{eb} {{
        let (r, col) = {cb};
        xb[i] = b[r * {n} + col];
    }}
    let mut xc = [{zero}; 4];
    for i in 0..4 {{
        let (r, col) = {cc};
        xc[i] = c[r * {n} + col];
    }}
    let fa = FragA::<{ab}, {m}, {n}, {k}>(xa);
    let fb: FragB<{ab}, {m}, {n}, {k}> = FragB::<{ab}, {m}, {n}, {k}>(xb);
    let out = mma(fa, fb, FragC::<{acc}, {m}, {n}>(xc));
    for i in 0..4 {{
        let (r, col) = {cc};
        d[r * {n} + col] = out.x[i];
    }}
}}
"#,
        name = s.name,
        ab = s.ab,
        acc = s.acc,
        m = s.m,
        n = s.n,
        k = s.k,
        ca = s.a,
        cb = s.b,
        cc = C_COORD,
    )
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Small integers (exact in every element type, with exact sums), `bias` apart from zero.
fn ints(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    let mut r = rng(seed);
    (0..n).map(|_| lo + (r() % (hi - lo + 1) as u64) as i64).collect()
}

fn reference(a: &[i64], b: &[i64], c: &[i64], m: usize, n: usize, k: usize) -> Vec<i64> {
    (0..m * n).map(|x| c[x] + (0..k).map(|p| a[(x / n) * k + p] * b[p * n + x % n]).sum::<i64>()).collect()
}

#[test]
fn every_mma_shape_multiplies_as_the_ptx_isa_lays_fragments_out() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src: String = SHAPES.iter().map(mma_kernel).collect();
    let module = jit.load_source("mma_shapes.rs", &src).unwrap();
    for (n, s) in SHAPES.iter().enumerate() {
        let k = module.kernel(&format!("mma_{}", s.name)).unwrap();
        let (lo, hi) = if s.ab == "u8" {
            (0, 255)
        } else if s.ab == "i8" {
            (-128, 127)
        } else {
            (-8, 8)
        };
        let a = ints(s.m * s.k, 3 * n as u64 + 1, lo, hi);
        let b = ints(s.k * s.n, 3 * n as u64 + 2, lo, hi);
        let c = ints(s.m * s.n, 3 * n as u64 + 3, -1000, 1000);
        let want = reference(&a, &b, &c, s.m, s.n, s.k);
        let got: Vec<i64> = match (s.ab, s.acc) {
            ("i8" | "u8", _) => {
                let cd = dev.upload(&c.iter().map(|x| *x as i32).collect::<Vec<_>>()).unwrap();
                let mut d = dev.alloc::<i32>(&[s.m * s.n]).unwrap();
                let grid = Grid::new(1u32, 32u32);
                if s.ab == "i8" {
                    let conv = |v: &[i64]| v.iter().map(|x| *x as i8).collect::<Vec<i8>>();
                    let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
                    k.launch(&dev, grid, (&ad, &bd, &cd, &mut d)).unwrap();
                } else {
                    let conv = |v: &[i64]| v.iter().map(|x| *x as u8).collect::<Vec<u8>>();
                    let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
                    k.launch(&dev, grid, (&ad, &bd, &cd, &mut d)).unwrap();
                }
                d.download().unwrap().iter().map(|x| *x as i64).collect()
            }
            _ => {
                let cd = dev.upload(&c.iter().map(|x| *x as f32).collect::<Vec<_>>()).unwrap();
                let mut d = dev.alloc::<f32>(&[s.m * s.n]).unwrap();
                match s.ab {
                    "bf16" => {
                        let conv = |v: &[i64]| v.iter().map(|x| half::bf16::from_f32(*x as f32)).collect::<Vec<_>>();
                        let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
                        k.launch(&dev, Grid::new(1u32, 32u32), (&ad, &bd, &cd, &mut d)).unwrap();
                    }
                    "f16" => {
                        let conv = |v: &[i64]| v.iter().map(|x| half::f16::from_f32(*x as f32)).collect::<Vec<_>>();
                        let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
                        k.launch(&dev, Grid::new(1u32, 32u32), (&ad, &bd, &cd, &mut d)).unwrap();
                    }
                    _ => {
                        let conv = |v: &[i64]| v.iter().map(|x| *x as f32).collect::<Vec<_>>();
                        let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
                        k.launch(&dev, Grid::new(1u32, 32u32), (&ad, &bd, &cd, &mut d)).unwrap();
                    }
                }
                d.download().unwrap().iter().map(|x| *x as i64).collect()
            }
        };
        assert_eq!(got, want, "mma {}", s.name);
    }
}

/// `ldmatrix` as the PTX ISA defines it: lanes `8j..8j+8` give the rows of matrix `j`; lane
/// `l` receives row `l / 4`'s elements `2 (l % 4)` and `2 (l % 4) + 1` (`.trans`: those of the
/// column `l / 4`, rows `2 (l % 4)` and the next), one 32-bit word per matrix.
fn ldmatrix_model(rows: &[[u16; 8]], count: usize, trans: bool) -> Vec<u16> {
    let mut out = vec![0u16; 32 * 8];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for j in 0..count {
            let m = &rows[8 * j..8 * j + 8];
            let (lo, hi) = if trans { (m[2 * t][g], m[2 * t + 1][g]) } else { (m[g][2 * t], m[g][2 * t + 1]) };
            out[lane * 8 + 2 * j] = lo;
            out[lane * 8 + 2 * j + 1] = hi;
        }
    }
    out
}

#[test]
fn ldmatrix_gives_each_lane_the_rows_and_columns_the_ptx_isa_names() {
    let dev = Device::host();
    let jit = common::memory_jit();
    // 32 rows of 8 elements in shared memory, each lane's row at a place of its own (rows
    // reversed), so that the row addresses, not the lanes' order, decide what is loaded.
    let mut src = String::new();
    for (name, count) in [("x1", 1), ("x2", 2), ("x4", 4)] {
        for trans in ["", "_trans"] {
            src += &format!(
                r#"
#[kernel]
pub fn ld_{name}{trans}(x: &[u16], out: &mut [u16]) {{
    let tile = shared_array::<u16, 256>();
    let lane = lane_id() as usize;
    for c in 0..8 {{
        tile[(31 - lane) * 8 + c] = x[lane * 8 + c];
    }}
    sync_warp(0xffff_ffff);
    let w = ldmatrix_{name}{trans}(&tile[(31 - lane) * 8]);
    for j in 0..{n} {{
        out[lane * 8 + j] = w[j];
    }}
}}
"#,
                n = 2 * count
            );
        }
    }
    let module = jit.load_source("ldmatrix.rs", &src).unwrap();
    let values: Vec<u16> = (0..256u16).map(|i| i.wrapping_mul(40503) ^ 0x5a5a).collect();
    let rows: Vec<[u16; 8]> = values.chunks(8).map(|c| c.try_into().unwrap()).collect();
    let x = dev.upload(&values).unwrap();
    for (name, count) in [("x1", 1), ("x2", 2), ("x4", 4)] {
        for trans in [false, true] {
            let kernel = format!("ld_{name}{}", if trans { "_trans" } else { "" });
            let mut out = dev.alloc::<u16>(&[256]).unwrap();
            module.kernel(&kernel).unwrap().launch(&dev, Grid::new(1u32, 32u32), (&x, &mut out)).unwrap();
            assert_eq!(out.download().unwrap(), ldmatrix_model(&rows, count, trans), "{kernel}");
        }
    }
}

/// A 16 x 16 bf16 tile stored swizzled in shared memory and loaded with `ldmatrix`: A and B
/// fragments straight from shared memory give the product the reference gives.
#[test]
fn ldmatrix_loads_fragments_for_mma_from_a_swizzled_tile() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
// Rows of 64 bf16 (128 bytes): chunk c of 8 elements of row r lives at chunk c ^ (r % 8).
fn at(r: usize, c: usize) -> usize {
    swizzle::<3, 3, 3>(r * 64 + c)
}

#[kernel]
pub fn tile_mma(a: &[bf16], b: &[bf16], d: &mut [f32]) {
    // A: 16 x 64 (row-major), B: 64 x 8 stored as B^T, 8 x 64 (row-major): K = 64.
    let sa = shared_array::<bf16, 1024>();
    let sb = shared_array::<bf16, 512>();
    let lane = lane_id() as usize;
    for i in 0..32 {
        let e = i * 32 + lane;
        sa[at(e / 64, e % 64)] = a[e];
    }
    for i in 0..16 {
        let e = i * 32 + lane;
        sb[at(e / 64, e % 64)] = b[e];
    }
    sync_warp(0xffff_ffff);
    let mut acc = FragC::<f32, 16, 8>([0.0; 4]);
    for kk in 0..4 {
        // x4: lanes 0-15 the rows of A's left 8 columns, lanes 16-31 of its right 8.
        let ra = lane % 16;
        let ca = kk * 16 + (lane / 16) * 8;
        let fa = FragA::<bf16, 16, 8, 16>(ldmatrix_x4(&sa[at(ra, ca)]));
        // x2 over B^T: lanes 0-7 rows n of k 0..8, lanes 8-15 of k 8..16.
        let rb = lane % 8;
        let cb = kk * 16 + ((lane / 8) % 2) * 8;
        let fb = FragB::<bf16, 16, 8, 16>(ldmatrix_x2(&sb[at(rb, cb)]));
        acc = mma(fa, fb, acc);
    }
    let g = lane / 4;
    let t = lane % 4;
    for i in 0..4 {
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc.x[i];
    }
}
"#;
    let module = jit.load_source("tile_mma.rs", src).unwrap();
    let a = ints(16 * 64, 7, -4, 4);
    let bt = ints(8 * 64, 8, -4, 4);
    let want: Vec<f32> = (0..16 * 8).map(|x| (0..64).map(|p| a[(x / 8) * 64 + p] * bt[(x % 8) * 64 + p]).sum::<i64>() as f32).collect();
    let conv = |v: &[i64]| v.iter().map(|x| half::bf16::from_f32(*x as f32)).collect::<Vec<_>>();
    let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&bt)).unwrap());
    let mut d = dev.alloc::<f32>(&[128]).unwrap();
    module.kernel("tile_mma").unwrap().launch(&dev, Grid::new(1u32, 32u32), (&ad, &bd, &mut d)).unwrap();
    assert_eq!(d.download().unwrap(), want);
}

#[test]
fn cp_async_copies_global_to_shared_in_groups() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn stage(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<f32, 512>();
    let t = thread_idx_x() as usize;
    // Four groups: 16 bytes by L2 only, then 16, 8 and 4 bytes through L1.
    cp_async_cg::<16>(&mut tile[4 * t], &x[4 * t]);
    cp_async_commit();
    cp_async::<16>(&mut tile[128 + 4 * t], &x[128 + 4 * t]);
    cp_async_commit();
    cp_async::<8>(&mut tile[256 + 2 * t], &x[256 + 2 * t]);
    cp_async::<8>(&mut tile[320 + 2 * t], &x[320 + 2 * t]);
    cp_async_commit();
    cp_async::<4>(&mut tile[384 + t], &x[384 + t]);
    cp_async_commit();
    cp_async_wait::<1>();
    cp_async_wait::<0>();
    sync_threads();
    for j in 0..16 {
        out[j * 32 + t] = tile[j * 32 + t];
    }
}
"#;
    let module = jit.load_source("stage.rs", src).unwrap();
    let xs: Vec<f32> = (0..512).map(|i| i as f32 * 0.5 - 7.0).collect();
    let x = dev.upload(&xs).unwrap();
    let mut out = dev.alloc::<f32>(&[512]).unwrap();
    module.kernel("stage").unwrap().launch(&dev, Grid::new(1u32, 32u32), (&x, &mut out)).unwrap();
    let got = out.download().unwrap();
    // Elements 416.. were never copied: shared memory starts zeroed on the host.
    let want: Vec<f32> = (0..512).map(|i| if i < 416 { xs[i] } else { 0.0 }).collect();
    assert_eq!(got, want);
}

/// `cvt.rna.tf32.f32`: to nearest of the top 19 bits, ties away from zero.
fn tf32_model(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    f32::from_bits((x.to_bits() + 0x1000) & 0xffff_e000)
}

#[test]
fn tf32_round_rounds_to_nearest_ties_away_and_swizzle_is_cutes() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn round(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        y[i] = tf32_round(x[i]);
    }
}
#[kernel]
pub fn sw(y: &mut [usize]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = swizzle::<3, 4, 3>(i) + 1000000 * swizzle::<2, 0, 5>(i);
    }
}
"#;
    let module = jit.load_source("tf32.rs", src).unwrap();
    let mut r = rng(99);
    let mut xs: Vec<f32> = (0..4000).map(|_| f32::from_bits(r() as u32)).filter(|v| !v.is_nan()).collect();
    xs.extend([1.0 + f32::EPSILON * 2048.0, -(1.0 + f32::EPSILON * 2048.0), 1.0 + f32::EPSILON * 4096.0, f32::MAX, -f32::MAX]);
    xs.extend([f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MIN_POSITIVE / 3.0]);
    let x = dev.upload(&xs).unwrap();
    let mut y = dev.alloc::<f32>(&[xs.len()]).unwrap();
    module.kernel("round").unwrap().launch(&dev, Grid::linear(xs.len(), 128), (&x, &mut y)).unwrap();
    let got = y.download().unwrap();
    for (v, g) in xs.iter().zip(&got) {
        assert_eq!(g.to_bits(), tf32_model(*v).to_bits(), "tf32_round({v:e})");
    }
    let mut y = dev.alloc::<usize>(&[4096]).unwrap();
    module.kernel("sw").unwrap().launch(&dev, Grid::linear(4096, 128), (&mut y,)).unwrap();
    let cute = |b: usize, m: usize, s: usize, i: usize| i ^ ((i >> s) & (((1 << b) - 1) << m));
    let want: Vec<usize> = (0..4096).map(|i| cute(3, 4, 3, i) + 1000000 * cute(2, 0, 5, i)).collect();
    assert_eq!(y.download().unwrap(), want);
}

/// A kernel with every primitive, for the PTX tests; one `ldmatrix` in a device function, whose
/// array is checked to be shared where it is used.
const ALL: &str = r#"
fn load_x2(tile: &[bf16], at: usize) -> [bf16; 4] {
    ldmatrix_x2(&tile[at])
}

#[kernel]
pub fn all_of_them(h: &[f16], b: &[bf16], f: &[f32], s: &[i8], u: &[u8], out: &mut [f32], iout: &mut [i32]) {
    let sh = shared_array::<bf16, 512>();
    let sf = shared_array::<f32, 256>();
    let lane = lane_id() as usize;
    cp_async_cg::<16>(&mut sh[8 * lane], &b[8 * lane]);
    cp_async::<8>(&mut sf[2 * lane], &f[2 * lane]);
    cp_async::<4>(&mut sf[64 + lane], &f[64 + lane]);
    cp_async::<16>(&mut sf[128 + 4 * (lane % 32)], &f[4 * lane]);
    cp_async_commit();
    cp_async_wait::<0>();
    sync_threads();
    let acc = FragC::<f32, 16, 8>([0.0; 4]);
    let a = FragA::<bf16, 16, 8, 16>(ldmatrix_x4(&sh[swizzle::<3, 3, 3>(8 * lane)]));
    let x2 = ldmatrix_x2_trans(&sh[8 * (lane % 16)]);
    let x1 = ldmatrix_x1(&sh[8 * (lane % 8)]);
    let x1t = ldmatrix_x1_trans(&sh[8 * (lane % 8)]);
    let x4t = ldmatrix_x4_trans(&sh[8 * lane]);
    let x2n = load_x2(sh, 8 * (lane % 16));
    let fb = FragB::<bf16, 16, 8, 16>(x2);
    let d = mma(a, fb, acc);
    let bk8 = mma(FragA::<bf16, 16, 8, 8>([x1[0], x1t[1], x2n[0], x4t[3]]), FragB::<bf16, 16, 8, 8>([x1[1], x4t[0]]), d);
    let ha = FragA::<f16, 16, 8, 16>([h[lane]; 8]);
    let hb = FragB::<f16, 16, 8, 16>([h[lane + 1]; 4]);
    let d2 = mma(ha, hb, bk8);
    let d3 = mma(FragA::<f16, 16, 8, 8>([h[lane]; 4]), FragB::<f16, 16, 8, 8>([h[lane]; 2]), d2);
    let t = tf32_round(sf[lane]);
    let d4 = mma(FragA::<f32, 16, 8, 8>([t; 4]), FragB::<f32, 16, 8, 8>([t; 2]), d3);
    let d5 = mma(FragA::<f32, 16, 8, 4>([t; 2]), FragB::<f32, 16, 8, 4>([t; 1]), d4);
    // Stored one by one: a checked loop's fallback copy indexes with its variable.
    out[4 * lane] = d5.x[0];
    out[4 * lane + 1] = d5.x[1];
    out[4 * lane + 2] = d5.x[2];
    out[4 * lane + 3] = d5.x[3];
    let ic = FragC::<i32, 16, 8>([0; 4]);
    let i1 = mma(FragA::<i8, 16, 8, 32>([s[lane]; 16]), FragB::<i8, 16, 8, 32>([s[lane]; 8]), ic);
    let i2 = mma(FragA::<u8, 16, 8, 32>([u[lane]; 16]), FragB::<u8, 16, 8, 32>([u[lane]; 8]), i1);
    let i3 = mma(FragA::<i8, 16, 8, 16>([s[lane]; 8]), FragB::<i8, 16, 8, 16>([s[lane]; 4]), i2);
    let i4 = mma(FragA::<u8, 16, 8, 16>([u[lane]; 8]), FragB::<u8, 16, 8, 16>([u[lane]; 4]), i3);
    iout[4 * lane] = i4.x[0] + i4.x[1] + i4.x[2] + i4.x[3];
}
"#;

#[test]
fn every_primitive_assembles_for_sm_80_and_sm_90() {
    let jit = common::memory_jit();
    let module = jit.load_source("all.rs", ALL).unwrap();
    let k = module.kernel("all_of_them").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    let ptxas = common::ptxas();
    for arch in ["sm_80", "sm_90"] {
        let target = Target::Nvptx(Arch::parse(arch).unwrap());
        for checked in [true, false] {
            let c = if checked { k.compile(target, &spec) } else { k.compile_unchecked(target, &spec) }.unwrap();
            let ptx = c.ptx().unwrap();
            for want in [
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32",
                "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32",
                "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32",
                "mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
                "cp.async.cg.shared.global",
                "cp.async.ca.shared.global",
                "cp.async.commit_group",
                "cp.async.wait_group 0",
                "cvt.rna.tf32.f32",
            ] {
                assert!(ptx.contains(want), "{arch} (checked: {checked}): no `{want}` in\n{ptx}");
            }
            // Every array here is the kernel's own or a shared array passed down to `load_x2`:
            // which memory each is in is known once that is inlined, and tested nowhere.
            assert!(!ptx.contains("isspacep"), "{arch} checked: {checked}");
            assert!(!ptx.contains(".local"), "{arch}: fragments spilled to local memory");
            if let Some(p) = &ptxas {
                kache::toolchain::ptxas(p, ptx, arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}"));
            }
        }
    }
}

#[test]
fn a_primitive_the_target_lacks_is_an_error_at_its_call_naming_the_architecture() {
    let jit = common::memory_jit();
    let module = jit.load_source("all.rs", ALL).unwrap();
    let k = module.kernel("all_of_them").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    for (arch, needs) in [("sm_75", "sm_80"), ("sm_70", "sm_80")] {
        let e = k.compile(Target::Nvptx(Arch::parse(arch).unwrap()), &spec).unwrap_err();
        let Error::Source(d) = &e else { panic!("{arch}: {e}") };
        let text = d.to_string();
        assert!(text.starts_with("all.rs:"), "{text}");
        assert!(text.contains(&format!("needs {needs} or later; this compile is for {arch}")), "{text}");
    }
    // Each is named at its own call.
    let m = jit
        .load_source(
            "ampere.rs",
            r#"
#[kernel]
pub fn k(x: &[f16], out: &mut [f32]) {
    let tile = shared_array::<f16, 256>();
    let lane = lane_id() as usize;
    tile[lane] = x[lane];
    sync_threads();
    let w = ldmatrix_x1(&tile[8 * (lane % 8)]);
    out[lane] = w[0] as f32;
}
#[kernel]
pub fn copy(x: &[f16], out: &mut [f16]) {
    let tile = shared_array::<f16, 256>();
    let lane = lane_id() as usize;
    cp_async::<16>(&mut tile[8 * lane], &x[8 * lane]);
    out[lane] = tile[lane];
}
"#,
        )
        .unwrap();
    let k = m.kernel("k").unwrap();
    let e = k.compile(Target::Nvptx(Arch::parse("sm_75").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap_err();
    assert!(e.to_string().contains("ampere.rs:8:13") && e.to_string().contains("`ldmatrix_x1` needs sm_80"), "{e}");
    let k = m.kernel("copy").unwrap();
    let e = k.compile(Target::Nvptx(Arch::parse("sm_70").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap_err();
    assert!(e.to_string().contains("ampere.rs:15:5") && e.to_string().contains("`cp_async` needs sm_80"), "{e}");
}

/// A device function's tensor access tests the memory its array is in only where that is not
/// known after inlining: the kernel's arrays (global) and a shared array passed down are known
/// and untested; an array chosen at run time between the two keeps its test, on the GPU and on
/// the host, where choosing the global one is a launch error.
#[test]
fn memory_tests_known_after_inlining_are_left_out_and_a_chosen_array_keeps_its_test() {
    let src = r#"
fn copy_in(dst: &mut [f32], src: &[f32], i: usize) {
    cp_async::<4>(&mut dst[i], &src[i]);
}
#[kernel]
pub fn known(g: &[f32], out: &mut [f32]) {
    let sh = shared_array::<f32, 64>();
    let lane = lane_id() as usize;
    copy_in(sh, g, lane);
    cp_async_commit();
    cp_async_wait::<0>();
    out[lane] = sh[lane];
}
fn copy16(dst: &mut [f32], d: usize, src: &[f32], s: usize) {
    cp_async::<16>(&mut dst[d], &src[s]);
}
#[kernel]
pub fn wide(g: &[f32], at: usize, to: usize, out: &mut [f32]) {
    let sh = shared_array::<f32, 256>();
    let lane = lane_id() as usize;
    copy16(sh, 4 * lane + to, g, 4 * lane + at);
    cp_async_commit();
    cp_async_wait::<0>();
    out[lane] = sh[4 * lane];
}
#[kernel]
pub fn chosen(g: &[f32], h: &mut [f32], to_global: bool) {
    let sh = shared_array::<f32, 64>();
    let lane = lane_id() as usize;
    let dst = if to_global { h } else { sh };
    copy_in(dst, g, lane);
    cp_async_wait::<0>();
}
"#;
    let jit = common::memory_jit();
    let m = jit.load_source("spaces.rs", src).unwrap();
    let target = Target::Nvptx(Arch::parse("sm_80").unwrap());
    let ptx = |name: &str, checked: bool| {
        let k = m.kernel(name).unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        let c = if checked { k.compile(target, &spec) } else { k.compile_unchecked(target, &spec) }.unwrap();
        c.ptx().unwrap().to_string()
    };
    let known = ptx("known", true);
    assert!(!known.contains("isspacep"), "{known}");
    // Still checked: the bounds and the alignment.
    assert_ne!(known, ptx("known", false));
    let chosen = ptx("chosen", true);
    assert_eq!(chosen.matches("isspacep.shared").count(), 1, "{chosen}");
    assert!(!chosen.contains("isspacep.global"), "{chosen}");
    let dev = Device::host();
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let g = dev.upload(&x).unwrap();
    let mut out = dev.alloc::<f32>(&[64]).unwrap();
    let grid = Grid::new(1u32, 32u32);
    m.kernel("known").unwrap().launch(&dev, grid, (&g, &mut out)).unwrap();
    assert_eq!(out.download().unwrap()[..32], x[..32]);
    // Alignment is still tested where the array comes from a parameter: of the source's
    // address, and of the destination's place in shared memory.
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let g = dev.upload(&x).unwrap();
    let wide = m.kernel("wide").unwrap();
    wide.launch(&dev, grid, (&g, 0usize, 0usize, &mut out)).unwrap();
    assert_eq!(out.download().unwrap()[..32], (0..32).map(|l| x[4 * l]).collect::<Vec<_>>()[..]);
    for (at, to) in [(1usize, 0usize), (0, 2)] {
        let e = wide.launch(&dev, grid, (&g, at, to, &mut out)).unwrap_err().to_string();
        assert!(e.contains("is not aligned to 16 bytes") && e.contains("spaces.rs:15:"), "{at} {to}: {e}");
    }
    let k = m.kernel("chosen").unwrap();
    k.launch(&dev, grid, (&g, &mut out, false)).unwrap();
    let e = k.launch(&dev, grid, (&g, &mut out, true)).unwrap_err().to_string();
    assert!(e.contains("is not in shared memory") && e.contains("spaces.rs:3:"), "{e}");
}

#[test]
fn misaligned_misplaced_and_overrunning_accesses_are_launch_errors() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn ld(x: &[bf16], at: usize, from_global: bool, out: &mut [bf16]) {
    let tile = shared_array::<bf16, 256>();
    let lane = lane_id() as usize;
    let w = if from_global { ldmatrix_x1(&x[8 * lane]) } else { ldmatrix_x1(&tile[8 * lane + at]) };
    out[2 * lane] = w[0];
}
#[kernel]
pub fn ld_short(x: &[bf16], out: &mut [bf16]) {
    let tile = shared_array::<bf16, 252>();
    let lane = lane_id() as usize;
    let w = ldmatrix_x1(&tile[8 * lane]);
    out[2 * lane] = w[0] + x[0];
}
#[kernel]
pub fn cp(x: &[f32], at: usize, to_global: bool, out: &mut [f32]) {
    let tile = shared_array::<f32, 128>();
    let t = thread_idx_x() as usize;
    if to_global {
        cp_async::<16>(&mut out[4 * t], &x[4 * t]);
    } else {
        cp_async::<16>(&mut tile[4 * t + at], &x[4 * t]);
    }
    cp_async_wait::<0>();
}
#[kernel]
pub fn cp_from_shared(out: &mut [f32]) {
    let tile = shared_array::<f32, 128>();
    let t = thread_idx_x() as usize;
    cp_async::<16>(&mut tile[4 * t], &tile[0]);
    out[t] = tile[t];
}
"#;
    let m = jit.load_source("faults.rs", src).unwrap();
    let xb = dev.upload(&vec![half::bf16::ZERO; 256]).unwrap();
    let mut ob = dev.alloc::<half::bf16>(&[64]).unwrap();
    let ld = m.kernel("ld").unwrap();
    let g = Grid::new(1u32, 32u32);
    ld.launch(&dev, g, (&xb, 0usize, false, &mut ob)).unwrap();
    let e = ld.launch(&dev, g, (&xb, 4usize, false, &mut ob)).unwrap_err().to_string();
    assert!(e.contains("is not aligned to 16 bytes") && e.contains("faults.rs:6:"), "{e}");
    let e = ld.launch(&dev, g, (&xb, 8usize, false, &mut ob)).unwrap_err().to_string();
    assert!(e.contains("index 256 is out of bounds") && e.contains("length 256"), "{e}");
    // Lane 31's row starts inside the tile and ends past it.
    let e = m.kernel("ld_short").unwrap().launch(&dev, g, (&xb, &mut ob)).unwrap_err().to_string();
    assert!(e.contains("index 255 is out of bounds") && e.contains("length 252"), "{e}");
    let e = ld.launch(&dev, g, (&xb, 0usize, true, &mut ob)).unwrap_err().to_string();
    assert!(e.contains("is not in shared memory") && e.contains("parameter `x`"), "{e}");
    let xf = dev.upload(&vec![1.0f32; 128]).unwrap();
    let mut of = dev.alloc::<f32>(&[128]).unwrap();
    let cp = m.kernel("cp").unwrap();
    cp.launch(&dev, g, (&xf, 0usize, false, &mut of)).unwrap();
    let e = cp.launch(&dev, g, (&xf, 2usize, false, &mut of)).unwrap_err().to_string();
    assert!(e.contains("is not aligned to 16 bytes"), "{e}");
    let e = cp.launch(&dev, g, (&xf, 0usize, true, &mut of)).unwrap_err().to_string();
    assert!(e.contains("is not in shared memory") && e.contains("parameter `out`"), "{e}");
    let e = m.kernel("cp_from_shared").unwrap().launch(&dev, g, (&mut of,)).unwrap_err().to_string();
    assert!(e.contains("is not in global memory"), "{e}");
    // A warp of fewer than 32 lanes cannot run a warp-wide instruction.
    let e = ld.launch(&dev, Grid::new(1u32, 48u32), (&xb, 0usize, false, &mut ob)).unwrap_err().to_string();
    assert!(e.contains("without lane 16") && e.contains("needs all 32 lanes"), "{e}");
}

/// Fragments of a type parameter: a generic kernel over `f16` and `bf16` and the generic
/// device functions it calls, each instance checked and run.
#[test]
fn generic_kernels_and_functions_take_fragments_of_their_type_parameter() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
fn load_a<T: Float>(a: &[T], g: usize, t: usize) -> FragA<T, 16, 8, 16> {
    let mut x = [T::ZERO; 8];
    for i in 0..8 {
        x[i] = a[(g + 8 * ((i / 2) % 2)) * 16 + 2 * t + i % 2 + 8 * (i / 4)];
    }
    FragA::<T, 16, 8, 16>(x)
}

fn step<T: Float>(a: FragA<T, 16, 8, 16>, b: FragB<T, 16, 8, 16>, c: FragC<f32, 16, 8>) -> FragC<f32, 16, 8> {
    mma(a, b, c)
}

#[kernel]
pub fn tile<T: Float>(a: &[T], b: &[T], d: &mut [f32]) {
    let lane = lane_id() as usize;
    let g = lane / 4;
    let t = lane % 4;
    let fa = load_a(a, g, t);
    let fb = FragB::<T, 16, 8, 16>([b[2 * t * 8 + g], b[(2 * t + 1) * 8 + g], b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]]);
    let c = step::<T>(fa, fb, FragC::<f32, 16, 8>([1.0; 4]));
    for i in 0..4 {
        d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = c.x[i];
    }
}
"#;
    let m = jit.load_source("generic_tile.rs", src).unwrap();
    let a = ints(256, 11, -5, 5);
    let b = ints(128, 12, -5, 5);
    let want = reference(&a, &b, &[1; 128], 16, 8, 16);
    let want: Vec<f32> = want.iter().map(|v| *v as f32).collect();
    let mut d = dev.alloc::<f32>(&[128]).unwrap();
    let g = Grid::new(1u32, 32u32);
    let conv = |v: &[i64]| v.iter().map(|x| half::bf16::from_f32(*x as f32)).collect::<Vec<_>>();
    let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
    m.kernel("tile::<bf16>").unwrap().launch(&dev, g, (&ad, &bd, &mut d)).unwrap();
    assert_eq!(d.download().unwrap(), want);
    let conv = |v: &[i64]| v.iter().map(|x| half::f16::from_f32(*x as f32)).collect::<Vec<_>>();
    let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&b)).unwrap());
    let mut d = dev.alloc::<f32>(&[128]).unwrap();
    // The launch's arguments choose the instance.
    m.kernel("tile").unwrap().launch(&dev, g, (&ad, &bd, &mut d)).unwrap();
    assert_eq!(d.download().unwrap(), want);
    // `f32` has no 16 x 8 x 16 `mma`: an error at the fragment's type in the generic body.
    let e = m.kernel("tile::<f32>").unwrap_err().to_string();
    assert!(e.contains("no `mma` multiplies `f32` at 16 x 8 x 16"), "{e}");
}
