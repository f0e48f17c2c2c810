//! Row-wise kernels: softmax.

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
