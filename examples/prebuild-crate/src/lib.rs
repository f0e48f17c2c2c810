//! A crate whose kernels are compiled at `cargo build` time by `kache::prebuild`.
#![deny(warnings)]

include!(concat!(env!("OUT_DIR"), "/kache_kernels.rs"));

/// Runs every kernel on `device` and checks the results against plain Rust.
pub fn run_all(device: &kache::Device) -> kache::Result<()> {
    let n = 1000;
    let x = device.upload(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let mut y = device.upload(&vec![1.0f32; n])?;
    saxpy::saxpy(device, kache::Grid::linear(n, 128), 3.0, &x, &mut y)?;
    let y = y.download()?;
    assert!((0..n).all(|i| y[i] == 3.0 * i as f32 + 1.0), "saxpy");

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
    Ok(())
}
