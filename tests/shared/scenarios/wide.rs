//! Scenario: threads that handle groups of contiguous elements (`wide_access.rs`), which the GPU
//! moves in 8- and 16-byte accesses where the arrays are aligned for them. Each kernel runs on
//! fresh arrays (aligned) and on views that start one to three elements into their buffers, or
//! rows whose length is no multiple of the group (misaligned, where the code as written must run:
//! on a GPU a wide access there faults; the aligned copy, which clears the low bits of the
//! addresses and row lengths it tested, would compute wrong results on the host backend too);
//! the results must be the reference's either way.

use half::{bf16, f16};
use kache::{Device, DeviceArray, Element, Grid};

use super::helpers::*;

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Quad {
        pub x: f32,
        pub y: f32,
        pub z: f32,
        pub w: f32,
    }
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub x: f32,
        pub y: f32,
    }
}

/// `data` on the device, starting `offset` elements into a buffer of its own (0: aligned as
/// any allocation; 1 to 3: aligned only for the element, or for a group of fewer bytes).
fn placed<T: Element>(dev: &Device, data: &[T], offset: usize) -> Result<DeviceArray<T>, String> {
    let mut all: Vec<T> = data.iter().cycle().take(offset).copied().collect();
    all.extend_from_slice(data);
    let buf = up(dev, &all)?;
    buf.view(offset, &[data.len()], &[1]).ctx("view")
}

/// A `rows` x `cols` matrix starting `offset` elements into its buffer.
fn placed_2d<T: Element>(dev: &Device, data: &[T], rows: usize, cols: usize, offset: usize) -> Result<DeviceArray<T>, String> {
    let flat = placed(dev, data, offset)?;
    let whole = flat.view(0, &[rows, cols], &[cols as isize, 1]).ctx("view")?;
    if whole.layout() != kache::Layout::C {
        return Err(format!("a contiguous view has layout {}", whole.layout()));
    }
    Ok(whole)
}

/// wide_access.rs: each kernel at offsets 0 to 3 (and rows of 8 and 7 elements).
pub fn wide_access(dev: &Device) -> Outcome {
    let m = module("wide_access.rs")?;
    for offset in 0..4 {
        let at = |what: &str| format!("{what} (offset {offset})");

        let n = 4 * 300;
        let x: Vec<f32> = (0..n).map(|i| rndf(i as u64, -4.0, 4.0) as f32).collect();
        let y0: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 9999, -4.0, 4.0) as f32).collect();
        let mut y = placed(dev, &y0, offset)?;
        launch(&m, "axpy4", dev, Grid::linear(n / 4, 64), (1.5f32, &placed(dev, &x, offset)?, &mut y))?;
        let want: Vec<f32> = (0..n).map(|i| 1.5 * x[i] + y0[i]).collect();
        exact(&at("axpy4"), &dl(&y)?, &want)?;

        for cols in [8, 7] {
            let rows = 97;
            let a: Vec<f32> = (0..rows * cols).map(|i| rndf(i as u64 + 7, -2.0, 2.0) as f32).collect();
            let v: Vec<f32> = (0..cols).map(|j| (j as f32) * 0.5 - 1.0).collect();
            let mut out = zeros::<f32>(dev, &[rows])?;
            let args = (&placed(dev, &a, offset)?, &placed(dev, &v, offset)?, cols, &mut out);
            launch(&m, "row_dot", dev, Grid::linear(rows, 32), args)?;
            // In the order the kernel adds, unfused (the scenarios compile without `fmad`).
            let want: Vec<f32> = (0..rows).map(|r| (0..cols).fold(0.0f32, |s, j| s + a[r * cols + j] * v[j])).collect();
            exact(&at(&format!("row_dot, {cols} columns")), &dl(&out)?, &want)?;

            let mut sums = zeros::<f32>(dev, &[rows])?;
            launch(&m, "row_sums", dev, Grid::linear(rows, 32), (&placed_2d(dev, &a, rows, cols, offset)?, &mut sums))?;
            let want: Vec<f32> = (0..rows).map(|r| (0..cols).fold(0.0f32, |s, j| s + a[r * cols + j])).collect();
            exact(&at(&format!("row_sums, {cols} columns")), &dl(&sums)?, &want)?;
        }

        let n = 2 * 250;
        let h: Vec<f16> = (0..n).map(|i| f16::from_f32(rndf(i as u64 + 3, -8.0, 8.0) as f32)).collect();
        let mut out = placed(dev, &vec![f16::ZERO; n], offset)?;
        launch(&m, "half_pairs", dev, Grid::linear(n / 2, 64), (&placed(dev, &h, offset)?, &mut out))?;
        let want: Vec<f16> = (0..n).map(|i| if i % 2 == 0 { h[i] + h[i + 1] } else { h[i - 1] * h[i] }).collect();
        eq(&at("half_pairs"), &dl(&out)?, &want)?;

        let n = 8 * 70;
        let b: Vec<bf16> = (0..n).map(|i| bf16::from_f32(rndf(i as u64 + 5, -3.0, 3.0) as f32)).collect();
        let s = bf16::from_f32(1.25);
        let mut out = placed(dev, &vec![bf16::ZERO; n], offset)?;
        launch(&m, "scale_bf16x8", dev, Grid::linear(n / 8, 64), (s, &placed(dev, &b, offset)?, &mut out))?;
        let want: Vec<bf16> = b.iter().map(|v| s * *v).collect();
        eq(&at("scale_bf16x8"), &dl(&out)?, &want)?;

        let n = 4 * 200;
        let u: Vec<u32> = (0..n).map(|i| rnd(i as u64) as u32).collect();
        let mut out = placed(dev, &vec![0u32; n], offset)?;
        launch(&m, "mix_u32x4", dev, Grid::linear(n / 4, 64), (&placed(dev, &u, offset)?, &mut out))?;
        let want: Vec<u32> = (0..n).map(|i| (u[i] << (i % 4 + 1)) ^ (i / 4) as u32).collect();
        eq(&at("mix_u32x4"), &dl(&out)?, &want)?;

        let n = 2 * 150;
        let p: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 1, -1e3, 1e3)).collect();
        let q: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 2, -1e3, 1e3)).collect();
        let mut out = placed(dev, &vec![0.0f64; n], offset)?;
        launch(&m, "add_f64x2", dev, Grid::linear(n / 2, 64), (&placed(dev, &p, offset)?, &placed(dev, &q, offset)?, &mut out))?;
        let want: Vec<f64> = (0..n).map(|i| p[i] + q[i]).collect();
        exact(&at("add_f64x2"), &dl(&out)?, &want)?;
    }

    // Arrays of structs are allocations of their own, aligned for a 16-byte access.
    let n = 300;
    let ps: Vec<Quad> = (0..n)
        .map(|i| {
            let r = |k: u64| rndf(i as u64 * 5 + k, -10.0, 10.0) as f32;
            Quad { x: r(0), y: r(1), z: r(2), w: r(3) }
        })
        .collect();
    let mut out = dev.alloc_structs::<Quad>(n).map_err(|e| e.to_string())?;
    launch(&m, "quads", dev, Grid::linear(n, 64), (&dev.upload_structs(&ps).map_err(|e| e.to_string())?, &mut out))?;
    let got = out.download().map_err(|e| e.to_string())?;
    let want: Vec<Quad> = ps.iter().map(|q| Quad { x: q.y, y: q.x * 2.0, z: q.z + q.w, w: q.w - q.x }).collect();
    eq("quads", &got, &want)?;

    let ps: Vec<Pair> =
        (0..n).map(|i| Pair { x: rndf(i as u64 * 3, -10.0, 10.0) as f32, y: rndf(i as u64 * 3 + 1, -10.0, 10.0) as f32 }).collect();
    let mut out = dev.alloc_structs::<Pair>(n).map_err(|e| e.to_string())?;
    launch(&m, "pairs", dev, Grid::linear(n, 64), (&dev.upload_structs(&ps).map_err(|e| e.to_string())?, &mut out))?;
    let got = out.download().map_err(|e| e.to_string())?;
    let want: Vec<Pair> = ps.iter().map(|q| Pair { x: q.x + q.y, y: q.x * q.y }).collect();
    eq("pairs", &got, &want)
}
