//! Histograms: 256 bins in shared memory.

use kache::Grid;

use super::super::gpu::{arg, ptr};
use super::super::harness::*;

pub fn histogram(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 1 << 16);
    let mut r = rng(8);
    // Skewed bytes, as real data: a quarter of the values fall in 16 bins.
    let x: Vec<u32> = (0..n)
        .map(|_| {
            let v = r();
            if v.is_multiple_of(4) { (v >> 8) as u32 % 16 } else { (v >> 8) as u32 }
        })
        .collect();
    let mut want = vec![0u64; 256];
    for v in &x {
        want[(v & 255) as usize] += 1;
    }
    let xd = run.dev.upload(&x).map_err(|e| e.to_string())?;
    let bins = run.dev.alloc::<u32>(&[256]).map_err(|e| e.to_string())?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = bins.download().map_err(|e| e.to_string())?;
        match (0..256).find(|b| got[*b] as u64 != want[*b]) {
            Some(b) => Err(format!("bin {b}: {}, expected {}", got[b], want[b])),
            None => Ok("exact".into()),
        }
    };
    let bytes = Some(4.0 * n as f64);
    let k = run.k("histogram")?;
    let grid = Grid::new(STRIDED_BLOCKS, 256u32);
    let mut b = bins.clone();
    run.measure("histogram", bytes, None, "kache", |r| k.launch(&r.dev, grid, (&xd, &mut b)).map_err(|e| e.to_string()), &verify)?;
    bins.copy_from(&[0u32; 256]).map_err(|e| e.to_string())?;
    run.measure(
        "histogram",
        bytes,
        None,
        UNCHECKED,
        |r| {
            // SAFETY: the checked launch of the same arguments above stayed in bounds (a fault
            // would have failed it) and matched the reference.
            unsafe { k.launch_unchecked(&r.dev, grid, (&xd, &mut b)) }.map_err(|e| e.to_string())
        },
        &verify,
    )?;
    if run.gpu.is_some() {
        bins.copy_from(&[0u32; 256]).map_err(|e| e.to_string())?;
        let (mut px, mut pn, mut pb) = (ptr(&xd), n as i32, ptr(&bins));
        run.measure(
            "histogram",
            bytes,
            None,
            "nvrtc",
            |r| r.nvrtc()?.launch("histogram", (STRIDED_BLOCKS, 1), (256, 1), &mut [arg(&mut px), arg(&mut pn), arg(&mut pb)]),
            &verify,
        )?;
    }
    Ok(())
}
