//! Elementwise kernels: saxpy.

use kache::Grid;

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

pub fn saxpy(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 1 << 14);
    let x = uniform_f32(n, 1);
    let y0 = uniform_f32(n, 2);
    let a = 2.5f32;
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let yd = run.dev.upload(&y0).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(|e| e.to_string())?;
        let worst = (0..n).map(|i| rel_err(y[i] as f64, a as f64 * x[i] as f64 + y0[i] as f64)).fold(0.0, f64::max);
        if worst > 1e-6 { Err(format!("relative error {worst:e}")) } else { Ok(format!("max rel err {worst:.1e}")) }
    };
    let bytes = Some(12.0 * n as f64);
    let k = run.k("saxpy")?;
    // 4 elements per thread: blocks of 256 threads over 1024 elements.
    let grid = Grid::new(n.div_ceil(1024) as u32, 256u32);
    let mut y = yd.clone();
    run.measure("saxpy", bytes, None, "kache", |r| k.launch(&r.dev, grid, (a, &xd, &mut y)).map_err(|e| e.to_string()), &verify)?;
    yd.copy_from(&y0).map_err(|e| e.to_string())?;
    run.measure(
        "saxpy",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (a, &xd, &mut y)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        yd.copy_from(&y0).map_err(|e| e.to_string())?;
        let (mut pa, mut px, mut py, mut pn) = (a, ptr(&xd), ptr(&yd), n as i32);
        let blocks = n.div_ceil(1024) as u32;
        run.measure(
            "saxpy",
            bytes,
            None,
            "nvrtc",
            |r| r.nvrtc()?.launch("saxpy", (blocks, 1), (256, 1), &mut [arg(&mut pa), arg(&mut px), arg(&mut py), arg(&mut pn)]),
            &verify,
        )?;
    }
    Ok(())
}
