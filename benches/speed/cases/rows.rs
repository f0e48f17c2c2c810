//! Row-wise kernels: softmax in registers (kernels.rs), and the corpus's layer norm, RMS norm,
//! three-pass softmax and top k per row (benches/speed/kernels/rows.rs and rows.cu).

use kache::{Grid, Order};

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

pub fn softmax(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(8192, 16), run.size(4096, 1024));
    let x: Vec<f32> = uniform_f32(rows * cols, 4).iter().map(|v| v * 20.0 - 10.0).collect();
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(|e| e.to_string())?;
    let yd = run.dev.alloc::<f32>(&[rows, cols]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(|e| e.to_string())?;
        let mut worst = 0f64;
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
            let s: f64 = row.iter().map(|v| (*v as f64 - m).exp()).sum();
            for c in 0..cols {
                let want = (row[c] as f64 - m).exp() / s;
                worst = worst.max((y[r * cols + c] as f64 - want).abs() / want.max(1e-12));
            }
        }
        if worst > 1e-4 { Err(format!("relative error {worst:e}")) } else { Ok(format!("max rel err {worst:.1e}")) }
    };
    let bytes = Some(8.0 * (rows * cols) as f64);
    let k = run.k("softmax_rows")?;
    let mut y = yd.clone();
    run.measure(
        "softmax_rows",
        bytes,
        None,
        "kache",
        |r| k.launch(&r.dev, Grid::new(rows as u32, 256u32), (&xd, &mut y)).map_err(|e| e.to_string()),
        &verify,
    )?;
    run.measure(
        "softmax_rows",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, Grid::new(rows as u32, 256u32), (&xd, &mut y)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        let (mut px, mut py, mut pc) = (ptr(&xd), ptr(&yd), cols as i32);
        run.measure(
            "softmax_rows",
            bytes,
            None,
            "nvrtc",
            |r| r.nvrtc()?.launch("softmax_rows", (rows as u32, 1), (256, 1), &mut [arg(&mut px), arg(&mut py), arg(&mut pc)]),
            &verify,
        )?;
    }
    Ok(())
}

/// Rows and columns of the norms and the three-pass softmax: 256 MiB of f32 on the GPU; on the
/// host a width that is no multiple of the block.
fn norm_shape(run: &Run) -> (usize, usize) {
    (run.size(16384, 6), run.size(4096, 1000))
}

/// `got` against the float64 `want`, relative to `want`'s magnitude but at least 1.
fn norm_err(got: f32, want: f64) -> f64 {
    (got as f64 - want).abs() / want.abs().max(1.0)
}

/// Layer norm of each row (gamma and beta per column).
pub fn layernorm(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = norm_shape(run);
    let x: Vec<f32> = uniform_f32(rows * cols, 21).iter().map(|v| 2.0 * v - 1.0).collect();
    let gamma: Vec<f32> = uniform_f32(cols, 22).iter().map(|v| v + 0.5).collect();
    let beta: Vec<f32> = uniform_f32(cols, 23).iter().map(|v| v - 0.5).collect();
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(msg)?;
    let (gd, bd) = (run.dev.upload(&gamma).map_err(msg)?, run.dev.upload(&beta).map_err(msg)?);
    let yd = run.dev.alloc::<f32>(&[rows, cols]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let mut worst = 0f64;
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let mean = row.iter().map(|v| *v as f64).sum::<f64>() / cols as f64;
            let var = row.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for c in 0..cols {
                let want = (row[c] as f64 - mean) * inv * gamma[c] as f64 + beta[c] as f64;
                worst = worst.max(norm_err(y[r * cols + c], want));
            }
        }
        within(worst, 1e-4, "max err (rel, at least 1)")
    };
    let zero = vec![0f32; rows * cols];
    let reset = |_: &Run| yd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (rows * cols) as f64 + 8.0 * cols as f64);
    let k = run.k("layernorm")?;
    let grid = Grid::new(rows as u32, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&xd, &gd, &bd, &mut yd.clone()));
    let p = [xd.device_ptr(), gd.device_ptr(), bd.device_ptr(), yd.device_ptr()];
    let nvrtc = |r: &Run| {
        let args = [A::P(p[0]), A::P(p[1]), A::P(p[2]), A::P(p[3]), A::I(cols as i32)];
        r.nvrtc()?.call("layernorm", (rows as u32, 1, 1), (256, 1, 1), &args)
    };
    run.rows("layernorm", work, &reset, &kache, &nvrtc, &verify)
}

/// RMS norm of each row (a weight per column).
pub fn rmsnorm(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = norm_shape(run);
    let x: Vec<f32> = uniform_f32(rows * cols, 24).iter().map(|v| 2.0 * v - 1.0).collect();
    let w: Vec<f32> = uniform_f32(cols, 25).iter().map(|v| v + 0.5).collect();
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(msg)?;
    let wd = run.dev.upload(&w).map_err(msg)?;
    let yd = run.dev.alloc::<f32>(&[rows, cols]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let mut worst = 0f64;
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let ms = row.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / cols as f64;
            let inv = 1.0 / (ms + 1e-5).sqrt();
            for c in 0..cols {
                worst = worst.max(norm_err(y[r * cols + c], row[c] as f64 * inv * w[c] as f64));
            }
        }
        within(worst, 1e-4, "max err (rel, at least 1)")
    };
    let zero = vec![0f32; rows * cols];
    let reset = |_: &Run| yd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (rows * cols) as f64 + 4.0 * cols as f64);
    let k = run.k("rmsnorm")?;
    let grid = Grid::new(rows as u32, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&xd, &wd, &mut yd.clone()));
    let p = [xd.device_ptr(), wd.device_ptr(), yd.device_ptr()];
    let nvrtc = |r: &Run| {
        let args = [A::P(p[0]), A::P(p[1]), A::P(p[2]), A::I(cols as i32)];
        r.nvrtc()?.call("rmsnorm", (rows as u32, 1, 1), (256, 1, 1), &args)
    };
    run.rows("rmsnorm", work, &reset, &kache, &nvrtc, &verify)
}

/// Softmax of each row in three passes over it (a block per row).
pub fn softmax3(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = norm_shape(run);
    let x: Vec<f32> = uniform_f32(rows * cols, 26).iter().map(|v| v * 20.0 - 10.0).collect();
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(msg)?;
    let yd = run.dev.alloc::<f32>(&[rows, cols]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let mut worst = 0f64;
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let m = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
            let s: f64 = row.iter().map(|v| (*v as f64 - m).exp()).sum();
            for c in 0..cols {
                let want = (row[c] as f64 - m).exp() / s;
                worst = worst.max((y[r * cols + c] as f64 - want).abs() / want.max(1e-12));
            }
        }
        within(worst, 1e-4, "max rel err")
    };
    let zero = vec![0f32; rows * cols];
    let reset = |_: &Run| yd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (rows * cols) as f64);
    let k = run.k("softmax3")?;
    let grid = Grid::new(rows as u32, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&xd, &mut yd.clone()));
    let (px, py) = (xd.device_ptr(), yd.device_ptr());
    let nvrtc = |r: &Run| r.nvrtc()?.call("softmax3", (rows as u32, 1, 1), (256, 1, 1), &[A::P(px), A::P(py), A::I(cols as i32)]);
    run.rows("softmax3", work, &reset, &kache, &nvrtc, &verify)
}

/// `topk_rows`'s K (kernels/rows.rs and rows.cu).
const TOPK: usize = 8;

/// The 8 largest values of each row and their columns, a warp per row.
pub fn topk(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(32768, 9), run.size(2048, 600));
    let x = uniform_f32(rows * cols, 27);
    let xd = run.dev.upload_nd(&x, &[rows, cols], Order::C).map_err(msg)?;
    let vd = run.dev.alloc::<f32>(&[rows, TOPK]).map_err(msg)?;
    let id = run.dev.alloc::<u32>(&[rows, TOPK]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let (v, ix) = (vd.download().map_err(msg)?, id.download().map_err(msg)?);
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            // The row's TOPK largest, largest first.
            let mut want: Vec<f64> = row.iter().map(|v| *v as f64).collect();
            want.select_nth_unstable_by(TOPK - 1, |a, b| b.total_cmp(a));
            want[..TOPK].sort_by(|a, b| b.total_cmp(a));
            let mut seen = Vec::new();
            for k in 0..TOPK {
                let (got, at) = (v[r * TOPK + k], ix[r * TOPK + k] as usize);
                if got as f64 != want[k] || at >= cols || row[at] != got || seen.contains(&at) {
                    return Err(format!("row {r}, place {k}: {got} at column {at}, expected {}", want[k]));
                }
                seen.push(at);
            }
        }
        Ok("exact".into())
    };
    let reset = |_: &Run| {
        vd.copy_from(&vec![0f32; rows * TOPK]).map_err(msg)?;
        id.copy_from(&vec![0u32; rows * TOPK]).map_err(msg)
    };
    let work = Work::Bytes(4.0 * (rows * cols) as f64 + 8.0 * (rows * TOPK) as f64);
    let k = run.k("topk_rows")?;
    let blocks = rows.div_ceil(8) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&xd, &mut vd.clone(), &mut id.clone()));
    let p = [xd.device_ptr(), vd.device_ptr(), id.device_ptr()];
    let nvrtc = |r: &Run| {
        let args = [A::P(p[0]), A::P(p[1]), A::P(p[2]), A::I(rows as i32), A::I(cols as i32)];
        r.nvrtc()?.call("topk_rows", (blocks, 1, 1), (256, 1, 1), &args)
    };
    run.rows("topk_rows", work, &reset, &kache, &nvrtc, &verify)
}
