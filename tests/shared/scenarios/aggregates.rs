//! Scenarios: tuples, fixed-size local arrays and plain-data structs (`tuples_extremes.rs`,
//! `welford_tuples.rs`, `mat3_local_arrays.rs`, `median_filter_u8.rs`, `complex_struct.rs`,
//! `bbox_shared_structs.rs`, `window_const_generic.rs`), each against a Rust reference.

use kache::{Device, Grid};

use super::helpers::*;

/// tuples_extremes.rs: tuples returned, destructured and passed; `sin_cos` for f32 and f64.
pub fn tuples_extremes(dev: &Device) -> Outcome {
    let m = module("tuples_extremes.rs")?;
    let (rows, n) = (37, 11);
    let x: Vec<f32> = (0..rows * n).map(|i| (rnd(i as u64) % 2001) as f32 / 8.0 - 125.0).collect();
    let (mut amin, mut vmin) = (zeros::<u32>(dev, &[rows])?, zeros::<f32>(dev, &[rows])?);
    let (mut amax, mut vmax) = (zeros::<u32>(dev, &[rows])?, zeros::<f32>(dev, &[rows])?);
    launch(&m, "row_extremes", dev, Grid::linear(rows, 32), (&up(dev, &x)?, n, &mut amin, &mut vmin, &mut amax, &mut vmax))?;
    let (mut wa, mut wv, mut xa, mut xv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(n) {
        // The first of equal values, as the kernel's strict comparisons keep.
        let (mut lo, mut hi) = (0, 0);
        for (i, v) in row.iter().enumerate() {
            if *v < row[lo] {
                lo = i;
            }
            if *v > row[hi] {
                hi = i;
            }
        }
        wa.push(lo as u32);
        wv.push(row[lo]);
        xa.push(hi as u32);
        xv.push(row[hi]);
    }
    eq("arg min", &dl(&amin)?, &wa)?;
    exact("min", &dl(&vmin)?, &wv)?;
    eq("arg max", &dl(&amax)?, &xa)?;
    exact("max", &dl(&vmax)?, &xv)?;

    let k = 200;
    let px: Vec<f32> = (0..k).map(|i| rndf(i as u64, -3.0, 3.0) as f32).collect();
    let py: Vec<f32> = (0..k).map(|i| rndf(i as u64 + 7777, -3.0, 3.0) as f32).collect();
    let angle = 0.7f32;
    let (mut xs, mut ys) = (up(dev, &px)?, up(dev, &py)?);
    launch(&m, "rotate_points", dev, Grid::linear(k, 64), (&mut xs, &mut ys, angle))?;
    let (s, c) = angle.sin_cos();
    close("rotate x", &dl(&xs)?, &px.iter().zip(&py).map(|(x, y)| x * c - y * s).collect::<Vec<_>>(), 1e-5, 1e-5)?;
    close("rotate y", &dl(&ys)?, &px.iter().zip(&py).map(|(x, y)| x * s + y * c).collect::<Vec<_>>(), 1e-5, 1e-5)?;

    let a: Vec<f64> = (0..k).map(|i| rndf(i as u64, -50.0, 50.0)).collect();
    let (mut sd, mut cd) = (zeros::<f64>(dev, &[k])?, zeros::<f64>(dev, &[k])?);
    launch(&m, "sin_cos_f64", dev, Grid::linear(k, 64), (&up(dev, &a)?, &mut sd, &mut cd))?;
    close("sin_cos f64 sin", &dl(&sd)?, &a.iter().map(|v| v.sin()).collect::<Vec<_>>(), 1e-14, 1e-15)?;
    close("sin_cos f64 cos", &dl(&cd)?, &a.iter().map(|v| v.cos()).collect::<Vec<_>>(), 1e-14, 1e-15)?;

    let idx: Vec<u32> = (0..k as u32).map(|i| i * 37 + 5).collect();
    let (mut r, mut col) = (zeros::<u32>(dev, &[k])?, zeros::<u32>(dev, &[k])?);
    launch(&m, "unflatten", dev, Grid::linear(k, 64), (&up(dev, &idx)?, 13u32, &mut r, &mut col))?;
    eq("unflatten rows", &dl(&r)?, &idx.iter().map(|i| i / 13).collect::<Vec<_>>())?;
    eq("unflatten cols", &dl(&col)?, &idx.iter().map(|i| i % 13).collect::<Vec<_>>())
}

/// welford_tuples.rs: the state tuple folded in two halves and merged.
pub fn welford_tuples(dev: &Device) -> Outcome {
    let m = module("welford_tuples.rs")?;
    let (rows, cols) = (19, 24);
    let x: Vec<f32> = (0..rows * cols).map(|i| rndf(i as u64, -4.0, 9.0) as f32).collect();
    let (mut mean, mut var) = (zeros::<f32>(dev, &[rows])?, zeros::<f32>(dev, &[rows])?);
    launch(&m, "row_mean_var", dev, Grid::linear(rows, 32), (&up_nd(dev, &x, &[rows, cols])?, &mut mean, &mut var))?;
    let (mut wm, mut wv) = (Vec::new(), Vec::new());
    for row in x.chunks(cols) {
        let mu = row.iter().map(|v| *v as f64).sum::<f64>() / cols as f64;
        let q = row.iter().map(|v| (*v as f64 - mu).powi(2)).sum::<f64>();
        wm.push(mu as f32);
        wv.push((q / (cols - 1) as f64) as f32);
    }
    close("mean", &dl(&mean)?, &wm, 1e-5, 1e-5)?;
    close("variance", &dl(&var)?, &wv, 1e-4, 1e-5)
}

/// mat3_local_arrays.rs: `[[f32; 3]; 3]` products and a window in a local array.
pub fn mat3_local_arrays(dev: &Device) -> Outcome {
    let m = module("mat3_local_arrays.rs")?;
    let n = 50;
    let p: Vec<f32> = (0..3 * n).map(|i| ((rnd(i as u64) % 64) as f32 - 32.0) / 4.0).collect();
    let mut pts = up_nd(dev, &p, &[n, 3])?;
    let mut traces = zeros::<f32>(dev, &[n])?;
    let (sx, sy, sz) = (2.0f32, 0.5f32, -3.0f32);
    launch(&m, "transform_points", dev, Grid::linear(n, 32), (&mut pts, sx, sy, sz, &mut traces))?;
    // diag(s) * [[0,-1,0],[1,0,0],[0,0,1]] maps (x, y, z) to (-sx*y, sy*x, sz*z): exact.
    let want: Vec<f32> = p.chunks(3).flat_map(|v| [-sx * v[1], sy * v[0], sz * v[2]]).collect();
    exact("transform_points", &dl(&pts)?, &want)?;
    exact("traces", &dl(&traces)?, &vec![sz; n])?;

    let x: Vec<i32> = (0..77).map(|i| (rnd(i) % 1000) as i32 - 500).collect();
    let mut out = zeros::<i32>(dev, &[x.len()])?;
    launch(&m, "sliding_max", dev, Grid::linear(x.len(), 32), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = (0..x.len()).map(|i| *x[i..(i + 5).min(x.len())].iter().max().unwrap()).collect();
    eq("sliding_max", &dl(&out)?, &want)
}

/// median_filter_u8.rs: a 3x3 median with clamped edges over `u8` pixels.
pub fn median_filter_u8(dev: &Device) -> Outcome {
    let m = module("median_filter_u8.rs")?;
    let (h, w) = (17usize, 23usize);
    let img: Vec<u8> = (0..h * w).map(|i| (rnd(i as u64 * 3 + 1) % 256) as u8).collect();
    let mut out = zeros::<u8>(dev, &[h, w])?;
    let grid = Grid::new((blocks(w, 8), blocks(h, 8)), (8u32, 8u32));
    launch(&m, "median_3x3", dev, grid, (&up_nd(dev, &img, &[h, w])?, &mut out))?;
    let mut want = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let mut win = Vec::new();
            for dy in 0..3 {
                for dx in 0..3 {
                    let yy = (y + dy).clamp(1, h) - 1;
                    let xx = (x + dx).clamp(1, w) - 1;
                    win.push(img[yy * w + xx]);
                }
            }
            win.sort_unstable();
            want.push(win[4]);
        }
    }
    eq("median_3x3", &dl(&out)?, &want)
}

#[derive(Clone, Copy)]
struct C32 {
    re: f32,
    im: f32,
}

impl C32 {
    fn mul(self, o: C32) -> C32 {
        C32 { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
}

/// complex_struct.rs: a struct with methods (a Julia set, twiddle factors).
pub fn complex_struct(dev: &Device) -> Outcome {
    let m = module("complex_struct.rs")?;
    let (h, w) = (16usize, 24usize);
    let (c_re, c_im, x0, y0, step, max_iter) = (-0.75f32, 0.125f32, -1.5f32, -1.0f32, 0.125f32, 60u32);
    let mut counts = zeros::<u32>(dev, &[h, w])?;
    let grid = Grid::new((blocks(w, 8), blocks(h, 8)), (8u32, 8u32));
    launch(&m, "julia", dev, grid, (&mut counts, c_re, c_im, x0, y0, step, max_iter))?;
    let mut want = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let mut z = C32 { re: x0 + x as f32 * step, im: y0 + y as f32 * step };
            let mut n = 0;
            while n < max_iter && z.re * z.re + z.im * z.im <= 4.0 {
                let sq = z.mul(z);
                z = C32 { re: sq.re + c_re, im: sq.im + c_im };
                n += 1;
            }
            want.push(n);
        }
    }
    let got = dl(&counts)?;
    // Escape counts hinge on rounding near the boundary: compare all but a few pixels exactly.
    let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    if differ > got.len() / 50 {
        return Err(format!("julia: {differ} of {} escape counts differ: got {got:?}, want {want:?}", got.len()));
    }
    if want.iter().all(|n| *n == want[0]) {
        return Err("julia: the reference is constant, the test shows nothing".into());
    }

    let n = 64;
    let re: Vec<f32> = (0..n).map(|i| rndf(i as u64, -1.0, 1.0) as f32).collect();
    let im: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 99, -1.0, 1.0) as f32).collect();
    for conjugate in [false, true] {
        let (mut dr, mut di) = (up(dev, &re)?, up(dev, &im)?);
        launch(&m, "twiddle", dev, Grid::linear(n, 32), (&mut dr, &mut di, conjugate))?;
        let (mut wr, mut wi) = (Vec::new(), Vec::new());
        for i in 0..n {
            let (s, c) = (-2.0 * std::f32::consts::PI * i as f32 / n as f32).sin_cos();
            let tw = C32 { re: c, im: if conjugate { -s } else { s } };
            let v = C32 { re: re[i], im: im[i] }.mul(tw);
            wr.push(v.re);
            wi.push(v.im);
        }
        close("twiddle re", &dl(&dr)?, &wr, 1e-5, 1e-6)?;
        close("twiddle im", &dl(&di)?, &wi, 1e-5, 1e-6)?;
    }
    Ok(())
}

/// bbox_shared_structs.rs: a shared array of nested structs reduced per block.
pub fn bbox_shared_structs(dev: &Device) -> Outcome {
    let m = module("bbox_shared_structs.rs")?;
    let n: usize = 1000;
    let block: usize = 128;
    let nb = n.div_ceil(block);
    let xs: Vec<f32> = (0..n).map(|i| rndf(i as u64, -100.0, 100.0) as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 5, -10.0, 30.0) as f32).collect();
    let mut out = zeros::<f32>(dev, &[nb, 4])?;
    let mut counts = zeros::<u32>(dev, &[nb])?;
    launch(&m, "block_bbox", dev, Grid::linear(nb * block, block as u32), (&up(dev, &xs)?, &up(dev, &ys)?, &mut out, &mut counts))?;
    let mut want = Vec::new();
    let mut wc = Vec::new();
    for b in 0..nb {
        let r = b * block..((b + 1) * block).min(n);
        let fold = |v: &[f32], f: fn(f32, f32) -> f32, init: f32| v[r.clone()].iter().fold(init, |a, x| f(a, *x));
        want.extend([
            fold(&xs, f32::min, f32::MAX),
            fold(&ys, f32::min, f32::MAX),
            fold(&xs, f32::max, f32::MIN),
            fold(&ys, f32::max, f32::MIN),
        ]);
        wc.push(r.len() as u32);
    }
    exact("block_bbox", &dl(&out)?, &want)?;
    eq("block_bbox counts", &dl(&counts)?, &wc)
}

/// window_const_generic.rs: `[f32; W]` and `[T; W]` windows in named instances.
pub fn window_const_generic(dev: &Device) -> Outcome {
    let m = module("window_const_generic.rs")?;
    let x: Vec<f32> = (0..90).map(|i| (rnd(i) % 64) as f32 / 4.0).collect();
    let mut out = zeros::<f32>(dev, &[x.len()])?;
    launch(&m, "moving_average::<4>", dev, Grid::linear(x.len(), 32), (&up(dev, &x)?, &mut out))?;
    let mut want = vec![0.0f32; x.len()];
    for i in 0..=x.len() - 4 {
        want[i] = (x[i] + x[i + 1] + x[i + 2] + x[i + 3]) / 4.0;
    }
    exact("moving_average::<4>", &dl(&out)?, &want)?;

    let xi: Vec<i32> = (0..90).map(|i| (rnd(i + 3) % 500) as i32 - 250).collect();
    let mut oi = zeros::<i32>(dev, &[xi.len()])?;
    launch(&m, "moving_min::<i32, 3>", dev, Grid::linear(xi.len(), 32), (&up(dev, &xi)?, &mut oi))?;
    let mut want = vec![0i32; xi.len()];
    for i in 0..=xi.len() - 3 {
        want[i] = xi[i..i + 3].iter().copied().min().unwrap();
    }
    eq("moving_min::<i32, 3>", &dl(&oi)?, &want)
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Particle {
        pub pos: [f32; 3],
        pub vel: [f32; 3],
        pub mass: f32,
    }
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug)]
    pub struct Step {
        pub dt: f32,
        pub soft2: f32,
        pub damping: f32,
    }
}

/// nbody_structs.rs: an array of structs in and out, a struct by value, a shared array of
/// structs.
pub fn nbody_structs(dev: &Device) -> Outcome {
    let m = module("nbody_structs.rs")?;
    let n = 150;
    let ps: Vec<Particle> = (0..n)
        .map(|i| {
            let r = |k: u64| rndf(i as u64 * 7 + k, -1.0, 1.0) as f32;
            Particle { pos: [r(0), r(1), r(2)], vel: [r(3) * 0.1, r(4) * 0.1, r(5) * 0.1], mass: 0.5 + (r(6) + 1.0) }
        })
        .collect();
    let step = Step { dt: 0.01, soft2: 0.05, damping: 0.999 };
    let cur = dev.upload_structs(&ps).map_err(|e| e.to_string())?;
    let mut next = dev.alloc_structs::<Particle>(n).map_err(|e| e.to_string())?;
    launch(&m, "nbody_step", dev, Grid::linear(n, 64), (&cur, &mut next, kache::ByValue(step)))?;
    let got = next.download().map_err(|e| e.to_string())?;
    let mut want = Vec::new();
    for p in &ps {
        let mut acc = [0.0f32; 3];
        for o in &ps {
            let d = [o.pos[0] - p.pos[0], o.pos[1] - p.pos[1], o.pos[2] - p.pos[2]];
            let inv = 1.0 / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + step.soft2).sqrt();
            let s = o.mass * inv * inv * inv;
            for k in 0..3 {
                acc[k] += d[k] * s;
            }
        }
        let mut q = *p;
        for (k, a) in acc.iter().enumerate() {
            q.vel[k] = (q.vel[k] + a * step.dt) * step.damping;
            q.pos[k] += q.vel[k] * step.dt;
        }
        want.push(q);
    }
    let flat = |v: &[Particle]| v.iter().flat_map(|p| p.pos.into_iter().chain(p.vel).chain([p.mass])).collect::<Vec<f32>>();
    close("nbody_step", &flat(&got), &flat(&want), 1e-4, 1e-5)?;
    if got == ps {
        return Err("nbody_step: nothing moved".into());
    }

    let mut ke = zeros::<f32>(dev, &[n])?;
    launch(&m, "kinetic_energy", dev, Grid::linear(n, 64), (&next, &mut ke))?;
    let want: Vec<f32> = got.iter().map(|p| 0.5 * p.mass * (p.vel[0] * p.vel[0] + p.vel[1] * p.vel[1] + p.vel[2] * p.vel[2])).collect();
    close("kinetic_energy", &dl(&ke)?, &want, 1e-6, 1e-9)
}
