//! Scenarios: arrays in every layout (C, F, strided, 0-d, foreign), multi-dimensional
//! launches and indexing.

use kache::{Device, Grid, Order};

use super::super::foreign::ForeignArray;
use super::helpers::*;

fn matmul_ref<T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    n: usize,
    k: usize,
    p: usize,
) -> Vec<T> {
    let mut c = vec![T::default(); n * p];
    for i in 0..n {
        for j in 0..p {
            let mut s = T::default();
            for l in 0..k {
                s = s + a[i * k + l] * b[l * p + j];
            }
            c[i * p + j] = s;
        }
    }
    c
}

/// matmul_2d.rs: 2-d launches with C, F and strided inputs; shared-memory tiles.
pub fn matmul_2d(dev: &Device) -> Outcome {
    let m = module("matmul_2d.rs")?;
    let (n, k, p) = (13, 7, 10);
    let a: Vec<f32> = (0..n * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * p).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
    let want = matmul_ref(&a, &b, n, k, p);
    let grid = Grid::new((blocks(p, 8), blocks(n, 8)), (8u32, 8u32));

    let mut c = zeros::<f32>(dev, &[n, p])?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut c))?;
    exact("matmul (C, C)", &dl(&c)?, &want)?;

    let af = up_f(dev, &a, &[n, k])?;
    let (bv, bbase, bpos) = up_strided(dev, &b, &[k, p], -99.0f32)?;
    let mut c = zeros::<f32>(dev, &[n, p])?;
    launch(&m, "matmul", dev, grid, (&af, &bv, &mut c))?;
    exact("matmul (F, strided)", &dl(&c)?, &want)?;
    untouched("matmul read-only strided input", &bbase, &bpos, -99.0f32)?;

    // Output in F order and as a strided view.
    let mut cf = dev.alloc_with_order::<f32>(&[n, p], Order::F).ctx("alloc F")?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut cf))?;
    exact("matmul (F output)", &dl(&cf)?, &want)?;
    let (mut cv, cbase, cpos) = up_strided(dev, &vec![0.0f32; n * p], &[n, p], 5.5f32)?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut cv))?;
    exact("matmul (strided output)", &dl(&cv)?, &want)?;
    untouched("matmul strided output", &cbase, &cpos, 5.5f32)?;

    let (n, k, p) = (17, 9, 11);
    let a: Vec<f64> = (0..n * k).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
    let b: Vec<f64> = (0..k * p).map(|i| ((i * 2) % 11) as f64 * 0.5).collect();
    let mut c = zeros::<f64>(dev, &[n, p])?;
    let grid = Grid::new((blocks(p, 8), blocks(n, 8)), (8u32, 8u32));
    launch(&m, "matmul_tiled", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_f(dev, &b, &[k, p])?, &mut c))?;
    exact("matmul_tiled", &dl(&c)?, &matmul_ref(&a, &b, n, k, p))?;

    let (r, cols) = (37, 11);
    let mm: Vec<i64> = (0..r * cols).map(|i| (rnd(i as u64) % 2001) as i64 - 1000).collect();
    let x: Vec<i64> = (0..cols).map(|i| i as i64 * 3 - 10).collect();
    let mut y = zeros::<i64>(dev, &[r])?;
    launch(&m, "matvec_i64", dev, Grid::linear(r, 16), (&up_nd(dev, &mm, &[r, cols])?, &up(dev, &x)?, &mut y))?;
    eq("matvec_i64", &dl(&y)?, &matmul_ref(&mm, &x, r, cols, 1))
}

/// stencil_3d.rs: 3-d launches over 3-d arrays (C input, then F input for the integer box sum).
pub fn stencil_3d(dev: &Device) -> Outcome {
    let m = module("stencil_3d.rs")?;
    let (ni, nj, nk) = (5, 6, 7);
    let u: Vec<f32> = (0..ni * nj * nk)
        .map(|q| {
            let [i, j, k] = [q / (nj * nk), (q / nk) % nj, q % nk];
            (i * j + k * k) as f32 * 0.5
        })
        .collect();
    let at = |i: usize, j: usize, k: usize| u[(i * nj + j) * nk + k];
    let mut out = zeros::<f32>(dev, &[ni, nj, nk])?;
    let grid = Grid::new((blocks(nk, 4), blocks(nj, 4), blocks(ni, 2)), (4u32, 4u32, 2u32));
    launch(&m, "laplacian_7pt", dev, grid, (&up_nd(dev, &u, &[ni, nj, nk])?, &mut out, 0.25f32))?;
    let mut want = vec![0.0f32; u.len()];
    for i in 1..ni - 1 {
        for j in 1..nj - 1 {
            for k in 1..nk - 1 {
                let s = at(i - 1, j, k) + at(i + 1, j, k) + at(i, j - 1, k) + at(i, j + 1, k) + at(i, j, k - 1) + at(i, j, k + 1);
                want[(i * nj + j) * nk + k] = (s - 6.0 * at(i, j, k)) * 0.25;
            }
        }
    }
    exact("laplacian_7pt", &dl(&out)?, &want)?;

    let (ni, nj, nk) = (4, 5, 6);
    let u: Vec<i32> = (0..ni * nj * nk).map(|q| (rnd(q as u64) % 100) as i32 - 50).collect();
    let mut out = zeros::<i32>(dev, &[ni, nj, nk])?;
    let grid = Grid::new((blocks(nk, 4), blocks(nj, 4), blocks(ni, 2)), (4u32, 4u32, 2u32));
    launch(&m, "box_sum_i32", dev, grid, (&up_f(dev, &u, &[ni, nj, nk])?, &mut out))?;
    let mut want = vec![0i32; u.len()];
    for i in 0..ni as i64 {
        for j in 0..nj as i64 {
            for k in 0..nk as i64 {
                let mut s = 0;
                for di in -1..=1 {
                    for dj in -1..=1 {
                        for dk in -1..=1 {
                            let (a, b, c) = (i + di, j + dj, k + dk);
                            if a >= 0 && b >= 0 && c >= 0 && a < ni as i64 && b < nj as i64 && c < nk as i64 {
                                s += u[((a as usize) * nj + b as usize) * nk + c as usize];
                            }
                        }
                    }
                }
                want[((i as usize) * nj + j as usize) * nk + k as usize] = s;
            }
        }
    }
    eq("box_sum_i32", &dl(&out)?, &want)
}

/// thread_indices.rs: every index builtin on a 3-d grid of 3-d blocks.
pub fn thread_indices(dev: &Device) -> Outcome {
    let m = module("thread_indices.rs")?;
    let (g, b) = ([3u32, 2, 2], [4u32, 2, 2]);
    let total = (g.iter().product::<u32>() * b.iter().product::<u32>()) as usize;
    let (mut ids, mut gid) = (zeros::<u32>(dev, &[total, 12])?, zeros::<usize>(dev, &[total, 3])?);
    launch(&m, "record_indices", dev, Grid::new((g[0], g[1], g[2]), (b[0], b[1], b[2])), (&mut ids, &mut gid))?;
    let mut want_ids = vec![0u32; total * 12];
    let mut want_gid = vec![0usize; total * 3];
    for bz in 0..g[2] {
        for by in 0..g[1] {
            for bx in 0..g[0] {
                for tz in 0..b[2] {
                    for ty in 0..b[1] {
                        for tx in 0..b[0] {
                            let t = (tz * b[1] + ty) * b[0] + tx;
                            let blk = (bz * g[1] + by) * g[0] + bx;
                            let lin = (blk * b[0] * b[1] * b[2] + t) as usize;
                            want_ids[lin * 12..lin * 12 + 12]
                                .copy_from_slice(&[tx, ty, tz, bx, by, bz, b[0], b[1], b[2], g[0], g[1], g[2]]);
                            want_gid[lin * 3..lin * 3 + 3].copy_from_slice(&[
                                (bx * b[0] + tx) as usize,
                                (by * b[1] + ty) as usize,
                                (bz * b[2] + tz) as usize,
                            ]);
                        }
                    }
                }
            }
        }
    }
    eq("record_indices ids", &dl(&ids)?, &want_ids)?;
    eq("record_indices global ids", &dl(&gid)?, &want_gid)?;

    let (nz, ny, nx) = (5, 7, 9);
    let mut out = zeros::<u32>(dev, &[nz, ny, nx])?;
    launch(&m, "fill_coords_3d", dev, Grid::new((blocks(nx, 4), blocks(ny, 4), blocks(nz, 2)), (4u32, 4u32, 2u32)), (&mut out,))?;
    let want: Vec<u32> = (0..nz * ny * nx).map(|q| ((q / (ny * nx)) * 10000 + ((q / nx) % ny) * 100 + q % nx) as u32).collect();
    eq("fill_coords_3d", &dl(&out)?, &want)
}

/// array_0d.rs: 0-d arrays read, written and updated atomically.
pub fn array_0d(dev: &Device) -> Outcome {
    let m = module("array_0d.rs")?;
    let x: Vec<f32> = (0..100).map(|i| i as f32 - 50.0).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "scale_by_0d", dev, Grid::linear(100, 32), (&dev.upload_scalar(1.5f32).ctx("scalar")?, &mut xd))?;
    exact("scale_by_0d", &dl(&xd)?, &x.iter().map(|v| v * 1.5).collect::<Vec<_>>())?;

    let x: Vec<i32> = (0..300).map(|i| (rnd(i) % 40) as i32).collect();
    let mut count = dev.upload_scalar(0u64).ctx("scalar")?;
    launch(&m, "count_into_0d", dev, Grid::linear(300, 64), (&up(dev, &x)?, &dev.upload_scalar(10i32).ctx("scalar")?, &mut count))?;
    eq("count_into_0d", &dl(&count)?, &[x.iter().filter(|v| **v > 10).count() as u64])?;

    let (mut out, mut flag, mut n) =
        (dev.upload_scalar(0.0f64).ctx("s")?, dev.upload_scalar(false).ctx("s")?, dev.upload_scalar(0usize).ctx("s")?);
    launch(&m, "write_0d", dev, Grid::linear(1, 32), (2.25f64, &mut out, &mut flag, &mut n))?;
    exact("write_0d value", &dl(&out)?, &[4.5])?;
    eq("write_0d flag", &dl(&flag)?, &[true])?;
    eq("write_0d len of a 0-d array", &dl(&n)?, &[1usize])
}

/// array_shapes_strides.rs: len/shape/stride under C, F and strided layouts, 1-d to 4-d.
// The reference loops index by position, as the kernels do.
#[allow(clippy::needless_range_loop)]
pub fn array_shapes_strides(dev: &Device) -> Outcome {
    let m = module("array_shapes_strides.rs")?;
    let g = Grid::linear(1, 32);

    let base = up(dev, &(0..30).map(|i| i as f32).collect::<Vec<_>>())?;
    let mut out = zeros::<usize>(dev, &[3])?;
    launch(&m, "describe_1d", dev, g, (&base, &mut out))?;
    eq("describe_1d (contiguous)", &dl(&out)?, &[30, 30, 1])?;
    launch(&m, "describe_1d", dev, g, (&base.view(2, &[9], &[3]).ctx("view")?, &mut out))?;
    eq("describe_1d (stride 3)", &dl(&out)?, &[9, 9, 3])?;

    let d2: Vec<i64> = (0..12).collect();
    let mut out = zeros::<usize>(dev, &[5])?;
    launch(&m, "describe_2d", dev, g, (&up_nd(dev, &d2, &[3, 4])?, &mut out))?;
    eq("describe_2d (C)", &dl(&out)?, &[12, 3, 4, 4, 1])?;
    launch(&m, "describe_2d", dev, g, (&up_f(dev, &d2, &[3, 4])?, &mut out))?;
    eq("describe_2d (F)", &dl(&out)?, &[12, 3, 4, 1, 3])?;
    launch(&m, "describe_2d", dev, g, (&up_nd(dev, &d2, &[3, 4])?.transpose(), &mut out))?;
    eq("describe_2d (transposed C)", &dl(&out)?, &[12, 4, 3, 1, 4])?;
    let (v, _, _) = up_strided(dev, &d2, &[3, 4], 0i64)?;
    launch(&m, "describe_2d", dev, g, (&v, &mut out))?;
    eq("describe_2d (strided)", &dl(&out)?, &[12, 3, 4, 9, 2])?;

    let d3: Vec<u32> = (0..24).map(|i| i * 10).collect();
    let mut out = zeros::<usize>(dev, &[7])?;
    let mut a = up_nd(dev, &d3, &[2, 3, 4])?;
    launch(&m, "describe_3d", dev, g, (&mut a, &mut out))?;
    eq("describe_3d (C)", &dl(&out)?, &[24, 2, 3, 4, 12, 4, 1])?;
    let mut want = d3.clone();
    want[0] += 1;
    eq("describe_3d (C) write", &dl(&a)?, &want)?;
    let mut a = up_f(dev, &d3, &[2, 3, 4])?;
    launch(&m, "describe_3d", dev, g, (&mut a, &mut out))?;
    eq("describe_3d (F)", &dl(&out)?, &[24, 2, 3, 4, 1, 2, 6])?;
    eq("describe_3d (F) write", &dl(&a)?, &want)?;
    let (mut v, vbase, vpos) = up_strided(dev, &d3, &[2, 3, 4], 77u32)?;
    launch(&m, "describe_3d", dev, g, (&mut v, &mut out))?;
    eq("describe_3d (strided)", &dl(&out)?, &[24, 2, 3, 4, 28, 9, 2])?;
    eq("describe_3d (strided) write", &dl(&v)?, &want)?;
    untouched("describe_3d (strided)", &vbase, &vpos, 77u32)?;

    let shape4 = [2usize, 3, 4, 5];
    let d4: Vec<f64> = (0..120).map(|i| i as f64 * 0.5).collect();
    let mut out = zeros::<usize>(dev, &[9])?;
    launch(&m, "describe_4d", dev, g, (&up_nd(dev, &d4, &shape4)?, &mut out))?;
    eq("describe_4d (C)", &dl(&out)?, &[120, 2, 3, 4, 5, 60, 20, 5, 1])?;
    launch(&m, "describe_4d", dev, g, (&up_f(dev, &d4, &shape4)?, &mut out))?;
    eq("describe_4d (F)", &dl(&out)?, &[120, 2, 3, 4, 5, 1, 2, 6, 24])?;
    let (v4, _, _) = up_strided(dev, &d4, &shape4, -1.0f64)?;
    launch(&m, "describe_4d", dev, g, (&v4, &mut out))?;
    let s3 = 2;
    let s2 = s3 * 5 + 1;
    let s1 = s2 * 4 + 1;
    let s0 = s1 * 3 + 1;
    eq("describe_4d (strided)", &dl(&out)?, &[120, 2, 3, 4, 5, s0, s1, s2, s3])?;

    let want: Vec<f64> = d4.chunks(5).map(|c| c.iter().sum()).collect();
    for (what, arr) in [("C", up_nd(dev, &d4, &shape4)?), ("F", up_f(dev, &d4, &shape4)?), ("strided", v4.clone())] {
        let mut out = zeros::<f64>(dev, &[2, 3, 4])?;
        launch(&m, "sum_last_axis_4d", dev, Grid::linear(24, 16), (&arr, &mut out))?;
        exact(&format!("sum_last_axis_4d ({what})"), &dl(&out)?, &want)?;
    }

    let p: Vec<i32> = (0..120).map(|i| i - 60).collect();
    let mut want = vec![0i32; 120];
    for q in 0..120 {
        let idx = unravel(q, &shape4);
        let (i, j, k, l) = (idx[0], idx[1], idx[2], idx[3]);
        want[((l * 4 + k) * 3 + j) * 2 + i] = p[q] * 2;
    }
    let mut out = zeros::<i32>(dev, &[5, 4, 3, 2])?;
    launch(&m, "permute_4d", dev, Grid::linear(120, 32), (&up_nd(dev, &p, &shape4)?, &mut out))?;
    eq("permute_4d (C -> C)", &dl(&out)?, &want)?;
    let mut outf = dev.alloc_with_order::<i32>(&[5, 4, 3, 2], Order::F).ctx("alloc F")?;
    launch(&m, "permute_4d", dev, Grid::linear(120, 32), (&up_f(dev, &p, &shape4)?, &mut outf))?;
    eq("permute_4d (F -> F)", &dl(&outf)?, &want)?;

    let a0: Vec<u64> = (0..50).map(|i| i * i).collect();
    let mut a = up(dev, &a0)?;
    launch(&m, "array1_both_index_forms", dev, Grid::linear(50, 16), (&mut a,))?;
    eq("array1_both_index_forms", &dl(&a)?, &a0.iter().map(|v| v * 10 + 1).collect::<Vec<_>>())?;
    let (mut v, vbase, vpos) = up_strided(dev, &a0, &[50], 3u64)?;
    launch(&m, "array1_both_index_forms", dev, Grid::linear(50, 16), (&mut v,))?;
    eq("array1_both_index_forms (strided)", &dl(&v)?, &a0.iter().map(|v| v * 10 + 1).collect::<Vec<_>>())?;
    untouched("array1_both_index_forms (strided)", &vbase, &vpos, 3u64)
}

/// transpose.rs: naive transpose over C, F and strided inputs; tiled transpose with shared memory.
pub fn transpose(dev: &Device) -> Outcome {
    let m = module("transpose.rs")?;
    let (r, c) = (13, 19);
    let a: Vec<f64> = (0..r * c).map(|i| i as f64 * 1.5 - 3.0).collect();
    let want: Vec<f64> = (0..c * r).map(|q| a[(q % r) * c + q / r]).collect();
    let grid = Grid::new((blocks(c, 8), blocks(r, 8)), (8u32, 8u32));
    let (v, _, _) = up_strided(dev, &a, &[r, c], f64::NAN)?;
    for (what, arr) in [("C", up_nd(dev, &a, &[r, c])?), ("F", up_f(dev, &a, &[r, c])?), ("strided", v)] {
        let mut out = zeros::<f64>(dev, &[c, r])?;
        launch(&m, "transpose_naive", dev, grid, (&arr, &mut out))?;
        exact(&format!("transpose_naive ({what})"), &dl(&out)?, &want)?;
    }
    let af: Vec<f32> = a.iter().map(|v| *v as f32).collect();
    let wantf: Vec<f32> = want.iter().map(|v| *v as f32).collect();
    let mut out = zeros::<f32>(dev, &[c, r])?;
    launch(&m, "transpose_tiled", dev, grid, (&up_nd(dev, &af, &[r, c])?, &mut out))?;
    exact("transpose_tiled", &dl(&out)?, &wantf)
}

/// gather_scatter.rs: index arrays of u32, usize and u64; scatter with atomics.
pub fn gather_scatter(dev: &Device) -> Outcome {
    let m = module("gather_scatter.rs")?;
    let src: Vec<f64> = (0..50).map(|i| i as f64 * 0.25).collect();
    let idx: Vec<u32> = (0..80).map(|i| (rnd(i) % 60) as u32).collect();
    let mut out = zeros::<f64>(dev, &[80])?;
    launch(&m, "gather", dev, Grid::linear(80, 32), (&up(dev, &src)?, &up(dev, &idx)?, &mut out))?;
    exact("gather", &dl(&out)?, &idx.iter().map(|j| src.get(*j as usize).copied().unwrap_or(-1.0)).collect::<Vec<_>>())?;

    let values: Vec<i64> = (0..500).map(|i| i as i64 - 250).collect();
    let sidx: Vec<usize> = (0..500).map(|i| rnd(i + 5) as usize).collect();
    let mut out = zeros::<i64>(dev, &[13])?;
    launch(&m, "scatter_add", dev, Grid::linear(500, 64), (&up(dev, &values)?, &up(dev, &sidx)?, &mut out))?;
    let mut want = vec![0i64; 13];
    for i in 0..500 {
        want[sidx[i] % 13] += values[i];
    }
    eq("scatter_add", &dl(&out)?, &want)?;

    let table: Vec<i32> = (0..42).map(|i| i * 3 - 20).collect();
    let pairs: Vec<u64> = (0..30).flat_map(|i| [rnd(i) % 6, rnd(i + 50) % 7]).collect();
    let mut out = zeros::<i32>(dev, &[30])?;
    launch(&m, "gather_2d", dev, Grid::linear(30, 8), (&up_nd(dev, &table, &[6, 7])?, &up_nd(dev, &pairs, &[30, 2])?, &mut out))?;
    eq("gather_2d", &dl(&out)?, &(0..30).map(|i| table[pairs[2 * i] as usize * 7 + pairs[2 * i + 1] as usize]).collect::<Vec<_>>())
}

/// grid_stride.rs: grids far smaller than the data, in 1-d and 2-d.
pub fn grid_stride(dev: &Device) -> Outcome {
    let m = module("grid_stride.rs")?;
    let x: Vec<f64> = (0..1000).map(|i| i as f64 - 300.0).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "grid_stride_scale", dev, Grid::new(3u32, 32u32), (&mut xd, 1.5f64))?;
    exact("grid_stride_scale", &dl(&xd)?, &x.iter().map(|v| v * 1.5).collect::<Vec<_>>())?;

    let mut out = zeros::<u64>(dev, &[777])?;
    launch(&m, "grid_stride_squares", dev, Grid::new(2u32, 64u32), (&mut out,))?;
    eq("grid_stride_squares", &dl(&out)?, &(0..777u64).map(|i| i * i).collect::<Vec<_>>())?;

    let (r, c) = (13, 17);
    let mut a = up_nd(dev, &vec![1i32; r * c], &[r, c])?;
    launch(&m, "grid_stride_2d", dev, Grid::new((2u32, 2u32), (4u32, 4u32)), (&mut a,))?;
    eq("grid_stride_2d", &dl(&a)?, &(0..r * c).map(|q| 1 + ((q / c) * 1000 + q % c) as i32).collect::<Vec<_>>())
}

/// sparse_csr.rs: CSR matrix-vector product and row statistics (with empty rows).
pub fn sparse_csr(dev: &Device) -> Outcome {
    let m = module("sparse_csr.rs")?;
    let (rows, ncols) = (20, 15);
    let (mut row_ptr, mut cols, mut vals) = (vec![0u32], Vec::new(), Vec::new());
    let mut dense = vec![0.0f64; rows * ncols];
    for r in 0..rows {
        for c in 0..ncols {
            if r % 7 != 3 && rnd((r * ncols + c) as u64).is_multiple_of(4) {
                cols.push(c as u32);
                let v = (rnd((r * 100 + c) as u64) % 9) as f64 - 4.0;
                vals.push(v);
                dense[r * ncols + c] = v;
            }
        }
        row_ptr.push(cols.len() as u32);
    }
    let x: Vec<f64> = (0..ncols).map(|i| i as f64 * 0.5).collect();
    let mut y = zeros::<f64>(dev, &[rows])?;
    let (rp, cd) = (up(dev, &row_ptr)?, up(dev, &cols)?);
    launch(&m, "spmv_csr", dev, Grid::linear(rows, 8), (&rp, &cd, &up(dev, &vals)?, &up(dev, &x)?, &mut y))?;
    exact("spmv_csr", &dl(&y)?, &(0..rows).map(|r| (0..ncols).map(|c| dense[r * ncols + c] * x[c]).sum::<f64>()).collect::<Vec<_>>())?;

    let (mut len, mut max_col) = (zeros::<u32>(dev, &[rows])?, zeros::<i64>(dev, &[rows])?);
    launch(&m, "csr_row_stats", dev, Grid::linear(rows, 8), (&rp, &cd, &mut len, &mut max_col))?;
    eq("csr_row_stats len", &dl(&len)?, &(0..rows).map(|r| row_ptr[r + 1] - row_ptr[r]).collect::<Vec<_>>())?;
    eq(
        "csr_row_stats max col",
        &dl(&max_col)?,
        &(0..rows)
            .map(|r| cols[row_ptr[r] as usize..row_ptr[r + 1] as usize].iter().map(|c| *c as i64).max().unwrap_or(-1))
            .collect::<Vec<_>>(),
    )
}

/// layout_specialised_calls.rs: one device function on a C and an F argument in one kernel;
/// atomics on a 2-d F-order array and a 0-d array.
pub fn layout_specialised_calls(dev: &Device) -> Outcome {
    let m = module("layout_specialised_calls.rs")?;
    let data: Vec<f32> = (0..12).map(|i| i as f32 - 3.0).collect();
    let want: f32 = (0..12).map(|k| data[k] * ((k / 4) * 10 + k % 4) as f32).sum();
    let c = up_nd(dev, &data, &[3, 4])?;
    let f = up_f(dev, &data, &[3, 4])?;
    let (v, _, _) = up_strided(dev, &data, &[3, 4], 0.0f32)?;
    let mut out = zeros::<f32>(dev, &[2])?;
    launch(&m, "weighted_two_layouts", dev, Grid::linear(1, 1), (&c, &f, &mut out))?;
    exact("weighted_two_layouts (C, F)", &dl(&out)?, &[want, want])?;
    launch(&m, "weighted_two_layouts", dev, Grid::linear(1, 1), (&v, &c, &mut out))?;
    exact("weighted_two_layouts (strided, C)", &dl(&out)?, &[want, want])?;

    let idx: Vec<usize> = (0..500).map(|i| i * 13 + 5).collect();
    let mut a = dev.alloc_with_order::<u32>(&[5, 4], Order::F).ctx("alloc F")?;
    let mut last = dev.upload_scalar(-1i32).ctx("scalar")?;
    launch(&m, "atomic_counts_2d", dev, Grid::linear(500, 64), (&up(dev, &idx)?, &mut a, &mut last))?;
    let mut want = vec![0u32; 20];
    for v in &idx {
        want[(v % 5) * 4 + (v / 7) % 4] += 1;
    }
    eq("atomic_counts_2d", &dl(&a)?, &want)?;
    eq("atomic_counts_2d 0-d max", &dl(&last)?, &[499])
}

/// many_params.rs: one parameter of every scalar type plus arrays of rank 0, 1 and 2.
pub fn many_params(dev: &Device) -> Outcome {
    let m = module("many_params.rs")?;
    let y = up_nd(dev, &[0.0f64, 1.0, 2.0, 3.0], &[2, 2])?;
    let z = dev.upload_scalar(-4i32).ctx("scalar")?;
    let x = up(dev, &[10.0f32, 0.0, 0.0])?;
    let mut out = zeros::<f64>(dev, &[2])?;
    launch(&m, "many_params", dev, Grid::linear(1, 1), (-1i32, 2u32, -3i64, 4u64, 5usize, 0.5f32, 0.25f64, true, &x, &y, &z, &mut out))?;
    exact("many_params", &dl(&out)?, &[-1.0 + 2.0 - 3.0 + 4.0 + 5.0 + 0.5 + 0.25 + 1.0 + 10.0 + 3.0 - 4.0, 3.0])?;
    launch(&m, "many_params", dev, Grid::linear(1, 1), (0i32, 0u32, 0i64, 0u64, 0usize, 0.0f32, 0.0f64, false, &x, &y, &z, &mut out))?;
    exact("many_params (false)", &dl(&out)?, &[10.0 + 3.0 - 4.0, -1.0])
}

/// Foreign arrays (known only through `ArrayInterface`) as kernel arguments: read-only and
/// writable, C, F, strided and 0-d; a read-only one refused for a writable parameter.
pub fn foreign_arrays(dev: &Device) -> Outcome {
    let sax = module("saxpy.rs")?;
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| 100.0 - i as f32).collect();
    let (xd, yd) = (up(dev, &x)?, up(dev, &y0)?);
    let xf = ForeignArray::wrap(&xd).read_only();
    let yf = ForeignArray::wrap(&yd);
    launch(&sax, "saxpy", dev, Grid::linear(n, 64), (3.0f32, xf.iface(), yf.iface()))?;
    let want: Vec<f32> = (0..n).map(|i| 3.0 * x[i] + y0[i]).collect();
    exact("saxpy through foreign arrays", &dl(&yd)?, &want)?;

    // A read-only foreign array for the written parameter: refused, nothing runs.
    let y_ro = ForeignArray::wrap(&yd).read_only();
    let k = sax.kernel("saxpy").ctx("kernel saxpy")?;
    if k.launch(dev, Grid::linear(n, 64), (3.0f32, xf.iface(), y_ro.iface())).is_ok() {
        return Err("saxpy accepted a read-only foreign array for its `&mut` parameter".into());
    }
    exact("saxpy after a refused launch", &dl(&yd)?, &want)?;

    let mm = module("matmul_2d.rs")?;
    let (r, k, p) = (9, 5, 6);
    let a: Vec<f32> = (0..r * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * p).map(|i| (i % 5) as f32 * 0.5).collect();
    let af_dev = up_f(dev, &a, &[r, k])?;
    let (bv, _, _) = up_strided(dev, &b, &[k, p], 0.0f32)?;
    let (af, bf) = (ForeignArray::wrap(&af_dev), ForeignArray::wrap(&bv));
    let cd = zeros::<f32>(dev, &[r, p])?;
    let cf = ForeignArray::wrap(&cd);
    launch(&mm, "matmul", dev, Grid::new((blocks(p, 8), blocks(r, 8)), (8u32, 8u32)), (af.iface(), bf.iface(), cf.iface()))?;
    exact("matmul through foreign arrays (F, strided, C)", &dl(&cd)?, &matmul_ref(&a, &b, r, k, p))?;

    let z = module("array_0d.rs")?;
    let factor = dev.upload_scalar(-2.0f32).ctx("scalar")?;
    let ff = ForeignArray::wrap(&factor).read_only();
    let xs = up(dev, &x)?;
    let xsf = ForeignArray::wrap(&xs);
    launch(&z, "scale_by_0d", dev, Grid::linear(n, 128), (ff.iface(), xsf.iface()))?;
    exact("scale_by_0d through foreign arrays", &dl(&xs)?, &x.iter().map(|v| v * -2.0).collect::<Vec<_>>())
}
