//! Stencils: a 5-point 2-D and a 7-point 3-D Jacobi step (benches/speed/kernels/stencil.rs
//! and stencil.cu).

use kache::{Grid, Order};

use super::super::harness::*;

/// One 5-point Jacobi step on a 2-D grid, a thread per point in blocks of 32 x 8.
pub fn stencil2d(run: &mut Run) -> Result<(), String> {
    let (ny, nx) = (run.size(8192, 40), run.size(8192, 70));
    let u = uniform_f32(ny * nx, 31);
    let ud = run.dev.upload_nd(&u, &[ny, nx], Order::C).map_err(msg)?;
    let vd = run.dev.alloc::<f32>(&[ny, nx]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let v = vd.download().map_err(msg)?;
        let at = |i: usize, j: usize| u[i * nx + j] as f64;
        let mut worst = 0f64;
        for i in 0..ny {
            for j in 0..nx {
                let want = if i > 0 && j > 0 && i + 1 < ny && j + 1 < nx {
                    0.5 * at(i, j) + 0.125 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1))
                } else {
                    at(i, j)
                };
                worst = worst.max(rel_err(v[i * nx + j] as f64, want));
            }
        }
        within(worst, 1e-6, "max rel err")
    };
    let zero = vec![0f32; ny * nx];
    let reset = |_: &Run| vd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (ny * nx) as f64);
    let k = run.k("stencil2d")?;
    let dims = (nx.div_ceil(32) as u32, ny.div_ceil(8) as u32, 1);
    let grid = Grid::new(dims, (32u32, 8u32, 1u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&ud, &mut vd.clone()));
    let (pu, pv) = (ud.device_ptr(), vd.device_ptr());
    let nvrtc = |r: &Run| r.nvrtc()?.call("stencil2d", dims, (32, 8, 1), &[A::P(pu), A::P(pv), A::I(ny as i32), A::I(nx as i32)]);
    run.rows("stencil2d", work, &reset, &kache, &nvrtc, &verify)
}

/// One 7-point Jacobi step on a 3-D grid, a thread per point in blocks of 32 x 8 x 1.
pub fn stencil3d(run: &mut Run) -> Result<(), String> {
    let (nz, ny, nx) = (run.size(512, 9), run.size(512, 12), run.size(512, 40));
    let u = uniform_f32(nz * ny * nx, 32);
    let ud = run.dev.upload_nd(&u, &[nz, ny, nx], Order::C).map_err(msg)?;
    let vd = run.dev.alloc::<f32>(&[nz, ny, nx]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let v = vd.download().map_err(msg)?;
        let at = |k: usize, i: usize, j: usize| u[(k * ny + i) * nx + j] as f64;
        let mut worst = 0f64;
        for k in 0..nz {
            for i in 0..ny {
                for j in 0..nx {
                    let inner = k > 0 && i > 0 && j > 0 && k + 1 < nz && i + 1 < ny && j + 1 < nx;
                    let want = if inner {
                        let around =
                            at(k - 1, i, j) + at(k + 1, i, j) + at(k, i - 1, j) + at(k, i + 1, j) + at(k, i, j - 1) + at(k, i, j + 1);
                        0.4 * at(k, i, j) + 0.1 * around
                    } else {
                        at(k, i, j)
                    };
                    worst = worst.max(rel_err(v[(k * ny + i) * nx + j] as f64, want));
                }
            }
        }
        within(worst, 1e-6, "max rel err")
    };
    let zero = vec![0f32; nz * ny * nx];
    let reset = |_: &Run| vd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (nz * ny * nx) as f64);
    let k = run.k("stencil3d")?;
    let dims = (nx.div_ceil(32) as u32, ny.div_ceil(8) as u32, nz as u32);
    let grid = Grid::new(dims, (32u32, 8u32, 1u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&ud, &mut vd.clone()));
    let (pu, pv) = (ud.device_ptr(), vd.device_ptr());
    let nvrtc =
        |r: &Run| r.nvrtc()?.call("stencil3d", dims, (32, 8, 1), &[A::P(pu), A::P(pv), A::I(nz as i32), A::I(ny as i32), A::I(nx as i32)]);
    run.rows("stencil3d", work, &reset, &kache, &nvrtc, &verify)
}
