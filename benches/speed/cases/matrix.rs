//! Matrix kernels: the naive and shared-memory transposes, gemv, CSR spmv and a direct 2-D
//! convolution (benches/speed/kernels/matrix.rs and matrix.cu).

use kache::{Grid, Order};

use super::super::harness::*;

/// Both transposes of one matrix: exact.
pub fn transpose(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(8192, 100), run.size(8192, 70));
    let a = uniform_f32(rows * cols, 11);
    let ad = run.dev.upload_nd(&a, &[rows, cols], Order::C).map_err(msg)?;
    let td = run.dev.alloc::<f32>(&[cols, rows]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let t = td.download().map_err(msg)?;
        for i in 0..rows {
            for j in 0..cols {
                if t[j * rows + i] != a[i * cols + j] {
                    return Err(format!("t[{j}, {i}] = {}, expected {}", t[j * rows + i], a[i * cols + j]));
                }
            }
        }
        Ok("exact".into())
    };
    let zero = vec![0f32; rows * cols];
    let reset = |_: &Run| td.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * (rows * cols) as f64);
    let (pa, pt) = (ad.device_ptr(), td.device_ptr());
    // Naive: a thread per element, blocks of 32 x 8.
    let k = run.k("transpose_naive")?;
    let grid = Grid::new((cols.div_ceil(32) as u32, rows.div_ceil(8) as u32), (32u32, 8u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&ad, &mut td.clone()));
    let nvrtc = |r: &Run| {
        let g = (cols.div_ceil(32) as u32, rows.div_ceil(8) as u32, 1);
        r.nvrtc()?.call("transpose_naive", g, (32, 8, 1), &[A::P(pa), A::P(pt), A::I(rows as i32), A::I(cols as i32)])
    };
    run.rows("transpose_naive", work, &reset, &kache, &nvrtc, &verify)?;
    // Tiled: a 32 x 32 tile per block of 32 x 8 threads.
    let k = run.k("transpose_tiled")?;
    let grid = Grid::new((cols.div_ceil(32) as u32, rows.div_ceil(32) as u32), (32u32, 8u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&ad, &mut td.clone()));
    let nvrtc = |r: &Run| {
        let g = (cols.div_ceil(32) as u32, rows.div_ceil(32) as u32, 1);
        r.nvrtc()?.call("transpose_tiled", g, (32, 8, 1), &[A::P(pa), A::P(pt), A::I(rows as i32), A::I(cols as i32)])
    };
    run.rows("transpose_tiled", work, &reset, &kache, &nvrtc, &verify)
}

/// The error of `got` against the float64 `want`, over the sum of the absolute values of the
/// terms `want` adds (`scale`): what f32 rounding of a sum can reach.
fn sum_err(got: f32, want: f64, scale: f64) -> f64 {
    (got as f64 - want).abs() / scale.max(1e-30)
}

/// y = A x, a warp per row.
pub fn gemv(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(16384, 37), run.size(8192, 300));
    let a: Vec<f32> = uniform_f32(rows * cols, 12).iter().map(|v| v - 0.5).collect();
    let x: Vec<f32> = uniform_f32(cols, 13).iter().map(|v| v - 0.5).collect();
    let ad = run.dev.upload_nd(&a, &[rows, cols], Order::C).map_err(msg)?;
    let xd = run.dev.upload(&x).map_err(msg)?;
    let yd = run.dev.alloc::<f32>(&[rows]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let mut worst = 0f64;
        for i in 0..rows {
            let row = &a[i * cols..(i + 1) * cols];
            let want: f64 = row.iter().zip(&x).map(|(a, x)| *a as f64 * *x as f64).sum();
            let scale: f64 = row.iter().zip(&x).map(|(a, x)| (*a as f64 * *x as f64).abs()).sum();
            worst = worst.max(sum_err(y[i], want, scale));
        }
        within(worst, 1e-5, "max err (of sum |a x|)")
    };
    let reset = |_: &Run| yd.copy_from(&vec![0f32; rows]).map_err(msg);
    let work = Work::Bytes(4.0 * (rows * cols + cols + rows) as f64);
    let k = run.k("gemv")?;
    let blocks = rows.div_ceil(8) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&ad, &xd, &mut yd.clone()));
    let (pa, px, py) = (ad.device_ptr(), xd.device_ptr(), yd.device_ptr());
    let nvrtc = |r: &Run| {
        let args = [A::P(pa), A::P(px), A::P(py), A::I(rows as i32), A::I(cols as i32)];
        r.nvrtc()?.call("gemv", (blocks, 1, 1), (256, 1, 1), &args)
    };
    run.rows("gemv", work, &reset, &kache, &nvrtc, &verify)
}

/// y = A x for a random sparse A in CSR form (16 to 48 entries a row on the GPU), a warp per
/// row.
pub fn spmv(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(1 << 21, 1000), run.size(1 << 21, 1000));
    let (lo, hi) = if run.full_size() { (16, 48) } else { (0, 40) };
    let mut r = rng(14);
    let mut row_ptr = vec![0u32; rows + 1];
    for i in 0..rows {
        row_ptr[i + 1] = row_ptr[i] + (lo + r() as usize % (hi - lo + 1)) as u32;
    }
    let nnz = row_ptr[rows] as usize;
    let col: Vec<u32> = (0..nnz).map(|_| (r() % cols as u64) as u32).collect();
    let vals: Vec<f32> = uniform_f32(nnz, 15).iter().map(|v| v - 0.5).collect();
    let x: Vec<f32> = uniform_f32(cols, 16).iter().map(|v| v - 0.5).collect();
    let (rd, cd, vd, xd) = (
        run.dev.upload(&row_ptr).map_err(msg)?,
        run.dev.upload(&col).map_err(msg)?,
        run.dev.upload(&vals).map_err(msg)?,
        run.dev.upload(&x).map_err(msg)?,
    );
    let yd = run.dev.alloc::<f32>(&[rows]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let mut worst = 0f64;
        for i in 0..rows {
            let terms = (row_ptr[i] as usize..row_ptr[i + 1] as usize).map(|k| vals[k] as f64 * x[col[k] as usize] as f64);
            let (want, scale) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
            worst = worst.max(sum_err(y[i], want, scale));
        }
        within(worst, 1e-5, "max err (of sum |a x|)")
    };
    let reset = |_: &Run| yd.copy_from(&vec![0f32; rows]).map_err(msg);
    let work = Work::Bytes(8.0 * nnz as f64 + 4.0 * (2 * rows + 1 + cols) as f64);
    let k = run.k("spmv_csr")?;
    let blocks = rows.div_ceil(8) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&rd, &cd, &vd, &xd, &mut yd.clone()));
    let ptrs = [rd.device_ptr(), cd.device_ptr(), vd.device_ptr(), xd.device_ptr(), yd.device_ptr()];
    let nvrtc = |r: &Run| {
        let args = [A::P(ptrs[0]), A::P(ptrs[1]), A::P(ptrs[2]), A::P(ptrs[3]), A::P(ptrs[4]), A::I(rows as i32)];
        r.nvrtc()?.call("spmv_csr", (blocks, 1, 1), (256, 1, 1), &args)
    };
    run.rows("spmv_csr", work, &reset, &kache, &nvrtc, &verify)
}

/// A 3 x 3 convolution, 32 channels in and out on the GPU, a thread per output pixel.
pub fn conv2d(run: &mut Run) -> Result<(), String> {
    let (cin, cout) = (run.size(32, 3), run.size(32, 4));
    let (h, w) = (run.size(1024, 20), run.size(1024, 37));
    let x: Vec<f32> = uniform_f32(cin * h * w, 17).iter().map(|v| v - 0.5).collect();
    let wt: Vec<f32> = uniform_f32(cout * cin * 9, 18).iter().map(|v| v - 0.5).collect();
    let xd = run.dev.upload_nd(&x, &[cin, h, w], Order::C).map_err(msg)?;
    let wd = run.dev.upload_nd(&wt, &[cout, cin, 3, 3], Order::C).map_err(msg)?;
    let yd = run.dev.alloc::<f32>(&[cout, h, w]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        let picks = samples(cout * h * w, 4096, 19);
        let mut worst = 0f64;
        for &p in &picks {
            let (co, r, c) = (p / (h * w), p / w % h, p % w);
            let (mut want, mut scale) = (0f64, 0f64);
            for ci in 0..cin {
                for ky in 0..3 {
                    for kx in 0..3 {
                        let (iy, ix) = (r as isize + ky as isize - 1, c as isize + kx as isize - 1);
                        if iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize {
                            let t = x[(ci * h + iy as usize) * w + ix as usize] as f64 * wt[((co * cin + ci) * 3 + ky) * 3 + kx] as f64;
                            want += t;
                            scale += t.abs();
                        }
                    }
                }
            }
            worst = worst.max(sum_err(y[p], want, scale));
        }
        within(worst, 1e-5, &format!("max err (of sum |x w|), {} outputs:", picks.len()))
    };
    let reset = |_: &Run| yd.copy_from(&vec![0f32; cout * h * w]).map_err(msg);
    let work = Work::Flops(2.0 * (cout * cin * 9 * h * w) as f64);
    let k = run.k("conv2d")?;
    let dims = (w.div_ceil(32) as u32, h.div_ceil(8) as u32, cout as u32);
    let grid = Grid::new(dims, (32u32, 8u32, 1u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&xd, &wd, &mut yd.clone()));
    let (px, pw, py) = (xd.device_ptr(), wd.device_ptr(), yd.device_ptr());
    let nvrtc = |r: &Run| {
        let args = [A::P(px), A::P(pw), A::P(py), A::I(cin as i32), A::I(h as i32), A::I(w as i32)];
        r.nvrtc()?.call("conv2d", dims, (32, 8, 1), &args)
    };
    run.rows("conv2d", work, &reset, &kache, &nvrtc, &verify)
}
