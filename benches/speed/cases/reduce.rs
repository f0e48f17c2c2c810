//! Reductions: the block, warp-shuffle and `while` forms of a grid-strided sum.

use kache::{Grid, Layout, Specialization};

use super::super::dry::free_unrolled_loops;
use super::super::gpu::{arg, ptr};
use super::super::harness::*;

/// The block reduction and the warp-shuffle reduction of the same array.
pub fn reduce(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 1 << 16);
    let x = uniform_f32(n, 3);
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let out = run.dev.alloc::<f32>(&[1]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = out.download().map_err(|e| e.to_string())?[0] as f64;
        let e = rel_err(got, want);
        if e > 1e-4 { Err(format!("sum {got}, expected {want} (relative error {e:e})")) } else { Ok(format!("rel err {e:.1e}")) }
    };
    let bytes = Some(4.0 * n as f64);
    let grid = Grid::new(STRIDED_BLOCKS, 256u32);
    for kernel in ["reduce_block", "reduce_warp", "reduce_while"] {
        let k = run.k(kernel)?;
        out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
        let mut o = out.clone();
        run.measure(kernel, bytes, None, "kache", |r| k.launch(&r.dev, grid, (&xd, &mut o)).map_err(|e| e.to_string()), &verify)?;
        out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
        run.measure(
            kernel,
            bytes,
            None,
            UNCHECKED,
            |r| {
                // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
                // would have failed it) and matched the reference.
                unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut o)) }.map_err(|e| e.to_string())
            },
            &verify,
        )?;
        // The alternative rule (H200 run 3's): ptxas free to unroll the unrolled loop again.
        let free = free_unrolled_loops(&sm_90_ptx(&k)?).map_err(|e| format!("{kernel}: {e}"))?;
        if run.gpu.is_some() {
            // SAFETY: `free` is kache's bounds-checked PTX of this kernel for sm_90 (the H200's
            // architecture) with C layouts, one `.pragma "nounroll"` line removed, which changes
            // how ptxas unrolls a loop, not what the code does.
            let alt = unsafe { k.with_ptx(run.dev.target(), &Specialization::uniform(k.program(), Layout::C), free) };
            out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
            let mut o = out.clone();
            let launch = |r: &Run| alt.launch(&r.dev, grid, (&xd, &mut o)).map_err(|e| e.to_string());
            run.measure(kernel, bytes, None, FREE_UNROLL, launch, &verify)?;
        } else {
            if let Some(p) = kache::toolchain::find_ptxas() {
                kache::toolchain::ptxas(&p, &free, "sm_90").map_err(|e| format!("ptxas rejected {kernel} ({FREE_UNROLL}): {e}"))?;
            }
            if let Some(dir) = &run.opts.ptx_dir {
                let file = dir.join(format!("kache-{kernel}-{FREE_UNROLL}.ptx"));
                std::fs::write(&file, &free).map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        if run.gpu.is_some() {
            out.copy_from(&[0.0]).map_err(|e| e.to_string())?;
            let (mut px, mut pn, mut po) = (ptr(&xd), n as i32, ptr(&out));
            run.measure(
                kernel,
                bytes,
                None,
                "nvrtc",
                |r| r.nvrtc()?.launch(kernel, (STRIDED_BLOCKS, 1), (256, 1), &mut [arg(&mut px), arg(&mut pn), arg(&mut po)]),
                &verify,
            )?;
        }
    }
    Ok(())
}
