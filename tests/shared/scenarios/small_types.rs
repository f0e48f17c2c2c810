//! Scenarios: the small integer types and the 16-bit floats (`i8`, `u8`, `i16`, `u16`, `f16`,
//! `bf16`) in image, quantised, mixed-precision and histogram kernels, every kind of cast,
//! and constant lengths. References use `half` with one rounding per operation, which is what
//! the kernels compute on every target for `+ - * /` and conversions.

use half::{bf16, f16};
use kache::{Device, Grid};

use super::helpers::*;

fn h(x: f32) -> f16 {
    f16::from_f32(x)
}

fn b16(x: f32) -> bf16 {
    bf16::from_f32(x)
}

/// image_u8.rs: grayscale, brightness/contrast with saturation, box blur, threshold, centring.
pub fn image_u8(dev: &Device) -> Outcome {
    let m = module("image_u8.rs")?;
    let (hgt, wid) = (13usize, 21usize);
    let n = hgt * wid;
    let rgb: Vec<u8> = (0..3 * n).map(|i| (rnd(i as u64) % 256) as u8).collect();
    let mut gray = zeros::<u8>(dev, &[n])?;
    launch(&m, "grayscale", dev, Grid::linear(n, 64), (&up(dev, &rgb)?, &mut gray))?;
    let want: Vec<u8> =
        (0..n).map(|i| ((77 * rgb[3 * i] as u32 + 150 * rgb[3 * i + 1] as u32 + 29 * rgb[3 * i + 2] as u32 + 128) >> 8) as u8).collect();
    let g = dl(&gray)?;
    eq("grayscale", &g, &want)?;

    let mut img = up_nd(dev, &g, &[hgt, wid])?;
    let grid = Grid::new((blocks(wid, 8), blocks(hgt, 8)), (8u32, 8u32));
    launch(&m, "brightness_contrast", dev, grid, (&mut img, 1.7f32, -40.0f32))?;
    let want: Vec<u8> = g.iter().map(|&v| (v as f32 * 1.7 - 40.0).round() as u8).collect();
    let bright = dl(&img)?;
    eq("brightness_contrast", &bright, &want)?;
    if !bright.contains(&0) || !bright.contains(&255) {
        return Err("brightness_contrast: the inputs do not reach both saturation limits".into());
    }

    let mut blurred = zeros::<u8>(dev, &[hgt, wid])?;
    launch(&m, "box_blur_3x3", dev, grid, (&up_nd(dev, &g, &[hgt, wid])?, &mut blurred))?;
    let mut want = vec![0u8; n];
    for y in 0..hgt {
        for x in 0..wid {
            let (mut sum, mut cnt) = (0u16, 0u16);
            for yy in y.saturating_sub(1)..=(y + 1).min(hgt - 1) {
                for xx in x.saturating_sub(1)..=(x + 1).min(wid - 1) {
                    sum += g[yy * wid + xx] as u16;
                    cnt += 1;
                }
            }
            want[y * wid + x] = ((sum + cnt / 2) / cnt) as u8;
        }
    }
    eq("box_blur_3x3", &dl(&blurred)?, &want)?;

    let mut mask = zeros::<bool>(dev, &[n])?;
    let mut count = zeros::<u32>(dev, &[1])?;
    launch(&m, "threshold", dev, Grid::linear(n, 64), (&up(dev, &g)?, 128u8, &mut mask, &mut count))?;
    let want: Vec<bool> = g.iter().map(|&v| v >= 128).collect();
    eq("threshold mask", &dl(&mask)?, &want)?;
    eq("threshold count", &dl(&count)?, &[want.iter().filter(|b| **b).count() as u32])?;

    let mut centred = zeros::<i8>(dev, &[n])?;
    launch(&m, "centre_i8", dev, Grid::linear(n, 64), (&up(dev, &g)?, &mut centred))?;
    eq("centre_i8", &dl(&centred)?, &g.iter().map(|&v| (v as i16 - 128) as i8).collect::<Vec<_>>())
}

/// int8_dot.rs: int8 dot products with i32 accumulation, a quantised mat-vec, requantisation.
pub fn int8_dot(dev: &Device) -> Outcome {
    let m = module("int8_dot.rs")?;
    let n = 3001;
    let a: Vec<i8> = (0..n).map(|i| (rnd(i as u64) % 256) as u8 as i8).collect();
    let b: Vec<i8> = (0..n).map(|i| (rnd(i as u64 + 7777) % 256) as u8 as i8).collect();
    let mut out = zeros::<i32>(dev, &[1])?;
    launch(&m, "dot_i8", dev, Grid::new(4u32, 64u32), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: i32 = a.iter().zip(&b).map(|(x, y)| *x as i32 * *y as i32).sum();
    eq("dot_i8", &dl(&out)?, &[want])?;

    let (rows, cols) = (37usize, 53usize);
    let w: Vec<i8> = (0..rows * cols).map(|i| (rnd(i as u64 + 1) % 255) as i16 as i8).collect();
    let x: Vec<i8> = (0..cols).map(|i| (i as i32 * 5 - 127) as i8).collect();
    let scale: Vec<f32> = (0..rows).map(|r| 1.0 / (1 << (r % 7)) as f32).collect();
    let mut y = zeros::<f32>(dev, &[rows])?;
    launch(
        &m,
        "qmatvec",
        dev,
        Grid::linear(rows, 32),
        (&up_nd(dev, &w, &[rows, cols])?, &up(dev, &x)?, &up(dev, &scale)?, 0.5f32, &mut y),
    )?;
    let want: Vec<f32> =
        (0..rows).map(|r| (0..cols).map(|c| w[r * cols + c] as i32 * x[c] as i32).sum::<i32>() as f32 * scale[r] * 0.5).collect();
    exact("qmatvec", &dl(&y)?, &want)?;

    let xs: Vec<f32> = vec![0.0, 1.49, 1.5, -1.5, 126.6, 127.5, 1e9, -1e9, f32::NAN, f32::INFINITY, -0.4, 63.0];
    let mut q = zeros::<i8>(dev, &[xs.len()])?;
    launch(&m, "requantize", dev, Grid::linear(xs.len(), 32), (&up(dev, &xs)?, 2.0f32, &mut q))?;
    eq("requantize", &dl(&q)?, &xs.iter().map(|v| (v * 2.0).round() as i8).collect::<Vec<_>>())?;

    let n = 1000;
    let ua: Vec<u8> = (0..n).map(|i| (rnd(i as u64) % 256) as u8).collect();
    let sb: Vec<i8> = (0..n).map(|i| (rnd(i as u64 + 3) % 256) as u8 as i8).collect();
    let nb = blocks(n, 128) as usize;
    let mut partial = zeros::<i32>(dev, &[nb])?;
    launch(&m, "dot_u8_i8_shared", dev, Grid::linear(n, 128), (&up(dev, &ua)?, &up(dev, &sb)?, &mut partial))?;
    let want: Vec<i32> = (0..nb).map(|blk| (blk * 128..((blk + 1) * 128).min(n)).map(|i| ua[i] as i32 * sb[i] as i32).sum()).collect();
    eq("dot_u8_i8_shared", &dl(&partial)?, &want)?;

    let a16: Vec<i16> = (0..n).map(|i| (rnd(i as u64 + 11) % 65536) as u16 as i16).collect();
    let b16v: Vec<i16> = (0..n).map(|i| (rnd(i as u64 + 13) % 65536) as u16 as i16).collect();
    let start: Vec<i64> = (0..n).map(|i| i as i64 * 1_000_000_007).collect();
    let mut acc = up(dev, &start)?;
    let mut wrapped = zeros::<i16>(dev, &[n])?;
    launch(&m, "mac_i16", dev, Grid::linear(n, 64), (&up(dev, &a16)?, &up(dev, &b16v)?, &mut acc, &mut wrapped))?;
    eq("mac_i16 acc", &dl(&acc)?, &(0..n).map(|i| start[i] + a16[i] as i64 * b16v[i] as i64).collect::<Vec<_>>())?;
    eq("mac_i16 wrapping_mul", &dl(&wrapped)?, &(0..n).map(|i| a16[i].wrapping_mul(b16v[i])).collect::<Vec<_>>())
}

/// axpy_f16.rs: f16 storage with f32 accumulation, axpy in f16 itself, a dot product, clamping.
pub fn axpy_f16(dev: &Device) -> Outcome {
    let m = module("axpy_f16.rs")?;
    let n = 1000;
    let x: Vec<f16> = (0..n).map(|i| h(rndf(i as u64, -4.0, 4.0) as f32)).collect();
    let y: Vec<f16> = (0..n).map(|i| h(rndf(i as u64 + 99, -4.0, 4.0) as f32)).collect();
    let mut yd = up(dev, &y)?;
    launch(&m, "axpy_f16_acc_f32", dev, Grid::linear(n, 128), (0.3f32, &up(dev, &x)?, &mut yd))?;
    let want: Vec<f16> = (0..n).map(|i| h(0.3 * x[i].to_f32() + y[i].to_f32())).collect();
    exact("axpy_f16_acc_f32", &dl(&yd)?, &want)?;

    let a = h(0.3);
    let mut yd = up(dev, &y)?;
    launch(&m, "axpy_f16", dev, Grid::linear(n, 128), (a, &up(dev, &x)?, &mut yd))?;
    let want: Vec<f16> = (0..n).map(|i| h(h(a.to_f32() * x[i].to_f32()).to_f32() + y[i].to_f32())).collect();
    exact("axpy_f16 (two f16 roundings)", &dl(&yd)?, &want)?;

    let mut out = zeros::<f32>(dev, &[1])?;
    launch(&m, "dot_f16", dev, Grid::linear(n, 256), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    let want: f64 = x.iter().zip(&y).map(|(p, q)| p.to_f64() * q.to_f64()).sum();
    close("dot_f16", &dl(&out)?, &[want as f32], 1e-5, 1e-3)?;

    let (r, c) = (5usize, 7usize);
    let v: Vec<f16> = (0..r * c).map(|i| h((i as f32 - 17.0) * 1000.0)).collect();
    let mut vd = up_nd(dev, &v, &[r, c])?;
    launch(&m, "scale_clamp_f16", dev, Grid::new((1u32, 1u32), (8u32, 8u32)), (&mut vd, 3.5f32))?;
    let want: Vec<f16> = v.iter().map(|e| h((e.to_f32() * 3.5).min(65504.0)).max(h(-60000.0))).collect();
    exact("scale_clamp_f16", &dl(&vd)?, &want)
}

/// bf16_elementwise.rs: bias + ReLU in bf16, GELU through f32, conversions, fma, residual.
pub fn bf16_elementwise(dev: &Device) -> Outcome {
    let m = module("bf16_elementwise.rs")?;
    let n = 777;
    let x: Vec<bf16> = (0..n).map(|i| b16(rndf(i as u64, -3.0, 3.0) as f32)).collect();
    let bias: Vec<bf16> = (0..5).map(|i| b16(i as f32 * 0.37 - 0.8)).collect();
    let mut y = zeros::<bf16>(dev, &[n])?;
    launch(&m, "bias_relu_bf16", dev, Grid::linear(n, 64), (&up(dev, &x)?, &up(dev, &bias)?, &mut y))?;
    let want: Vec<bf16> = (0..n)
        .map(|i| {
            let v = b16(x[i].to_f32() + bias[i % 5].to_f32());
            if v.to_f32() > 0.0 { v } else { b16(0.0) }
        })
        .collect();
    exact("bias_relu_bf16", &dl(&y)?, &want)?;

    launch(&m, "gelu_bf16", dev, Grid::linear(n, 64), (&up(dev, &x)?, &mut y))?;
    let want: Vec<bf16> = x
        .iter()
        .map(|v| {
            let v = v.to_f32();
            b16(0.5 * v * (1.0 + (0.7978846 * (v + 0.044715 * v * v * v)).tanh()))
        })
        .collect();
    close("gelu_bf16", &dl(&y)?, &want, 1.0 / 64.0, 1.0 / 256.0)?;

    let mut wide = zeros::<f32>(dev, &[n])?;
    launch(&m, "widen_bf16", dev, Grid::linear(n, 64), (&up(dev, &x)?, &mut wide))?;
    exact("widen_bf16", &dl(&wide)?, &x.iter().map(|v| v.to_f32()).collect::<Vec<_>>())?;

    // Ties, values just off a tie (where rounding through f32 naively goes wrong), the edges.
    let tie = 1.0 + 2f64.powi(-8);
    let xs: Vec<f64> = vec![
        tie,
        tie + 2f64.powi(-45),
        -(tie + 2f64.powi(-45)),
        1.0 + 3.0 * 2f64.powi(-8),
        1.0 + 2f64.powi(-11) + 2f64.powi(-40),
        65519.0,
        65520.0,
        3.5e38,
        1e-40,
        -0.0,
        f64::NAN,
        f64::NEG_INFINITY,
    ];
    let mut yb = zeros::<bf16>(dev, &[xs.len()])?;
    let mut zh = zeros::<f16>(dev, &[xs.len()])?;
    launch(&m, "narrow_bf16", dev, Grid::linear(xs.len(), 32), (&up(dev, &xs)?, &mut yb, &mut zh))?;
    let want_b: Vec<bf16> = xs.iter().map(|v| kache::float16::f64_to_bf16(*v)).collect();
    let want_h: Vec<f16> = xs.iter().map(|v| kache::float16::f64_to_f16(*v)).collect();
    exact("narrow f64 -> bf16", &dl(&yb)?, &want_b)?;
    exact("narrow f64 -> f16", &dl(&zh)?, &want_h)?;
    if want_b[1].to_f64() != 1.0 + 2f64.powi(-7) || want_h[4].to_f64() != 1.0 + 2f64.powi(-10) {
        return Err("narrow_bf16: the reference does not round off-tie values away from the tie".into());
    }

    // Small integers: a * b + c is exact in bf16, so fused and unfused agree.
    let fa: Vec<bf16> = (0..n).map(|i| b16((i % 9) as f32 - 4.0)).collect();
    let fb: Vec<bf16> = (0..n).map(|i| b16((i % 7) as f32 - 3.0)).collect();
    let fc: Vec<bf16> = (0..n).map(|i| b16((i % 5) as f32)).collect();
    let mut cd = up(dev, &fc)?;
    launch(&m, "fma_bf16", dev, Grid::linear(n, 64), (&up(dev, &fa)?, &up(dev, &fb)?, &mut cd))?;
    exact("fma_bf16", &dl(&cd)?, &(0..n).map(|i| b16(fa[i].to_f32() * fb[i].to_f32() + fc[i].to_f32())).collect::<Vec<_>>())?;

    let r: Vec<bf16> = (0..n).map(|i| b16(rndf(i as u64 + 5, -1.0, 1.0) as f32)).collect();
    let start: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut out = up(dev, &start)?;
    let s = b16(1.5);
    launch(&m, "residual_bf16", dev, Grid::linear(n, 64), (&up(dev, &x)?, &up(dev, &r)?, s, &mut out))?;
    let want: Vec<f32> = (0..n).map(|i| start[i] + b16(b16(x[i].to_f32() * 1.5).to_f32() - r[i].to_f32()).to_f32()).collect();
    exact("residual_bf16", &dl(&out)?, &want)
}

/// histogram_small.rs: u8 histogram in shared memory, i8 buckets in u16 counters, i16 extrema.
pub fn histogram_small(dev: &Device) -> Outcome {
    let m = module("histogram_small.rs")?;
    let n = 10_000;
    let data: Vec<u8> = (0..n).map(|i| (rnd(i as u64) % 251) as u8 ^ (i % 7) as u8).collect();
    let mut hist = zeros::<u32>(dev, &[256])?;
    launch(&m, "histogram_u8", dev, Grid::new(6u32, 128u32), (&up(dev, &data)?, &mut hist))?;
    let mut want = vec![0u32; 256];
    data.iter().for_each(|&v| want[v as usize] += 1);
    eq("histogram_u8", &dl(&hist)?, &want)?;

    let sdata: Vec<i8> = (0..n).map(|i| (rnd(i as u64 + 1) % 256) as u8 as i8).collect();
    let mut buckets = zeros::<u16>(dev, &[16])?;
    launch(&m, "buckets_i8", dev, Grid::linear(n, 128), (&up(dev, &sdata)?, &mut buckets))?;
    let mut want = vec![0u16; 16];
    sdata.iter().for_each(|&v| want[((v as i16 + 128) >> 4) as usize] += 1);
    eq("buckets_i8", &dl(&buckets)?, &want)?;

    let sig: Vec<i16> = (0..n).map(|i| (rnd(i as u64 + 2) % 60000) as i16).collect();
    let mut peak = up(dev, &[i16::MIN])?;
    let mut low = up(dev, &[i16::MAX])?;
    launch(&m, "peak_i16", dev, Grid::linear(n, 128), (&up(dev, &sig)?, &mut peak, &mut low))?;
    eq("peak_i16 max", &dl(&peak)?, &[*sig.iter().max().unwrap()])?;
    eq("peak_i16 min", &dl(&low)?, &[*sig.iter().min().unwrap()])
}

/// small_casts.rs: every kind of cast into and out of the new types, arithmetic, limits.
pub fn small_casts(dev: &Device) -> Outcome {
    let m = module("small_casts.rs")?;
    let ints: Vec<i64> =
        vec![0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 65519, 65520, 2049, 1 << 40, i64::MIN, i64::MAX];
    let k = ints.len();
    let (mut a, mut b, mut c, mut d) =
        (zeros::<i8>(dev, &[k])?, zeros::<u8>(dev, &[k])?, zeros::<i16>(dev, &[k])?, zeros::<u16>(dev, &[k])?);
    let (mut e, mut f) = (zeros::<f16>(dev, &[k])?, zeros::<bf16>(dev, &[k])?);
    launch(&m, "from_i64", dev, Grid::linear(k, 32), (&up(dev, &ints)?, &mut a, &mut b, &mut c, &mut d, &mut e, &mut f))?;
    eq("i64 as i8", &dl(&a)?, &ints.iter().map(|v| *v as i8).collect::<Vec<_>>())?;
    eq("i64 as u8", &dl(&b)?, &ints.iter().map(|v| *v as u8).collect::<Vec<_>>())?;
    eq("i64 as i16", &dl(&c)?, &ints.iter().map(|v| *v as i16).collect::<Vec<_>>())?;
    eq("i64 as u16", &dl(&d)?, &ints.iter().map(|v| *v as u16).collect::<Vec<_>>())?;
    exact("i64 as f16", &dl(&e)?, &ints.iter().map(|v| kache::float16::int_to_f16(*v as i128)).collect::<Vec<_>>())?;
    exact("i64 as bf16", &dl(&f)?, &ints.iter().map(|v| kache::float16::int_to_bf16(*v as i128)).collect::<Vec<_>>())?;

    // Just above a bf16 tie: an f32 or f64 step on the way would round onto the tie.
    let big: Vec<u64> = vec![(1 << 63) + (1 << 55) + 1, (1 << 63) + (1 << 55), u64::MAX, 16_777_217, 3 << 24, 65520];
    let kb = big.len();
    let (mut e, mut f, mut g) = (zeros::<f16>(dev, &[kb])?, zeros::<bf16>(dev, &[kb])?, zeros::<f32>(dev, &[kb])?);
    launch(&m, "from_u64", dev, Grid::linear(kb, 32), (&up(dev, &big)?, &mut e, &mut f, &mut g))?;
    exact("u64 as f16", &dl(&e)?, &big.iter().map(|v| kache::float16::int_to_f16(*v as i128)).collect::<Vec<_>>())?;
    exact("u64 as bf16", &dl(&f)?, &big.iter().map(|v| kache::float16::int_to_bf16(*v as i128)).collect::<Vec<_>>())?;
    exact("u64 as f32", &dl(&g)?, &big.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    if dl(&f)?[0].to_f64() != 2f64.powi(63) + 2f64.powi(56) {
        return Err("u64 as bf16 rounded (2^63 + 2^55 + 1) onto the tie".into());
    }

    let fl: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -1.9,
        127.9,
        128.0,
        -128.9,
        -129.0,
        255.9,
        256.0,
        40000.0,
        -40000.0,
        70000.0,
        1e-8,
        6e-8,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        65519.0,
        65520.0,
        3.4e38,
    ];
    let k = fl.len();
    let (mut a, mut b, mut c, mut d) =
        (zeros::<i8>(dev, &[k])?, zeros::<u8>(dev, &[k])?, zeros::<i16>(dev, &[k])?, zeros::<u16>(dev, &[k])?);
    let (mut e, mut f) = (zeros::<f16>(dev, &[k])?, zeros::<bf16>(dev, &[k])?);
    launch(&m, "from_f32", dev, Grid::linear(k, 32), (&up(dev, &fl)?, &mut a, &mut b, &mut c, &mut d, &mut e, &mut f))?;
    eq("f32 as i8", &dl(&a)?, &fl.iter().map(|v| *v as i8).collect::<Vec<_>>())?;
    eq("f32 as u8", &dl(&b)?, &fl.iter().map(|v| *v as u8).collect::<Vec<_>>())?;
    eq("f32 as i16", &dl(&c)?, &fl.iter().map(|v| *v as i16).collect::<Vec<_>>())?;
    eq("f32 as u16", &dl(&d)?, &fl.iter().map(|v| *v as u16).collect::<Vec<_>>())?;
    exact("f32 as f16", &dl(&e)?, &fl.iter().map(|v| h(*v)).collect::<Vec<_>>())?;
    exact("f32 as bf16", &dl(&f)?, &fl.iter().map(|v| b16(*v)).collect::<Vec<_>>())?;

    let hs: Vec<f16> = fl.iter().map(|v| h(*v)).chain([f16::MAX, f16::MIN, f16::MIN_POSITIVE, f16::from_bits(1)]).collect();
    let k = hs.len();
    let (mut a, mut b, mut c, mut d) =
        (zeros::<i8>(dev, &[k])?, zeros::<u8>(dev, &[k])?, zeros::<i32>(dev, &[k])?, zeros::<u64>(dev, &[k])?);
    let (mut e, mut f) = (zeros::<f64>(dev, &[k])?, zeros::<bf16>(dev, &[k])?);
    launch(&m, "from_f16", dev, Grid::linear(k, 32), (&up(dev, &hs)?, &mut a, &mut b, &mut c, &mut d, &mut e, &mut f))?;
    eq("f16 as i8", &dl(&a)?, &hs.iter().map(|v| v.to_f32() as i8).collect::<Vec<_>>())?;
    eq("f16 as u8", &dl(&b)?, &hs.iter().map(|v| v.to_f32() as u8).collect::<Vec<_>>())?;
    eq("f16 as i32", &dl(&c)?, &hs.iter().map(|v| v.to_f32() as i32).collect::<Vec<_>>())?;
    eq("f16 as u64", &dl(&d)?, &hs.iter().map(|v| v.to_f32() as u64).collect::<Vec<_>>())?;
    exact("f16 as f64", &dl(&e)?, &hs.iter().map(|v| v.to_f64()).collect::<Vec<_>>())?;
    exact("f16 as bf16", &dl(&f)?, &hs.iter().map(|v| b16(v.to_f32())).collect::<Vec<_>>())?;

    let sa: Vec<i8> = (0..64).map(|i| (rnd(i) % 256) as u8 as i8).chain([i8::MIN, -1, 0]).collect();
    let sb: Vec<u16> = (0..64).map(|i| (rnd(i + 50) % 65536) as u16).chain([0, 65535, 1]).collect();
    let k = sa.len();
    let (mut w, mut x, mut y, mut z) =
        (zeros::<i64>(dev, &[k])?, zeros::<u32>(dev, &[k])?, zeros::<f16>(dev, &[k])?, zeros::<usize>(dev, &[k])?);
    launch(&m, "from_small", dev, Grid::linear(k, 32), (&up(dev, &sa)?, &up(dev, &sb)?, &mut w, &mut x, &mut y, &mut z))?;
    eq("from_small i64", &dl(&w)?, &(0..k).map(|i| sa[i] as i64 + sb[i] as i64).collect::<Vec<_>>())?;
    eq("from_small u32", &dl(&x)?, &sa.iter().map(|v| *v as u32).collect::<Vec<_>>())?;
    exact("from_small f16", &dl(&y)?, &sb.iter().map(|v| kache::float16::int_to_f16(*v as i128)).collect::<Vec<_>>())?;
    eq("from_small usize", &dl(&z)?, &(0..k).map(|i| ((sa[i] as u8) as usize).wrapping_add((sb[i] as i8) as usize)).collect::<Vec<_>>())?;

    let a8: Vec<i8> = vec![100, -100, 127, i8::MIN, 7, -7, 0, 5, i8::MIN, 3];
    let b8: Vec<i8> = vec![100, 3, 1, -1, 0, 2, 9, -9, 1, 12];
    let c16: Vec<u16> = vec![5, 65535, 0, 1000, 7, 300, 65535, 1, 2, 40000];
    let d16: Vec<u16> = vec![7, 1, 3, 0, 7, 17, 65535, 2, 0, 123];
    let k = a8.len();
    let (mut o8, mut o16) = (zeros::<i8>(dev, &[5 * k])?, zeros::<u16>(dev, &[3 * k])?);
    launch(
        &m,
        "small_arith",
        dev,
        Grid::linear(k, 32),
        (&up(dev, &a8)?, &up(dev, &b8)?, &up(dev, &c16)?, &up(dev, &d16)?, &mut o8, &mut o16),
    )?;
    let div = |x: i8, y: i8| if y == 0 { 0 } else { x.wrapping_div(y) };
    let rem = |x: i8, y: i8| if y == 0 { 0 } else { x.wrapping_rem(y) };
    let want8: Vec<i8> = (0..k)
        .flat_map(|i| {
            let (x, y) = (a8[i], b8[i]);
            [x.wrapping_add(y), x.wrapping_mul(y), div(x, y), rem(x, y), x.wrapping_shr(y as u32) ^ !y.wrapping_shl(3)]
        })
        .collect();
    eq("small_arith i8", &dl(&o8)?, &want8)?;
    let want16: Vec<u16> = (0..k)
        .flat_map(|i| {
            let (x, y) = (c16[i], d16[i]);
            let q = x.checked_div(y).map_or(0, |d| d + x % y);
            [x.wrapping_sub(y).wrapping_shl(20), q, x.max(y) - x.min(y) + x.leading_zeros() as u16]
        })
        .collect();
    eq("small_arith u16", &dl(&o16)?, &want16)?;

    let mut out = zeros::<i64>(dev, &[2])?;
    launch(&m, "scalar_params", dev, Grid::linear(1, 32), (-3i8, 300i16, 60000u16, 200u8, h(-2.75), b16(9.75), &mut out))?;
    eq("scalar_params", &dl(&out)?, &[-900 + 60000 - 200, -5 + 9])?;

    let (mut li, mut lf) = (zeros::<i64>(dev, &[8])?, zeros::<f64>(dev, &[10])?);
    launch(&m, "limits", dev, Grid::linear(1, 32), (&mut li, &mut lf))?;
    eq("limits (integers)", &dl(&li)?, &[i8::MIN as i64, 127, 0, 255, -32768, 32767, 65535, u32::MAX as i64])?;
    let pi = kache::float16::f64_to_f16(std::f64::consts::PI).to_f64();
    let want = [
        65504.0,
        -65504.0,
        f16::MIN_POSITIVE.to_f64(),
        f16::EPSILON.to_f64(),
        bf16::MAX.to_f64(),
        bf16::MIN.to_f64(),
        bf16::MIN_POSITIVE.to_f64(),
        bf16::EPSILON.to_f64(),
        2.25 + 5.0625,
        pi,
    ];
    exact("limits (floats)", &dl(&lf)?, &want)
}

/// bf16_gemm_tile.rs: a tiled bf16 GEMM with f32 accumulation; constant-expression lengths.
pub fn bf16_gemm_tile(dev: &Device) -> Outcome {
    let m = module("bf16_gemm_tile.rs")?;
    let (n, k, p) = (37usize, 45usize, 29usize);
    let a: Vec<bf16> = (0..n * k).map(|i| b16(((rnd(i as u64) % 17) as f32 - 8.0) / 4.0)).collect();
    let b: Vec<bf16> = (0..k * p).map(|i| b16(((rnd(i as u64 + 9) % 13) as f32 - 6.0) / 8.0)).collect();
    let mut c = zeros::<f32>(dev, &[n, p])?;
    let grid = Grid::new((blocks(p, 16), blocks(n, 16)), (16u32, 16u32));
    launch(&m, "gemm_bf16", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut c))?;
    let want: Vec<f32> = (0..n * p).map(|ij| (0..k).map(|t| a[ij / p * k + t].to_f32() * b[t * p + ij % p].to_f32()).sum()).collect();
    exact("gemm_bf16 (small dyadic inputs: exact in f32)", &dl(&c)?, &want)?;

    let x: Vec<f32> = (0..50).map(|i| i as f32 * 0.5).collect();
    let mut y = zeros::<f32>(dev, &[47])?;
    launch(&m, "smooth_taps", dev, Grid::linear(47, 32), (&up(dev, &x)?, &mut y))?;
    let w = [0.125f32, 0.25, 0.25, 0.375];
    exact("smooth_taps", &dl(&y)?, &(0..47).map(|i| (0..4).fold(0.0f32, |s, t| s + w[t] * x[i + t] * 1.0)).collect::<Vec<_>>())
}
