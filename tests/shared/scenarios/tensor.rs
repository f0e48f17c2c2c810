//! Scenarios: the tensor cores (`tensor_cores.rs`): `mma` of `f16`, `bf16`, tf32 and 8-bit
//! integers, fragments from `ldmatrix` over swizzled tiles staged by `cp_async`. The inputs are
//! small integers, so every product and sum is exact and the GPU's tensor cores and the host's
//! emulation give the reference to the bit.

use half::{bf16, f16};
use kache::{Device, Grid};

use super::helpers::*;

fn ints(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    (0..n).map(|i| lo + (rnd(seed * 100_003 + i as u64) % (hi - lo + 1) as u64) as i64).collect()
}

/// D = A·B + C for row-major A (m x k), B (k x n), C (m x n).
fn gemm(a: &[i64], b: &[i64], c: &[i64], m: usize, n: usize, k: usize) -> Vec<i64> {
    (0..m * n).map(|x| c[x] + (0..k).map(|p| a[(x / n) * k + p] * b[p * n + x % n]).sum::<i64>()).collect()
}

pub fn tensor_cores(dev: &Device) -> Outcome {
    let m = module("tensor_cores.rs")?;
    let warp = Grid::new(1u32, 32u32);
    let (a, b, c) = (ints(16 * 64, 1, -6, 6), ints(64 * 8, 2, -6, 6), ints(16 * 8, 3, -500, 500));
    let want: Vec<f32> = gemm(&a, &b, &c, 16, 8, 64).iter().map(|v| *v as f32).collect();
    let cf = up(dev, &c.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    for ty in ["bf16", "f16"] {
        let mut d = zeros::<f32>(dev, &[128])?;
        let mut dt = zeros::<f32>(dev, &[128])?;
        let name = format!("tile_64::<{ty}>");
        if ty == "bf16" {
            let conv = |v: &[i64]| v.iter().map(|x| bf16::from_f32(*x as f32)).collect::<Vec<_>>();
            launch(&m, &name, dev, warp, (&up(dev, &conv(&a))?, &up(dev, &conv(&b))?, &cf, &mut d, &mut dt))?;
        } else {
            let conv = |v: &[i64]| v.iter().map(|x| f16::from_f32(*x as f32)).collect::<Vec<_>>();
            launch(&m, &name, dev, warp, (&up(dev, &conv(&a))?, &up(dev, &conv(&b))?, &cf, &mut d, &mut dt))?;
        }
        eq(&name, &dl(&d)?, &want)?;
        eq(&format!("{name} (B by ldmatrix_x2_trans)"), &dl(&dt)?, &want)?;
    }
    // tf32: values a little off eighths (quarters) of at least 1, which `tf32_round` rounds back
    // to them: the negative ones lie just below in magnitude, so that truncating would give the
    // next value down. Every product and sum of the rounded values is then exact.
    let round = |x: f32| f32::from_bits((x.to_bits() + 0x1000) & 0xffff_e000);
    let signed = |v: i64| if v % 2 == 0 { v as f32 } else { -(v as f32) };
    let fa: Vec<f32> = ints(128, 4, 8, 64).iter().map(|v| signed(*v) / 8.0 + 1.0 / 16384.0).collect();
    let fb: Vec<f32> = ints(64, 5, 4, 32).iter().map(|v| signed(*v) / 4.0 + 1.0 / 16384.0).collect();
    let truncated = |x: f32| f32::from_bits(x.to_bits() & 0xffff_e000);
    if fa.iter().any(|v| round(*v) == *v) || !fa.iter().any(|v| truncated(*v) != round(*v)) {
        return Err("tile_tf32: the inputs do not exercise rounding".into());
    }
    let mut d = zeros::<f32>(dev, &[128])?;
    launch(&m, "tile_tf32", dev, warp, (&up(dev, &fa)?, &up(dev, &fb)?, &cf, &mut d))?;
    let want: Vec<f32> = (0..128)
        .map(|x| c[x] as f32 + (0..8).map(|p| round(fa[(x / 8) * 8 + p]) as f64 * round(fb[p * 8 + x % 8]) as f64).sum::<f64>() as f32)
        .collect();
    eq("tile_tf32", &dl(&d)?, &want)?;
    // int8, signed and unsigned, over their whole ranges.
    let (a8, b8) = (ints(16 * 32, 6, -128, 127), ints(32 * 8, 7, -128, 127));
    let ci = ints(128, 8, -100_000, 100_000);
    let mut d = zeros::<i32>(dev, &[128])?;
    let mut du = zeros::<i32>(dev, &[128])?;
    let s8 = |v: &[i64]| v.iter().map(|x| *x as i8).collect::<Vec<_>>();
    let u8s = |v: &[i64]| v.iter().map(|x| *x as u8).collect::<Vec<_>>();
    let cd = up(dev, &ci.iter().map(|v| *v as i32).collect::<Vec<_>>())?;
    let args = (&up(dev, &s8(&a8))?, &up(dev, &s8(&b8))?, &up(dev, &u8s(&a8))?, &up(dev, &u8s(&b8))?, &cd, &mut d, &mut du);
    launch(&m, "tile_i8", dev, warp, args)?;
    let want: Vec<i32> = gemm(&a8, &b8, &ci, 16, 8, 32).iter().map(|v| *v as i32).collect();
    eq("tile_i8", &dl(&d)?, &want)?;
    let ua: Vec<i64> = a8.iter().map(|v| (*v as u8) as i64).collect();
    let ub: Vec<i64> = b8.iter().map(|v| (*v as u8) as i64).collect();
    let want: Vec<i32> = gemm(&ua, &ub, &ci, 16, 8, 32).iter().map(|v| *v as i32).collect();
    eq("tile_i8 (u8)", &dl(&du)?, &want)
}

/// ldmatrix_forms: lanes `8j..8j+8` name matrix `j`'s rows; lane `l` receives elements
/// `2 (l % 4)` and the next of row `l / 4` (transposed: of column `l / 4`, rows `2 (l % 4)`
/// and the next), as the PTX ISA says.
pub fn tensor_ldmatrix_forms(dev: &Device) -> Outcome {
    let m = module("tensor_cores.rs")?;
    let x: Vec<u16> = (0..256u64).map(|i| rnd(i + 77) as u16).collect();
    let mut out = zeros::<u16>(dev, &[32 * 28])?;
    launch(&m, "ldmatrix_forms", dev, Grid::new(1u32, 32u32), (&up(dev, &x)?, &mut out))?;
    let row = |r: usize, c: usize| x[r * 8 + c];
    let mut want = Vec::new();
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for count in [1, 2, 4] {
            for trans in [false, true] {
                for j in 0..count {
                    if trans {
                        want.extend([row(8 * j + 2 * t, g), row(8 * j + 2 * t + 1, g)]);
                    } else {
                        want.extend([row(8 * j + g, 2 * t), row(8 * j + g, 2 * t + 1)]);
                    }
                }
            }
        }
    }
    eq("ldmatrix_forms", &dl(&out)?, &want)
}

/// The warpgroup MMA (`tensor_wgmma.rs`): one warpgroup's 64 x 128 x 64 product of `bf16` and
/// of `f16` plus C through the 128-byte swizzle, tiles staged by `cp_async`, a 64 x 64 x 64
/// one through the 64-byte swizzle in two commit groups, and a 64 x 128 x 32 one of tf32 by two
/// consumer warpgroups that take the registers a staging warpgroup gives back (`setmaxnreg`). Small integers: exact everywhere. On a
/// GPU other than compute capability 9.0 the launch must be the located error naming sm_90a.
pub fn tensor_wgmma(dev: &Device) -> Outcome {
    let m = module("tensor_wgmma.rs")?;
    let group = Grid::new(1u32, 128u32);
    let (a, bt, c) = (ints(64 * 64, 11, -6, 6), ints(128 * 64, 12, -6, 6), ints(64 * 128, 13, -500, 500));
    if dev.compute_capability().is_some_and(|cc| cc != (9, 0)) {
        let conv = |v: &[i64]| v.iter().map(|x| bf16::from_f32(*x as f32)).collect::<Vec<_>>();
        let mut d = zeros::<f32>(dev, &[64 * 128])?;
        let cf = up(dev, &c.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
        let k = m.kernel("wg_tile::<bf16>").ctx("wg_tile")?;
        return match k.launch(dev, group, (&up(dev, &conv(&a))?, &up(dev, &conv(&bt))?, &cf, &mut d)) {
            Err(e) if e.to_string().contains("needs sm_90a") => Ok(()),
            other => Err(format!(
                "wg_tile on compute capability {:?}: expected the error naming sm_90a, got {other:?}",
                dev.compute_capability()
            )),
        };
    }
    // Bᵀ (N x K) times: B[p][j] = bt[j * 64 + p].
    let b: Vec<i64> = (0..64 * 128).map(|x| bt[(x % 128) * 64 + x / 128]).collect();
    let want: Vec<f32> = gemm(&a, &b, &c, 64, 128, 64).iter().map(|v| *v as f32).collect();
    let cf = up(dev, &c.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    for ty in ["bf16", "f16"] {
        let mut d = zeros::<f32>(dev, &[64 * 128])?;
        let name = format!("wg_tile::<{ty}>");
        if ty == "bf16" {
            let conv = |v: &[i64]| v.iter().map(|x| bf16::from_f32(*x as f32)).collect::<Vec<_>>();
            launch(&m, &name, dev, group, (&up(dev, &conv(&a))?, &up(dev, &conv(&bt))?, &cf, &mut d))?;
        } else {
            let conv = |v: &[i64]| v.iter().map(|x| f16::from_f32(*x as f32)).collect::<Vec<_>>();
            launch(&m, &name, dev, group, (&up(dev, &conv(&a))?, &up(dev, &conv(&bt))?, &cf, &mut d))?;
        }
        eq(&name, &dl(&d)?, &want)?;
    }
    let bt64 = &bt[..64 * 64];
    let b64: Vec<i64> = (0..64 * 64).map(|x| bt64[(x % 64) * 64 + x / 64]).collect();
    let want: Vec<f32> = gemm(&a, &b64, &[0; 64 * 64], 64, 64, 64).iter().map(|v| *v as f32).collect();
    let conv = |v: &[i64]| v.iter().map(|x| bf16::from_f32(*x as f32)).collect::<Vec<_>>();
    let mut d = zeros::<f32>(dev, &[64 * 64])?;
    launch(&m, "wg_narrow", dev, group, (&up(dev, &conv(&a))?, &up(dev, &conv(bt64))?, &mut d))?;
    eq("wg_narrow", &dl(&d)?, &want)?;
    // tf32, warp-specialised (384 threads, `setmaxnreg`): A 64 x 32, Bᵀ 128 x 32; every input's
    // low 13 bits set, which tf32 reads past.
    let (a32, bt32) = (&a[..64 * 32], &bt[..128 * 32]);
    let b32: Vec<i64> = (0..32 * 128).map(|x| bt32[(x % 128) * 32 + x / 128]).collect();
    let want: Vec<f32> = gemm(a32, &b32, &[0; 64 * 128], 64, 128, 32).iter().map(|v| *v as f32).collect();
    let noisy = |v: &[i64]| v.iter().map(|x| f32::from_bits((*x as f32).to_bits() | if *x == 0 { 0 } else { 0x0fff })).collect::<Vec<_>>();
    let mut d = zeros::<f32>(dev, &[64 * 128])?;
    launch(&m, "wg_tf32_split", dev, Grid::new(1u32, 384u32), (&up(dev, &noisy(a32))?, &up(dev, &noisy(bt32))?, &mut d))?;
    eq("wg_tf32_split", &dl(&d)?, &want)
}

/// Bulk copies and mbarriers (`tensor_bulk.rs`): a ring of 4 stages over 11 chunks (the
/// parities wrap twice, the last pass is partial), one block of 128 threads; every thread sums
/// its two columns of each chunk. Small integers: exact.
pub fn tensor_bulk_copy(dev: &Device) -> Outcome {
    let m = module("tensor_bulk.rs")?;
    if dev.compute_capability().is_some_and(|cc| cc.0 < 9) {
        return Err(format!("tensor_bulk_copy needs sm_90 or later; this GPU is {:?}", dev.compute_capability()));
    }
    let x: Vec<f32> = ints(11 * 256, 21, -50, 50).iter().map(|v| *v as f32).collect();
    let want: Vec<f32> = (0..128).map(|t| (0..11).map(|c| x[c * 256 + t] + 2.0 * x[c * 256 + 128 + t]).sum()).collect();
    let mut out = zeros::<f32>(dev, &[128])?;
    launch(&m, "ring_sum", dev, Grid::new(1u32, 128u32), (&up(dev, &x)?, &mut out))?;
    eq("ring_sum", &dl(&out)?, &want)
}

/// Tensor maps and the tensor copy (`tensor_map.rs`): a 70 x 52 array (rows of 208 bytes,
/// padded to 224 by a wider array's view) transposed in 32 x 32 tiles, the last row and column
/// of tiles reaching past the array.
pub fn tensor_map_transpose(dev: &Device) -> Outcome {
    let m = module("tensor_map.rs")?;
    if dev.compute_capability().is_some_and(|cc| cc.0 < 9) {
        return Err(format!("tensor_map_transpose needs sm_90 or later; this GPU is {:?}", dev.compute_capability()));
    }
    let (rows, cols, pitch) = (70usize, 52usize, 56usize);
    let x: Vec<f32> = ints(rows * pitch, 23, -1000, 1000).iter().map(|v| *v as f32).collect();
    let whole = dev.upload_nd(&x, &[rows, pitch], kache::Order::C).ctx("uploading")?;
    let a = whole.view(0, &[rows, cols], &[pitch as isize, 1]).ctx("viewing")?;
    let map = kache::TensorMap::tiled(&a, 32, 32, 128).ctx("making the map")?;
    let want: Vec<f32> = (0..cols * rows).map(|i| x[(i % rows) * pitch + i / rows]).collect();
    let mut out = zeros::<f32>(dev, &[cols * rows])?;
    let grid = Grid::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), 256u32);
    launch(&m, "transpose_tiles", dev, grid, (&map, rows, cols, &mut out))?;
    eq("transpose_tiles", &dl(&out)?, &want)
}

/// The speed suite's tensor-core kernels (benches/speed/kernels/), at small sizes.
fn speed_kernels(file: &str) -> Result<kache::Module, String> {
    let jit = kache::Jit::new(kache::Config::in_memory()).ctx("creating the JIT")?;
    jit.load_file(root().join("benches/speed/kernels").join(file)).ctx(&format!("loading {file}"))
}

/// The error of `got` against float64 sums over (sum |a b| + |want|).
fn gemm_err(got: &[f64], a: &[f64], b: &[f64], m: usize, n: usize, k: usize, bias: Option<&[f64]>) -> f64 {
    let mut worst = 0f64;
    // Every row and every column, in a sample of a third of the outputs.
    for i in 0..m {
        for j in (i % 3..n).step_by(3) {
            let (mut want, mut scale) = (0f64, 0f64);
            for p in 0..k {
                want += a[i * k + p] * b[p * n + j];
                scale += (a[i * k + p] * b[p * n + j]).abs();
            }
            if let Some(bias) = bias {
                want += bias[j];
                want = 0.5 * want * (1.0 + libm::erf(want / std::f64::consts::SQRT_2));
            }
            worst = worst.max((got[i * n + j] - want).abs() / (scale + want.abs()).max(1e-30));
        }
    }
    worst
}

/// gemm::<bf16>, gemm::<f16>, gemm_bias_gelu::<bf16>, gemm_tf32 and sgemm on a 256 x 80 by
/// 80 x 128 product (two block-rows; five K tiles of 16 and ten of 8: the rings of 4 stages
/// wrap).
pub fn tensor_gemms(dev: &Device) -> Outcome {
    let m = speed_kernels("gemm.rs")?;
    let (rows, cols, depth) = (256usize, 128usize, 80usize);
    let grid = Grid::new(((rows / 128) * (cols / 128)) as u32, 256u32);
    let af: Vec<f32> = (0..rows * depth).map(|i| rndf(i as u64 + 1, -1.0, 1.0) as f32).collect();
    let bf: Vec<f32> = (0..depth * cols).map(|i| rndf(i as u64 + 50_000, -1.0, 1.0) as f32).collect();
    let biasf: Vec<f32> = (0..cols).map(|i| rndf(i as u64 + 90_000, -1.0, 1.0) as f32).collect();
    for (ty, gelu) in [("bf16", false), ("f16", false), ("bf16", true)] {
        let name = if gelu { format!("gemm_bias_gelu::<{ty}>") } else { format!("gemm::<{ty}>") };
        let (got, aw, bw, biasw): (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) = if ty == "bf16" {
            let conv = |v: &[f32]| v.iter().map(|x| bf16::from_f32(*x)).collect::<Vec<_>>();
            let (a, b, bias) = (conv(&af), conv(&bf), conv(&biasf));
            let mut c = zeros::<bf16>(dev, &[rows * cols])?;
            if gelu {
                launch(&m, &name, dev, grid, (&up(dev, &a)?, &up(dev, &b)?, &up(dev, &bias)?, &mut c, rows, cols, depth))?;
            } else {
                launch(&m, &name, dev, grid, (&up(dev, &a)?, &up(dev, &b)?, &mut c, rows, cols, depth))?;
            }
            let w = |v: &[bf16]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
            (w(&dl(&c)?), w(&a), w(&b), w(&bias))
        } else {
            let conv = |v: &[f32]| v.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>();
            let (a, b) = (conv(&af), conv(&bf));
            let mut c = zeros::<f16>(dev, &[rows * cols])?;
            launch(&m, &name, dev, grid, (&up(dev, &a)?, &up(dev, &b)?, &mut c, rows, cols, depth))?;
            let w = |v: &[f16]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
            (w(&dl(&c)?), w(&a), w(&b), Vec::new())
        };
        let e = gemm_err(&got, &aw, &bw, rows, cols, depth, if gelu { Some(&biasw) } else { None });
        if e > 8e-3 {
            return Err(format!("{name}: error {e:.2e} of (sum |a b| + |c|)"));
        }
    }
    let (aw, bw): (Vec<f64>, Vec<f64>) = (af.iter().map(|v| *v as f64).collect(), bf.iter().map(|v| *v as f64).collect());
    for (name, tol) in [("gemm_tf32", 4e-3), ("sgemm", 1e-5)] {
        let mut c = zeros::<f32>(dev, &[rows * cols])?;
        launch(&m, name, dev, grid, (&up(dev, &af)?, &up(dev, &bf)?, &mut c, rows, cols, depth))?;
        let got: Vec<f64> = dl(&c)?.iter().map(|v| *v as f64).collect();
        let e = gemm_err(&got, &aw, &bw, rows, cols, depth, None);
        if e > tol {
            return Err(format!("{name}: error {e:.2e} of (sum |a b| + |c|), tolerance {tol:.0e}"));
        }
    }
    Ok(())
}

/// attn_d64, attn_d64_causal, attn_d128, attn_d128_causal: a head of 256 positions (two blocks
/// of rows, so causal blocks do unequal work) against float64 softmax(Q Kᵀ / sqrt(D)) V,
/// on every seventh row and the first and last.
pub fn tensor_attention(dev: &Device) -> Outcome {
    let m = speed_kernels("attention.rs")?;
    let (heads, seq) = (1usize, 256usize);
    for d in [64usize, 128] {
        for causal in [false, true] {
            let name = format!("attn_d{d}{}", if causal { "_causal" } else { "" });
            let len = heads * seq * d;
            let draw =
                |seed: u64| -> Vec<bf16> { (0..len).map(|i| bf16::from_f64(rndf(seed * 1_000_003 + i as u64, -1.0, 1.0))).collect() };
            let (q, k, v) = (draw(1), draw(2), draw(3));
            let mut o = zeros::<bf16>(dev, &[len])?;
            let scale = 1.0 / (d as f32).sqrt();
            let grid = Grid::new(((seq / 128) as u32, heads as u32), 128u32);
            launch(&m, &name, dev, grid, (&up(dev, &q)?, &up(dev, &k)?, &up(dev, &v)?, &mut o, seq, scale))?;
            let o = dl(&o)?;
            let mut worst = 0f64;
            for h in 0..heads {
                let base = h * seq * d;
                for i in (0..seq).filter(|i| i % 7 == 0 || *i == seq - 1) {
                    let keys = if causal { i + 1 } else { seq };
                    let s: Vec<f64> = (0..keys)
                        .map(|j| (0..d).map(|x| q[base + i * d + x].to_f64() * k[base + j * d + x].to_f64()).sum::<f64>() * scale as f64)
                        .collect();
                    let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let w: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                    let total: f64 = w.iter().sum();
                    for x in 0..d {
                        let want: f64 = (0..keys).map(|j| w[j] * v[base + j * d + x].to_f64()).sum::<f64>() / total;
                        let scale_: f64 = (0..keys).map(|j| w[j] * v[base + j * d + x].to_f64().abs()).sum::<f64>() / total;
                        worst = worst.max((o[base + i * d + x].to_f64() - want).abs() / scale_.max(1e-30));
                    }
                }
            }
            if worst > 1e-2 {
                return Err(format!("{name}: error {worst:.2e} of sum p |v|"));
            }
        }
    }
    Ok(())
}
