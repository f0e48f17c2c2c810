//! Scenarios: small whole programs (Collatz, Mandelbrot, softmax, convolution, n-body, ...).

use kache::{Device, Grid};

use super::helpers::*;

/// bool_mask.rs: bool arrays in and out, compaction with an atomic counter.
pub fn bool_mask(dev: &Device) -> Outcome {
    let m = module("bool_mask.rs")?;
    let n = 333;
    let x: Vec<f32> = (0..n).map(|i| rndf(i as u64, -1.0, 1.0) as f32).collect();
    let xd = up(dev, &x)?;
    let mut mask = zeros::<bool>(dev, &[n])?;
    launch(&m, "predicate", dev, Grid::linear(n, 64), (&xd, -0.5f32, 0.5f32, &mut mask))?;
    let want: Vec<bool> = x.iter().map(|v| *v >= -0.5 && *v < 0.5).collect();
    eq("predicate", &dl(&mask)?, &want)?;

    let mut y = up(dev, &x)?;
    launch(&m, "masked_fill", dev, Grid::linear(n, 64), (&mut y, &mask, 9.0f32))?;
    exact("masked_fill", &dl(&y)?, &(0..n).map(|i| if want[i] { 9.0 } else { x[i] }).collect::<Vec<_>>())?;

    let (mut count, mut slots) = (zeros::<u32>(dev, &[1])?, zeros::<u32>(dev, &[n])?);
    launch(&m, "compact", dev, Grid::linear(n, 64), (&mask, &mut count, &mut slots))?;
    let selected: Vec<u32> = (0..n).filter(|i| want[*i]).map(|i| i as u32 + 1).collect();
    eq("compact count", &dl(&count)?, &[selected.len() as u32])?;
    let mut got = dl(&slots)?[..selected.len()].to_vec();
    got.sort_unstable();
    eq("compact slots (sorted)", &got, &selected)?;

    let (r, c) = (7, 5);
    let mm: Vec<bool> = (0..r * c)
        .map(|k| match k / c {
            0 => true,
            1 => false,
            row => (k + row) % 3 == 0,
        })
        .collect();
    let (mut all, mut any) = (zeros::<bool>(dev, &[r])?, zeros::<bool>(dev, &[r])?);
    launch(&m, "all_any", dev, Grid::linear(r, 4), (&up_nd(dev, &mm, &[r, c])?, &mut all, &mut any))?;
    eq("all", &dl(&all)?, &mm.chunks(c).map(|row| row.iter().all(|b| *b)).collect::<Vec<_>>())?;
    eq("any", &dl(&any)?, &mm.chunks(c).map(|row| row.iter().any(|b| *b)).collect::<Vec<_>>())
}

/// collatz.rs: data-dependent loop lengths.
pub fn collatz(dev: &Device) -> Outcome {
    let m = module("collatz.rs")?;
    let mut start: Vec<u64> = (1..=200).collect();
    start.extend([0, 27, 97, 871, 77031, 1 << 40]);
    let n = start.len();
    let (mut steps, mut peak) = (zeros::<u32>(dev, &[n])?, zeros::<u64>(dev, &[n])?);
    launch(&m, "collatz_steps", dev, Grid::linear(n, 64), (&up(dev, &start)?, &mut steps, &mut peak))?;
    let (mut ws, mut wp) = (Vec::new(), Vec::new());
    for &s0 in &start {
        let (mut v, mut s, mut top) = (s0, 0u32, s0);
        while v > 1 {
            if s == 1000 {
                break;
            }
            v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
            top = top.max(v);
            s += 1;
        }
        ws.push(s);
        wp.push(top);
    }
    eq("collatz steps", &dl(&steps)?, &ws)?;
    eq("collatz peaks", &dl(&peak)?, &wp)
}

/// mandelbrot.rs: a 2-d launch, `loop` with `break value` in a device function.
pub fn mandelbrot(dev: &Device) -> Outcome {
    let m = module("mandelbrot.rs")?;
    let (h, w) = (24, 37);
    let (x0, y0, dx, dy) = (-2.0f64, -1.2f64, 0.075f64, 0.1f64);
    let mut counts = zeros::<u32>(dev, &[h, w])?;
    launch(&m, "mandelbrot", dev, Grid::new((blocks(w, 8), blocks(h, 4)), (8u32, 4u32)), (&mut counts, x0, y0, dx, dy))?;
    let mut want = Vec::new();
    for r in 0..h {
        for c in 0..w {
            let (cr, ci) = (x0 + c as f64 * dx, y0 + r as f64 * dy);
            let (mut zr, mut zi, mut k) = (0.0f64, 0.0f64, 0u32);
            loop {
                if k == 64 || zr * zr + zi * zi > 4.0 {
                    break;
                }
                let t = zr * zr - zi * zi + cr;
                zi = 2.0 * zr * zi + ci;
                zr = t;
                k += 1;
            }
            want.push(k);
        }
    }
    eq("mandelbrot", &dl(&counts)?, &want)
}

/// softmax_rows.rs: row-wise softmax (C and F inputs) and log-sum-exp.
pub fn softmax_rows(dev: &Device) -> Outcome {
    let m = module("softmax_rows.rs")?;
    let (r, c) = (9, 13);
    let x: Vec<f32> = (0..r * c).map(|i| rndf(i as u64, -5.0, 5.0) as f32).collect();
    let mut want = Vec::new();
    for row in x.chunks(c) {
        let mx = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = row.iter().map(|v| ((v - mx) as f64).exp()).collect();
        let s: f64 = e.iter().sum();
        want.extend(e.iter().map(|v| (v / s) as f32));
    }
    for (what, arr) in [("C", up_nd(dev, &x, &[r, c])?), ("F", up_f(dev, &x, &[r, c])?)] {
        let mut y = zeros::<f32>(dev, &[r, c])?;
        launch(&m, "softmax_rows", dev, Grid::linear(r, 4), (&arr, &mut y))?;
        close(&format!("softmax_rows ({what})"), &dl(&y)?, &want, 1e-5, 1e-7)?;
    }
    let (r, c) = (6, 10);
    let x: Vec<f64> = (0..r * c).map(|i| rndf(i as u64 + 7, -20.0, 20.0)).collect();
    let mut out = zeros::<f64>(dev, &[r])?;
    launch(&m, "logsumexp_rows", dev, Grid::linear(r, 4), (&up_nd(dev, &x, &[r, c])?, &mut out))?;
    let want: Vec<f64> = x
        .chunks(c)
        .map(|row| {
            let mx = row.iter().copied().fold(f64::MIN, f64::max);
            mx + row.iter().map(|v| (v - mx).exp()).sum::<f64>().ln()
        })
        .collect();
    close("logsumexp_rows", &dl(&out)?, &want, 1e-13, 0.0)
}

/// conv1d.rs: static filter weights, zero padding, shared-memory halo.
pub fn conv1d(dev: &Device) -> Outcome {
    let m = module("conv1d.rs")?;
    let n = 100;
    let x: Vec<f32> = (0..n).map(|i| (rnd(i as u64) % 50) as f32).collect();
    let w = [0.0625f32, 0.25, 0.375, 0.25, 0.0625];
    let want: Vec<f32> = (0..n as i64)
        .map(|i| {
            let mut acc = 0.0f32;
            for k in 0..5i64 {
                let j = i + k - 2;
                if j >= 0 && j < n as i64 {
                    acc += w[k as usize] * x[j as usize];
                }
            }
            acc
        })
        .collect();
    let xd = up(dev, &x)?;
    let mut y = zeros::<f32>(dev, &[n])?;
    launch(&m, "conv1d", dev, Grid::linear(n, 32), (&xd, &mut y))?;
    exact("conv1d", &dl(&y)?, &want)?;
    let mut y = zeros::<f32>(dev, &[n])?;
    launch(&m, "conv1d_tiled", dev, Grid::linear(n, 32), (&xd, &mut y))?;
    exact("conv1d_tiled", &dl(&y)?, &want)
}

/// rng_xorshift.rs: bit-exact integer hashing.
pub fn rng_xorshift(dev: &Device) -> Outcome {
    let m = module("rng_xorshift.rs")?;
    let n = 300;
    let mut out = zeros::<u32>(dev, &[n])?;
    launch(&m, "random_u32", dev, Grid::linear(n, 64), (0xDEAD_BEEFu32, 5u32, &mut out))?;
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let mut x = 0xDEAD_BEEFu32 ^ (i as u32 + 1);
            for _ in 0..5 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
            }
            x
        })
        .collect();
    eq("random_u32", &dl(&out)?, &want)?;

    let (mut out, mut unit) = (zeros::<u64>(dev, &[n])?, zeros::<f64>(dev, &[n])?);
    launch(&m, "random_u64_unit", dev, Grid::linear(n, 64), (42u64, &mut out, &mut unit))?;
    let want: Vec<u64> = (0..n).map(|i| rnd(42 + i as u64)).collect();
    eq("random_u64_unit", &dl(&out)?, &want)?;
    exact("random_u64_unit floats", &dl(&unit)?, &want.iter().map(|r| (r >> 11) as f64 * (1.0 / 9007199254740992.0)).collect::<Vec<_>>())
}

/// nbody.rs: all-pairs forces through shared-memory tiles, positions as an [n, 3] array.
pub fn nbody(dev: &Device) -> Outcome {
    let m = module("nbody.rs")?;
    let n = 70;
    let pos: Vec<f32> = (0..n * 3).map(|i| rndf(i as u64, -1.0, 1.0) as f32).collect();
    let mass: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 500, 0.5, 2.0) as f32).collect();
    let mut acc = zeros::<f32>(dev, &[n, 3])?;
    launch(&m, "nbody_accel", dev, Grid::linear(n, 32), (&up_nd(dev, &pos, &[n, 3])?, &up(dev, &mass)?, &mut acc))?;
    let mut want = vec![0.0f32; n * 3];
    for i in 0..n {
        let mut a = [0.0f64; 3];
        for j in 0..n {
            let d: Vec<f64> = (0..3).map(|k| (pos[j * 3 + k] - pos[i * 3 + k]) as f64).collect();
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.01;
            let inv3 = 1.0 / (r2 * r2.sqrt());
            for k in 0..3 {
                a[k] += d[k] * mass[j] as f64 * inv3;
            }
        }
        for k in 0..3 {
            want[i * 3 + k] = a[k] as f32;
        }
    }
    close("nbody_accel", &dl(&acc)?, &want, 1e-4, 1e-3)
}

/// rows_in_registers.rs: rows as long as the threads' register arrays cover (the copies of
/// the loops without checks run), shorter (the checked copies run), and a launch with a block
/// past the last row (a fault at that block's first read of `x`).
pub fn rows_in_registers(dev: &Device) -> Outcome {
    let m = module("rows_in_registers.rs")?;
    let (block, items, rows) = (32, 8, 5);
    for cols in [256, 100, 1] {
        let x: Vec<f32> = (0..rows * cols).map(|i| rndf(i as u64 + 3, -8.0, 8.0) as f32).collect();
        let mut want = vec![0.0f32; rows * cols];
        for r in 0..rows {
            for t in 0..block {
                let mine: Vec<usize> = (0..items).map(|k| t + k * block).filter(|&j| j < cols).collect();
                let m = mine.iter().map(|&j| x[r * cols + j].abs()).fold(0.0f32, f32::max);
                for (k, &j) in mine.iter().enumerate() {
                    want[r * cols + j] = x[r * cols + j] / (1.0 + m) + k as f32;
                }
            }
        }
        let mut y = zeros::<f32>(dev, &[rows, cols])?;
        launch(&m, "scale_rows", dev, Grid::linear(rows * block, block as u32), (&up_nd(dev, &x, &[rows, cols])?, &mut y))?;
        close(&format!("scale_rows ({cols} columns)"), &dl(&y)?, &want, 0.0, 0.0)?;
    }
    let x = up_nd(dev, &vec![1.0f32; rows * 256], &[rows, 256])?;
    let mut y = zeros::<f32>(dev, &[rows, 256])?;
    let k = m.kernel("scale_rows").ctx("kernel scale_rows")?;
    // On the host the launch reports the fault; on a GPU the wait after it does.
    let fault = match k.launch(dev, Grid::linear((rows + 1) * block, block as u32), (&x, &mut y)) {
        Ok(()) => y.download().err(),
        Err(e) => Some(e),
    };
    match fault {
        Some(kache::Error::Launch { array, index, len, .. })
            if array == "dimension 0 of parameter `x`" && index == rows as u64 && len == rows as u64 =>
        {
            Ok(())
        }
        other => Err(format!("scale_rows past the last row: expected a fault reading row {rows} of x, got {other:?}")),
    }
}
