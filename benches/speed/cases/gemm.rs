//! Matrix products on the tensor cores and in f32 (benches/speed/kernels/gemm.rs): bf16 and f16 GEMM,
//! bf16 with a fused bias + GELU, tf32 and f32, each checked against float64 sums on sampled
//! outputs; and the `mma.sync` throughput of this GPU (`mma_peak`). torch (cuBLAS) and Triton
//! measure the same rows in triton_tensor.py; tensor_table.py sets them side by side.

use half::{bf16, f16};
use kache::{Element, Grid, TensorMap};

use super::super::harness::*;

/// Blocks of 256 threads: one per 128 x 128 tile of C.
fn tiles(n: usize) -> Grid {
    Grid::new(((n / 128) * (n / 128)) as u32, 256u32)
}

/// A check of C against float64 on 256 sampled outputs: the error over (sum |a b| + |ref|).
fn sampled(a: &[f64], b: &[f64], c: &[f64], n: usize, bias: Option<&[f64]>, tol: f64) -> Result<String, String> {
    let mut pick = rng(41);
    let mut worst = 0f64;
    for _ in 0..256 {
        let (i, j) = (pick() as usize % n, pick() as usize % n);
        let (mut want, mut scale) = (0f64, 0f64);
        for k in 0..n {
            want += a[i * n + k] * b[k * n + j];
            scale += (a[i * n + k] * b[k * n + j]).abs();
        }
        if let Some(bias) = bias {
            want += bias[j];
            want = 0.5 * want * (1.0 + libm::erf(want / std::f64::consts::SQRT_2));
        }
        worst = worst.max((c[i * n + j] - want).abs() / (scale + want.abs()).max(1e-30));
    }
    if worst > tol {
        Err(format!("error {worst:.2e} of (sum |a b| + |c|), tolerance {tol:.0e}"))
    } else {
        Ok(format!("max err {worst:.1e} of (sum|ab|+|c|), 256 samples"))
    }
}

fn inputs(n: usize, seed: u64) -> Vec<f32> {
    uniform_f32(n * n, seed).iter().map(|v| 2.0 * v - 1.0).collect()
}

/// `variant::<T>` (and `variant_bias_gelu::<T>` where `gelu`) at n x n x n: `gemm` (mma.sync),
/// or their twins on sm_90a's warpgroup MMA, `gemm_wg::<T>` and `gemm_wg_bias_gelu::<T>`
/// (tiles by `cp_async`) and `gemm_tma::<T>`, `gemm_tma_bias_gelu::<T>` (by tensor copies): C = A·Bᵀ with
/// Bᵀ given N x K, the same A and B (B transposed on the host, so the check is the same), rows
/// `gemm_wg_*` and `gemm_tma_*`, which tensor_table.py sets beside torch's `gemm_*` of the same type and size
/// (cuBLAS takes either layout of B at the same speed). Those compile for sm_90a only: on
/// another GPU their rows fail, naming the architecture.
fn half_gemm<T: Element + Copy>(
    run: &mut Run,
    n: usize,
    ty: &str,
    gelu: bool,
    variant: &str,
    to: fn(f32) -> T,
    from: fn(T) -> f32,
) -> Result<(), String> {
    let a: Vec<T> = inputs(n, 11).into_iter().map(to).collect();
    let b: Vec<T> = inputs(n, 12).into_iter().map(to).collect();
    let wg = variant != "gemm";
    let b_in = if wg { transpose(&b, n) } else { b.clone() };
    let bias: Vec<T> = uniform_f32(n, 13).into_iter().map(|v| to(2.0 * v - 1.0)).collect();
    let wide = |v: &[T]| v.iter().map(|x| from(*x) as f64).collect::<Vec<f64>>();
    let (aw, bw, biasw) = (wide(&a), wide(&b), wide(&bias));
    let ad = run.dev.upload(&a).map_err(|e| e.to_string())?;
    let bd = run.dev.upload(&b_in).map_err(|e| e.to_string())?;
    let biasd = run.dev.upload(&bias).map_err(|e| e.to_string())?;
    let cd = run.dev.alloc::<T>(&[n * n]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let c = cd.download().map_err(|e| e.to_string())?;
        sampled(&aw, &bw, &wide(&c), n, if gelu { Some(&biasw) } else { None }, 8e-3)
    };
    let base = format!("{variant}{}", if gelu { "_bias_gelu" } else { "" });
    let (name, kernel) = (format!("{base}_{ty}_{n}"), format!("{base}::<{ty}>"));
    let k = run.k(&kernel)?;
    if variant == "gemm_tma" || variant == "gemm_ws" {
        // A in 128 x 64 boxes, Bᵀ in 256 x 64, 128-byte swizzled.
        let rows = |x: &kache::DeviceArray<T>| x.view(0, &[n, n], &[n as isize, 1]).map_err(|e| e.to_string());
        let ma = TensorMap::tiled(&rows(&ad)?, 64, 128, 128).map_err(|e| e.to_string())?;
        let mb = TensorMap::tiled(&rows(&bd)?, 64, 256, 128).map_err(|e| e.to_string())?;
        let threads = if variant == "gemm_ws" { 384 } else { 256 };
        return tma_rows(run, (&name, n, gelu, threads), &k, (&ma, &mb, &biasd, &cd), &verify);
    }
    // `gemm_wg`: a block of 256 threads per 128 x 256 tile, 4 stages of 48 KiB.
    let grid =
        if wg { Grid::new(((n / 128) * (n / 256)) as u32, 256u32).with_shared_mem(4 * 48 * 1024) } else { tiles(n).with_shared_mem(65536) };
    let flops = Some(2.0 * (n as f64).powi(3));
    let mut c = cd.clone();
    let (m_, n_, k_) = (n, n, n);
    if gelu {
        run.measure(
            &name,
            None,
            flops,
            "kache",
            |r| k.launch(&r.dev, grid, (&ad, &bd, &biasd, &mut c, m_, n_, k_)).map_err(|e| e.to_string()),
            &verify,
        )?;
        run.measure(
            &name,
            None,
            flops,
            UNCHECKED,
            // SAFETY: the checked launch of the same arguments above passed its checks (a fault
            // would have failed it) and matched the reference.
            |r| unsafe { k.launch_unchecked(&r.dev, grid, (&ad, &bd, &biasd, &mut c, m_, n_, k_)) }.map_err(|e| e.to_string()),
            &verify,
        )
    } else {
        run.measure(
            &name,
            None,
            flops,
            "kache",
            |r| k.launch(&r.dev, grid, (&ad, &bd, &mut c, m_, n_, k_)).map_err(|e| e.to_string()),
            &verify,
        )?;
        run.measure(
            &name,
            None,
            flops,
            UNCHECKED,
            // SAFETY: as above.
            |r| unsafe { k.launch_unchecked(&r.dev, grid, (&ad, &bd, &mut c, m_, n_, k_)) }.map_err(|e| e.to_string()),
            &verify,
        )
    }
}

/// The rows of `gemm_tma` or `gemm_ws` (or their `_bias_gelu` twins where `gelu`): `gemm_wg`'s
/// grid, blocks of `threads` (256, or 384 with `gemm_ws`'s producer warpgroup).
fn tma_rows<T: Element>(
    run: &mut Run,
    (name, n, gelu, threads): (&str, usize, bool, u32),
    k: &kache::Kernel,
    (ma, mb, biasd, cd): (&TensorMap, &TensorMap, &kache::DeviceArray<T>, &kache::DeviceArray<T>),
    verify: &dyn Fn(&Run) -> Result<String, String>,
) -> Result<(), String> {
    // `gemm_ws*` (384 threads) is persistent: a block per SM, each computing tiles
    // `block_idx_x() + i * grid_dim_x()` (one block on the host, which then computes them all).
    let tiles = ((n / 128) * (n / 256)) as u32;
    let blocks = if threads == 384 { tiles.min(run.gpu.as_ref().map_or(1, |g| g.sms as u32)) } else { tiles };
    let grid = Grid::new(blocks, threads).with_shared_mem(4 * 48 * 1024);
    let flops = Some(2.0 * (n as f64).powi(3));
    let mut c = cd.clone();
    for unchecked in [false, true] {
        let implementation = if unchecked { UNCHECKED } else { "kache" };
        run.measure(
            name,
            None,
            flops,
            implementation,
            |r| {
                let launched = match (gelu, unchecked) {
                    (true, false) => k.launch(&r.dev, grid, (ma, mb, biasd, &mut c, n, n, n)),
                    (false, false) => k.launch(&r.dev, grid, (ma, mb, &mut c, n, n, n)),
                    // SAFETY: the checked launch of the same arguments (the loop's first
                    // round) passed its checks (a fault would have failed it) and matched the
                    // reference.
                    (true, true) => unsafe { k.launch_unchecked(&r.dev, grid, (ma, mb, biasd, &mut c, n, n, n)) },
                    // SAFETY: as above.
                    (false, true) => unsafe { k.launch_unchecked(&r.dev, grid, (ma, mb, &mut c, n, n, n)) },
                };
                launched.map_err(|e| e.to_string())
            },
            verify,
        )?;
    }
    Ok(())
}

/// The square n x n operands of an f32 GEMM: A and B on the device (B transposed, Bᵀ, where
/// `transposed`), C, and A and B in f64 for the reference.
struct F32Operands {
    ad: kache::DeviceArray<f32>,
    bd: kache::DeviceArray<f32>,
    cd: kache::DeviceArray<f32>,
    aw: Vec<f64>,
    bw: Vec<f64>,
}

fn f32_operands(run: &Run, n: usize, transposed: bool) -> Result<F32Operands, String> {
    let a = inputs(n, 21);
    let b = inputs(n, 22);
    let b_in = if transposed { transpose(&b, n) } else { b.clone() };
    let wide = |v: &[f32]| v.iter().map(|x| *x as f64).collect::<Vec<f64>>();
    Ok(F32Operands {
        ad: run.dev.upload(&a).map_err(|e| e.to_string())?,
        bd: run.dev.upload(&b_in).map_err(|e| e.to_string())?,
        cd: run.dev.alloc::<f32>(&[n * n]).map_err(|e| e.to_string())?,
        aw: wide(&a),
        bw: wide(&b),
    })
}

/// The n x n row-major matrix `x` transposed.
fn transpose<T: Copy>(x: &[T], n: usize) -> Vec<T> {
    (0..n * n).map(|e| x[(e % n) * n + e / n]).collect()
}

/// `gemm_tf32` (tf32 tensor cores) or `sgemm` (f32 FMA) at n x n x n.
fn f32_gemm(run: &mut Run, n: usize, kernel: &str, tol: f64) -> Result<(), String> {
    let F32Operands { ad, bd, cd, aw, bw } = f32_operands(run, n, false)?;
    let verify = |_: &Run| -> Result<String, String> {
        let c: Vec<f64> = cd.download().map_err(|e| e.to_string())?.iter().map(|v| *v as f64).collect();
        sampled(&aw, &bw, &c, n, None, tol)
    };
    let name = if kernel == "sgemm" { format!("sgemm_{n}") } else { format!("gemm_tf32_{n}") };
    let k = run.k(kernel)?;
    let grid = if kernel == "sgemm" { tiles(n) } else { tiles(n).with_shared_mem(98304) };
    let flops = Some(2.0 * (n as f64).powi(3));
    let mut c = cd.clone();
    run.measure(&name, None, flops, "kache", |r| k.launch(&r.dev, grid, (&ad, &bd, &mut c, n, n, n)).map_err(|e| e.to_string()), &verify)?;
    run.measure(
        &name,
        None,
        flops,
        UNCHECKED,
        // SAFETY: the checked launch of the same arguments above passed its checks and matched.
        |r| unsafe { k.launch_unchecked(&r.dev, grid, (&ad, &bd, &mut c, n, n, n)) }.map_err(|e| e.to_string()),
        &verify,
    )
}

/// `gemm_tma_tf32` or `gemm_ws_tf32` (sm_90a's warpgroup MMA on tf32, tiles by tensor copies)
/// at n x n x n: C = A·Bᵀ with Bᵀ given N x K (B transposed on the host, so the check is
/// `gemm_tf32`'s), measured as `gemm_tf32_{n}`'s twins.
fn tf32_tma(run: &mut Run, n: usize, variant: &str) -> Result<(), String> {
    let F32Operands { ad, bd, cd, aw, bw } = f32_operands(run, n, true)?;
    let verify = |_: &Run| -> Result<String, String> {
        let c: Vec<f64> = cd.download().map_err(|e| e.to_string())?.iter().map(|v| *v as f64).collect();
        sampled(&aw, &bw, &c, n, None, 4e-3)
    };
    let k = run.k(variant)?;
    // A in 128 x 32 boxes, Bᵀ in 256 x 32: rows of 128 bytes, 128-byte swizzled.
    let rows = |x: &kache::DeviceArray<f32>| x.view(0, &[n, n], &[n as isize, 1]).map_err(|e| e.to_string());
    let ma = TensorMap::tiled(&rows(&ad)?, 32, 128, 128).map_err(|e| e.to_string())?;
    let mb = TensorMap::tiled(&rows(&bd)?, 32, 256, 128).map_err(|e| e.to_string())?;
    let threads = if variant == "gemm_ws_tf32" { 384 } else { 256 };
    let bias = run.dev.alloc::<f32>(&[1]).map_err(|e| e.to_string())?;
    let name = format!("{variant}_{n}");
    tma_rows(run, (&name, n, false, threads), &k, (&ma, &mb, &bias, &cd), &verify)
}

/// This GPU's `mma.sync` m16n8k16 bf16 throughput: 8 independent accumulators per warp.
fn mma_peak(run: &mut Run) -> Result<(), String> {
    let (blocks, iters) = match &run.gpu {
        Some(g) => (g.sms as u32 * 4, 4096u32),
        None => (2, 4),
    };
    let x: Vec<bf16> = (0..64).map(|i| bf16::from_f32((i % 7) as f32 / 64.0)).collect();
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let out = run.dev.alloc::<f32>(&[blocks as usize * 256]).map_err(|e| e.to_string())?;
    let flops = Some(blocks as f64 * 8.0 * iters as f64 * 8.0 * 2.0 * 16.0 * 8.0 * 16.0);
    let k = run.k("mma_peak")?;
    let mut o = out.clone();
    let verify = |_: &Run| -> Result<String, String> {
        let got = out.download().map_err(|e| e.to_string())?;
        // Every lane's sum is finite and the same in every block.
        let first = got[..256].to_vec();
        if got.chunks(256).all(|b| b == first.as_slice()) && first.iter().all(|v| v.is_finite()) {
            Ok("every block's sums alike".into())
        } else {
            Err("blocks disagree".into())
        }
    };
    run.measure(
        "mma_peak",
        None,
        flops,
        "kache",
        |r| k.launch(&r.dev, Grid::new(blocks, 256u32), (&xd, &mut o, iters)).map_err(|e| e.to_string()),
        &verify,
    )
}

pub fn gemm(run: &mut Run) -> Result<(), String> {
    mma_peak(run)?;
    let sizes: Vec<usize> = if run.full_size() { vec![4096, 8192] } else { vec![128] };
    for n in sizes {
        half_gemm::<bf16>(run, n, "bf16", false, "gemm", bf16::from_f32, bf16::to_f32)?;
        half_gemm::<f16>(run, n, "f16", false, "gemm", f16::from_f32, f16::to_f32)?;
        half_gemm::<bf16>(run, n, "bf16", true, "gemm", bf16::from_f32, bf16::to_f32)?;
        f32_gemm(run, n, "gemm_tf32", 4e-3)?;
    }
    // The warpgroup MMA: its tile is 128 x 256, so the host's size is 256.
    let sizes: Vec<usize> = if run.full_size() { vec![4096, 8192] } else { vec![256] };
    for n in sizes.iter().copied() {
        half_gemm::<bf16>(run, n, "bf16", false, "gemm_wg", bf16::from_f32, bf16::to_f32)?;
        half_gemm::<f16>(run, n, "f16", false, "gemm_wg", f16::from_f32, f16::to_f32)?;
        half_gemm::<bf16>(run, n, "bf16", true, "gemm_wg", bf16::from_f32, bf16::to_f32)?;
    }
    f32_gemm(run, run.size(4096, 128), "sgemm", 1e-5)?;
    // The tensor copies' twins last: a fault of the tensor memory accelerator is sticky (the
    // context is lost for the rest of the process), so it costs no other row.
    for n in sizes {
        for variant in ["gemm_tma", "gemm_ws"] {
            half_gemm::<bf16>(run, n, "bf16", false, variant, bf16::from_f32, bf16::to_f32)?;
            half_gemm::<f16>(run, n, "f16", false, variant, f16::from_f32, f16::to_f32)?;
            half_gemm::<bf16>(run, n, "bf16", true, variant, bf16::from_f32, bf16::to_f32)?;
        }
        for variant in ["gemm_tma_tf32", "gemm_ws_tf32"] {
            tf32_tma(run, n, variant)?;
        }
    }
    Ok(())
}
