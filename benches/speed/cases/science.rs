//! Compute kernels: all-pairs n-body, Black-Scholes and the Mandelbrot set
//! (benches/speed/kernels/science.rs and science.cu).

use std::cell::{Cell, RefCell};

use kache::{Grid, Order};

use super::super::harness::*;

kache::plain_struct! {
    /// A body: position and mass (science.rs's `Body`; a `float4` in science.cu).
    #[derive(Clone, Copy, Debug)]
    pub struct Body {
        pub x: f32,
        pub y: f32,
        pub z: f32,
        pub m: f32,
    }
}

kache::plain_struct! {
    /// An acceleration (science.rs's `Accel`; a `float3` in science.cu).
    #[derive(Clone, Copy, Debug)]
    pub struct Accel {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }
}

/// The accelerations of 2^17 bodies from each other (blocks of 256, shared-memory tiles), 20
/// flops counted per pair.
pub fn nbody(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 17, 300);
    let soft2 = 0.01f32;
    let u = uniform_f32(4 * n, 51);
    let flat: Vec<f32> = (0..4 * n).map(|i| if i % 4 == 3 { u[i] + 0.01 } else { 2.0 * u[i] - 1.0 }).collect();
    let bodies: Vec<Body> = flat.chunks(4).map(|b| Body { x: b[0], y: b[1], z: b[2], m: b[3] }).collect();
    let bd = run.dev.upload_structs(&bodies).map_err(msg)?;
    // kache's output is an array of `Accel` structs, NVRTC's the same bytes as f32s; `nvrtc_last`
    // says which the check reads (the last launched).
    let ad = RefCell::new(run.dev.alloc_structs::<Accel>(n).map_err(msg)?);
    let fd = run.dev.upload(&flat).map_err(msg)?;
    let od = run.dev.alloc::<f32>(&[3 * n]).map_err(msg)?;
    let nvrtc_last = Cell::new(false);
    let verify = |_: &Run| -> Result<String, String> {
        let got: Vec<[f32; 3]> = if nvrtc_last.get() {
            od.download().map_err(msg)?.chunks(3).map(|a| [a[0], a[1], a[2]]).collect()
        } else {
            ad.borrow().download().map_err(msg)?.iter().map(|a| [a.x, a.y, a.z]).collect()
        };
        let picks = samples(n, 256, 52);
        let mut worst = 0f64;
        for &i in &picks {
            let (mut want, mut scale) = ([0f64; 3], [0f64; 3]);
            let me = bodies[i];
            for b in &bodies {
                let d = [(b.x - me.x) as f64, (b.y - me.y) as f64, (b.z - me.z) as f64];
                let inv = 1.0 / (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft2 as f64).sqrt();
                let s = b.m as f64 * inv * inv * inv;
                for c in 0..3 {
                    want[c] += d[c] * s;
                    scale[c] += (d[c] * s).abs();
                }
            }
            for c in 0..3 {
                worst = worst.max((got[i][c] as f64 - want[c]).abs() / scale[c].max(1e-30));
            }
        }
        within(worst, 1e-4, &format!("max err (of sum |terms|), {} bodies:", picks.len()))
    };
    let reset = |r: &Run| {
        *ad.borrow_mut() = r.dev.alloc_structs::<Accel>(n).map_err(msg)?;
        od.copy_from(&vec![0f32; 3 * n]).map_err(msg)
    };
    let work = Work::Flops(20.0 * (n as f64) * (n as f64));
    let k = run.k("nbody")?;
    let blocks = n.div_ceil(256) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| {
        nvrtc_last.set(false);
        kache_launch!(k, r, grid, checked, (&bd, &mut *ad.borrow_mut(), soft2))
    };
    let (pf, po) = (fd.device_ptr(), od.device_ptr());
    let nvrtc = |r: &Run| {
        nvrtc_last.set(true);
        r.nvrtc()?.call("nbody", (blocks, 1, 1), (256, 1, 1), &[A::P(pf), A::P(po), A::I(n as i32), A::F(soft2)])
    };
    run.rows("nbody", work, &reset, &kache, &nvrtc, &verify)
}

/// Call and put prices of 2^26 European options (Black-Scholes), 20 bytes moved per option.
pub fn black_scholes(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 26, 5000);
    let (rate, vol) = (0.02f32, 0.30f32);
    // The ranges of CUDA's sample: spot 5 to 30, strike 1 to 100, 0.25 to 10 years.
    let s: Vec<f32> = uniform_f32(n, 53).iter().map(|v| 5.0 + 25.0 * v).collect();
    let k: Vec<f32> = uniform_f32(n, 54).iter().map(|v| 1.0 + 99.0 * v).collect();
    let t: Vec<f32> = uniform_f32(n, 55).iter().map(|v| 0.25 + 9.75 * v).collect();
    let (sd, kd, td) = (run.dev.upload(&s).map_err(msg)?, run.dev.upload(&k).map_err(msg)?, run.dev.upload(&t).map_err(msg)?);
    let cd = run.dev.alloc::<f32>(&[n]).map_err(msg)?;
    let pd = run.dev.alloc::<f32>(&[n]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let (call, put) = (cd.download().map_err(msg)?, pd.download().map_err(msg)?);
        let cnd = |d: f64| 0.5 * libm::erfc(-d / std::f64::consts::SQRT_2);
        let (r, v) = (rate as f64, vol as f64);
        let picks = samples(n, 1 << 16, 56);
        let mut worst = 0f64;
        for &i in &picks {
            let (s, k, t) = (s[i] as f64, k[i] as f64, t[i] as f64);
            let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
            let d2 = d1 - v * t.sqrt();
            let e = (-r * t).exp();
            let (wc, wp) = (s * cnd(d1) - k * e * cnd(d2), k * e * cnd(-d2) - s * cnd(-d1));
            worst = worst.max(((call[i] as f64 - wc).abs()).max((put[i] as f64 - wp).abs()) / (s + k));
        }
        within(worst, 1e-5, &format!("max err (of spot + strike), {} options:", picks.len()))
    };
    let zero = vec![0f32; n];
    let reset = |_: &Run| {
        cd.copy_from(&zero).map_err(msg)?;
        pd.copy_from(&zero).map_err(msg)
    };
    let work = Work::Bytes(20.0 * n as f64);
    let kern = run.k("black_scholes")?;
    let blocks = n.div_ceil(256) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache =
        |r: &Run, checked: bool| kache_launch!(kern, r, grid, checked, (&sd, &kd, &td, rate, vol, &mut cd.clone(), &mut pd.clone()));
    let p = [sd.device_ptr(), kd.device_ptr(), td.device_ptr(), cd.device_ptr(), pd.device_ptr()];
    let nvrtc = |r: &Run| {
        let args = [A::P(p[0]), A::P(p[1]), A::P(p[2]), A::F(rate), A::F(vol), A::P(p[3]), A::P(p[4]), A::I(n as i32)];
        r.nvrtc()?.call("black_scholes", (blocks, 1, 1), (256, 1, 1), &args)
    };
    run.rows("black_scholes", work, &reset, &kache, &nvrtc, &verify)
}

/// The escape counts (up to 256) of a 4096 x 4096 image of [-2, 1] x [-1.5, 1.5]; 8 flops
/// counted per iteration, the iterations estimated from the float64 reference's samples.
pub fn mandelbrot(run: &mut Run) -> Result<(), String> {
    let (rows, cols) = (run.size(4096, 40), run.size(4096, 64));
    let max_iter = 256u32;
    let (x0, y0) = (-2.0f32, -1.5f32);
    let (dx, dy) = (3.0 / cols as f32, 3.0 / rows as f32);
    let escape = |row: usize, col: usize| -> u32 {
        let (cx, cy) = (x0 as f64 + col as f64 * dx as f64, y0 as f64 + row as f64 * dy as f64);
        let (mut x, mut y, mut it) = (0f64, 0f64, 0);
        while it < max_iter && x * x + y * y <= 4.0 {
            let xt = x * x - y * y + cx;
            y = 2.0 * x * y + cy;
            x = xt;
            it += 1;
        }
        it
    };
    let picks = samples(rows * cols, 1 << 16, 57);
    let want: Vec<u32> = picks.iter().map(|p| escape(p / cols, p % cols)).collect();
    let mean_iter = want.iter().map(|w| *w as f64).sum::<f64>() / want.len() as f64;
    let od = run.dev.alloc_with_order::<u32>(&[rows, cols], Order::C).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = od.download().map_err(msg)?;
        // Points near the set's edge escape after another count in f32 than in f64 (the orbit
        // is chaotic there): a few may differ, no more.
        let differ = picks.iter().zip(&want).filter(|(p, w)| got[**p] != **w).count();
        let share = differ as f64 / picks.len() as f64;
        within(share, 0.01, &format!("share of {} pixels whose count differs from f64's:", picks.len()))
    };
    let zero = vec![0u32; rows * cols];
    let reset = |_: &Run| od.copy_from(&zero).map_err(msg);
    let work = Work::Flops(8.0 * mean_iter * (rows * cols) as f64);
    let k = run.k("mandelbrot")?;
    let dims = (cols.div_ceil(32) as u32, rows.div_ceil(8) as u32, 1);
    let grid = Grid::new(dims, (32u32, 8u32, 1u32));
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&mut od.clone(), x0, y0, dx, dy, max_iter));
    let po = od.device_ptr();
    let nvrtc = |r: &Run| {
        let args = [A::P(po), A::I(rows as i32), A::I(cols as i32), A::F(x0), A::F(y0), A::F(dx), A::F(dy), A::U(max_iter)];
        r.nvrtc()?.call("mandelbrot", dims, (32, 8, 1), &args)
    };
    run.rows("mandelbrot", work, &reset, &kache, &nvrtc, &verify)
}
