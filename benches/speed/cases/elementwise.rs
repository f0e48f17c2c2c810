//! Elementwise kernels: saxpy.

use kache::Grid;

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

/// Saxpy as a thread per 4 contiguous elements, the `k-vec4` row: the form whose accesses
/// become 16-byte loads and stores (docs/language.md, "Wide memory accesses"), as Triton's blocks
/// of contiguous elements do, beside the suite's `saxpy` (4 elements a block apart per thread,
/// 4-byte accesses, NVRTC's twin).
const SAXPY_VEC4: &str = r#"
#[kernel]
pub fn saxpy_vec4(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if 4 * i + 3 < y.len() {
        for k in 0..4 {
            y[4 * i + k] = a * x[4 * i + k] + y[4 * i + k];
        }
    } else {
        for j in 4 * i..y.len() {
            y[j] = a * x[j] + y[j];
        }
    }
}
"#;

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
    yd.copy_from(&y0).map_err(|e| e.to_string())?;
    let k4 = run.jit.load_source("saxpy_vec4.rs", SAXPY_VEC4).and_then(|m| m.kernel("saxpy_vec4")).map_err(|e| e.to_string())?;
    let grid4 = Grid::new(n.div_ceil(4).div_ceil(256) as u32, 256u32);
    run.measure("saxpy", bytes, None, "k-vec4", |r| k4.launch(&r.dev, grid4, (a, &xd, &mut y)).map_err(|e| e.to_string()), &verify)?;
    if run.gpu.is_none() {
        // The row measures 16-byte accesses: its sm_90 PTX has them (and ptxas takes it).
        let sm90 = kache::Target::Nvptx(kache::Arch::parse("sm_90").map_err(|e| e.to_string())?);
        let c = k4.compile(sm90, &kache::Specialization::uniform(k4.program(), kache::Layout::C)).map_err(|e| e.to_string())?;
        let ptx = c.ptx().ok_or("saxpy (k-vec4): no PTX")?;
        for op in ["ld.global.nc.v4.f32", "ld.global.v4.f32", "st.global.v4.f32"] {
            if !ptx.contains(op) {
                return Err(format!("saxpy (k-vec4): no {op} in its PTX"));
            }
        }
        if let Some(p) = kache::toolchain::find_ptxas() {
            kache::toolchain::ptxas(&p, ptx, "sm_90").map_err(|e| format!("ptxas rejected saxpy (k-vec4): {e}"))?;
        }
        if let Some(dir) = &run.opts.ptx_dir {
            let file = dir.join("kache-saxpy-k-vec4.ptx");
            std::fs::write(&file, ptx).map_err(|e| format!("{}: {e}", file.display()))?;
        }
    }
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
