//! Matrix products: the 32 x 32 tiled matmul.

use kache::{Grid, Order};

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

pub fn matmul(run: &mut Run) -> Result<(), String> {
    let n = run.size(4096, 64);
    let a: Vec<f32> = uniform_f32(n * n, 5).iter().map(|v| v - 0.5).collect();
    let b: Vec<f32> = uniform_f32(n * n, 6).iter().map(|v| v - 0.5).collect();
    let ad = run.dev.upload_nd(&a, &[n, n], Order::C).map_err(|e| e.to_string())?;
    let bd = run.dev.upload_nd(&b, &[n, n], Order::C).map_err(|e| e.to_string())?;
    let cd = run.dev.alloc::<f32>(&[n, n]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let c = cd.download().map_err(|e| e.to_string())?;
        let mut pick = rng(7);
        let mut worst = 0f64;
        for _ in 0..256 {
            let (i, j) = (pick() as usize % n, pick() as usize % n);
            let want: f64 = (0..n).map(|k| a[i * n + k] as f64 * b[k * n + j] as f64).sum();
            let scale: f64 = (0..n).map(|k| (a[i * n + k] as f64 * b[k * n + j] as f64).abs()).sum();
            worst = worst.max((c[i * n + j] as f64 - want).abs() / scale.max(1e-30));
        }
        if worst > 1e-5 {
            Err(format!("error {worst:e} of the sum of |terms|"))
        } else {
            Ok(format!("max err {worst:.1e} (of sum |a b|), 256 samples"))
        }
    };
    let flops = Some(2.0 * (n as f64).powi(3));
    let k = run.k("matmul_tiled")?;
    let grid = Grid::new(((n / 32) as u32, (n / 32) as u32), (32u32, 32u32));
    let mut c = cd.clone();
    run.measure("matmul_tiled", None, flops, "kache", |r| k.launch(&r.dev, grid, (&ad, &bd, &mut c)).map_err(|e| e.to_string()), &verify)?;
    run.measure(
        "matmul_tiled",
        None,
        flops,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (&ad, &bd, &mut c)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        let (mut pa, mut pb, mut pc, mut pn) = (ptr(&ad), ptr(&bd), ptr(&cd), n as i32);
        let g = (n / 32) as u32;
        run.measure(
            "matmul_tiled",
            None,
            flops,
            "nvrtc",
            |r| r.nvrtc()?.launch("matmul_tiled", (g, g), (32, 32), &mut [arg(&mut pa), arg(&mut pb), arg(&mut pc), arg(&mut pn)]),
            &verify,
        )?;
    }
    Ok(())
}
