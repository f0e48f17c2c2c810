//! A crate whose kernels are compiled at `cargo build` time by `kache::prebuild`.
#![deny(warnings)]

include!(concat!(env!("OUT_DIR"), "/kache_kernels.rs"));

/// The kernels that need sm_90 (`kernels-sm90/`).
pub mod sm90 {
    include!(concat!(env!("OUT_DIR"), "/kache_kernels_sm90.rs"));
}

/// Runs every kernel on `device` and checks the results against plain Rust.
pub fn run_all(device: &kache::Device) -> kache::Result<()> {
    let n = 1000;
    let x = device.upload(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let mut y = device.upload(&vec![1.0f32; n])?;
    saxpy::saxpy(device, kache::Grid::linear(n, 128), 3.0, &x, &mut y)?;
    let y = y.download()?;
    assert!((0..n).all(|i| y[i] == 3.0 * i as f32 + 1.0), "saxpy");

    // The tuned kernel: no grid, its space gives the launch shape of the configuration chosen.
    let mut t = device.upload(&vec![1.0f32; n])?;
    tuned::axpy_tuned(device, 3.0, &x, &mut t)?;
    let t = t.download()?;
    assert!((0..n).all(|i| t[i] == 3.0 * i as f32 + 1.0), "axpy_tuned");

    let mut s = device.alloc::<f32>(&[n])?;
    filters::smooth(device, kache::Grid::linear(n, 128), &x, &mut s)?;
    let s = s.download()?;
    for i in 1..n - 1 {
        let want = 2.0 * (0.25 * (i - 1) as f32 + 0.5 * i as f32 + 0.25 * (i + 1) as f32);
        assert!((s[i] - want).abs() < 1e-3, "smooth at {i}: {} vs {want}", s[i]);
    }

    let values = device.upload(&(0..n as u32).collect::<Vec<_>>())?;
    let mut bins = device.alloc::<u32>(&[10])?;
    filters::histogram(device, kache::Grid::linear(n, 128), &values, &mut bins)?;
    assert_eq!(bins.download()?, vec![100; 10], "histogram");

    let mut v = device.upload(&[1.5f32, -2.0])?;
    generic::scale_f32(device, kache::Grid::linear(2, 32), &mut v, 2.0)?;
    assert_eq!(v.download()?, vec![3.0, -4.0], "scale::<f32>");
    let mut w = device.upload(&[3i64, i64::MAX])?;
    generic::scale_i64(device, kache::Grid::linear(2, 32), &mut w, 2)?;
    assert_eq!(w.download()?, vec![6, -2], "scale::<i64> (wrapping)");

    // Shared memory and the block barrier.
    let ones = device.upload(&vec![1.0f32; n])?;
    let blocks = n.div_ceil(128);
    let mut sums = device.alloc::<f32>(&[blocks])?;
    blocks::block_sums(device, kache::Grid::linear(n, 128), &ones, &mut sums)?;
    let want: Vec<f32> = (0..blocks).map(|b| (n - b * 128).min(128) as f32).collect();
    assert_eq!(sums.download()?, want, "block_sums");

    // Every math function the kernels call, against Rust's (on the CPU mostly the same
    // functions; a GPU's differ in the last bits).
    let xs: Vec<f64> = (1..=64).map(|i| i as f64 / 20.0).collect();
    let x = device.upload(&xs)?;
    let mut out = device.alloc::<f64>(&[xs.len(), 4])?;
    blocks::math64(device, kache::Grid::linear(xs.len(), 32), &x, &mut out)?;
    let got = out.download()?;
    let x32: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
    let mut out32 = device.alloc::<f32>(&[xs.len(), 4])?;
    blocks::math32(device, kache::Grid::linear(xs.len(), 32), &device.upload(&x32)?, &mut out32)?;
    let got32 = out32.download()?;
    for (i, v) in xs.iter().enumerate() {
        for (c, want) in math_row64(*v).iter().enumerate() {
            let g = got[i * 4 + c];
            assert!((g - want).abs() <= 1e-9 * want.abs().max(1.0), "math64 at {v}, column {c}: {g} vs {want}");
        }
        for (c, want) in math_row32(x32[i]).iter().enumerate() {
            let g = got32[i * 4 + c];
            assert!((g - want).abs() <= 1e-4 * want.abs().max(1.0), "math32 at {v}, column {c}: {g} vs {want}");
        }
    }

    // A tensor map passed to a prebuilt kernel: 20 rows of 32, in boxes of 8 rows (on a GPU
    // this needs sm_90).
    if device.compute_capability().is_none_or(|(major, _)| major >= 9) {
        let rows = 20;
        let a: Vec<f32> = (0..rows * 32).map(|i| i as f32).collect();
        let ad = device.upload(&a)?;
        let map = kache::TensorMap::tiled(&ad.view(0, &[rows, 32], &[32, 1])?, 32, 8, 0)?;
        let mut doubled = device.alloc::<f32>(&[rows * 32])?;
        sm90::tensor_rows::double_rows(device, kache::Grid::new(rows.div_ceil(8) as u32, 256u32), &map, rows, &mut doubled)?;
        assert_eq!(doubled.download()?, a.iter().map(|v| 2.0 * v).collect::<Vec<_>>(), "double_rows");
    }
    Ok(())
}

/// What kernels `math64` and `math32` compute for one value, in plain Rust.
macro_rules! math_row {
    ($name:ident, $t:ty) => {
        fn $name(v: $t) -> [$t; 4] {
            [
                v.exp() + v.exp2() + v.ln() + v.log2() + v.log10(),
                v.sin() + v.cos() + v.tan() + (v / 4.0).asin() + (v / 4.0).acos() + v.atan(),
                v.sinh() + v.cosh() + v.tanh() + v.cbrt() + v.atan2(2.0) + v.powf(1.5) + v.hypot(3.0) + v.powi(3),
                // erf and erfc are not in std: their sum is 1.
                v.exp_m1() + v.ln_1p() + 1.0 / v.sqrt() + (10.0 as $t).powf(v) + 1.0,
            ]
        }
    };
}
math_row!(math_row64, f64);
math_row!(math_row32, f32);
