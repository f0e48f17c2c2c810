//! Scenarios: generic kernels (`cache-fixtures/kernels/generic_*.rs`), each launched with
//! several element types through one generic kernel (the launch picks the instance) or with an
//! instance named explicitly (`matmul_tiled::<16>`), compared with Rust references. Inputs are
//! small integers and halves, so results are exact in every element type used.

use half::{bf16, f16};
use kache::{Device, Element, Grid, Kernel, KernelArgs};

use super::helpers::*;

fn kernel(m: &kache::Module, name: &str) -> Result<Kernel, String> {
    m.kernel(name).map_err(|e| format!("kernel {name}: {e}"))
}

fn run(k: &Kernel, dev: &Device, grid: Grid, args: impl KernelArgs) -> Outcome {
    k.launch(dev, grid, args).map_err(|e| format!("launching {}: {e}", k.name()))
}

fn h(x: f64) -> f16 {
    f16::from_f64(x)
}

fn b(x: f64) -> bf16 {
    bf16::from_f64(x)
}

/// Checks that a generic kernel made exactly these instances.
fn made(k: &Kernel, want: &[&str]) -> Outcome {
    let got = k.instances();
    let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    want.sort();
    if got == want { Ok(()) } else { Err(format!("{}: instances made {got:?}, expected {want:?}", k.name())) }
}

/// generic_axpy.rs: `axpy` launched with f32, f64, f16 and bf16 arguments through one generic
/// kernel, `scale` and `add_into` over integer types (wrapping) and floats.
pub fn generic_axpy(dev: &Device) -> Outcome {
    let m = module("generic_axpy.rs")?;
    let axpy = kernel(&m, "axpy")?;
    let n = 300;
    let x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 - 3.0).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 5) as f64 * 0.5).collect();
    let want: Vec<f64> = (0..n).map(|i| 2.5 * x[i] + y[i]).collect();
    let g = Grid::linear(n, 64);

    let mut y32 = up(dev, &y.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    run(&axpy, dev, g, (2.5f32, &up(dev, &x.iter().map(|v| *v as f32).collect::<Vec<_>>())?, &mut y32))?;
    exact("axpy::<f32>", &dl(&y32)?, &want.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    let mut y64 = up(dev, &y)?;
    run(&axpy, dev, g, (2.5f64, &up(dev, &x)?, &mut y64))?;
    exact("axpy::<f64>", &dl(&y64)?, &want)?;
    let mut y16 = up(dev, &y.iter().map(|v| h(*v)).collect::<Vec<_>>())?;
    run(&axpy, dev, g, (h(2.5), &up(dev, &x.iter().map(|v| h(*v)).collect::<Vec<_>>())?, &mut y16))?;
    exact("axpy::<f16>", &dl(&y16)?, &want.iter().map(|v| h(*v)).collect::<Vec<_>>())?;
    let mut yb = up(dev, &y.iter().map(|v| b(*v)).collect::<Vec<_>>())?;
    run(&axpy, dev, g, (b(2.5), &up(dev, &x.iter().map(|v| b(*v)).collect::<Vec<_>>())?, &mut yb))?;
    exact("axpy::<bf16>", &dl(&yb)?, &want.iter().map(|v| b(*v)).collect::<Vec<_>>())?;
    // The f32 instance again: made once, launched twice.
    run(&axpy, dev, g, (0.0f32, &up(dev, &vec![1.0f32; n])?, &mut y32))?;
    exact("axpy::<f32> (again)", &dl(&y32)?, &want.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    made(&axpy, &["axpy::<f32>", "axpy::<f64>", "axpy::<f16>", "axpy::<bf16>"])?;

    let scale = kernel(&m, "scale")?;
    let xi: Vec<i32> = (0..n).map(|i| (rnd(i as u64) as i32) / 3).collect();
    let mut d = up(dev, &xi)?;
    run(&scale, dev, g, (&mut d, 7i32))?;
    eq("scale::<i32>", &dl(&d)?, &xi.iter().map(|v| v.wrapping_mul(7)).collect::<Vec<_>>())?;
    let xu: Vec<u8> = (0..n).map(|i| rnd(i as u64) as u8).collect();
    let mut d = up(dev, &xu)?;
    run(&scale, dev, g, (&mut d, 3u8))?;
    eq("scale::<u8> (wraps)", &dl(&d)?, &xu.iter().map(|v| v.wrapping_mul(3)).collect::<Vec<_>>())?;
    let mut d = up(dev, &x)?;
    run(&scale, dev, g, (&mut d, -0.5f64))?;
    exact("scale::<f64>", &dl(&d)?, &x.iter().map(|v| v * -0.5).collect::<Vec<_>>())?;

    let add = kernel(&m, "add_into")?;
    let a: Vec<u16> = (0..n).map(|i| rnd(i as u64) as u16).collect();
    let c: Vec<u16> = (0..n).map(|i| rnd(i as u64 + 99) as u16).collect();
    let mut o = zeros::<u16>(dev, &[n])?;
    run(&add, dev, g, (&up(dev, &a)?, &up(dev, &c)?, &mut o))?;
    eq("add_into::<u16> (wraps)", &dl(&o)?, &a.iter().zip(&c).map(|(p, q)| p.wrapping_add(*q)).collect::<Vec<_>>())?;
    let a: Vec<i64> = (0..n).map(|i| rnd(i as u64) as i64).collect();
    let mut o = zeros::<i64>(dev, &[n])?;
    run(&add, dev, g, (&up(dev, &a)?, &up(dev, &a)?, &mut o))?;
    eq("add_into::<i64>", &dl(&o)?, &a.iter().map(|p| p.wrapping_add(*p)).collect::<Vec<_>>())?;
    made(&add, &["add_into::<u16>", "add_into::<i64>"])
}

/// The reference block sums of `x` (wrapping for integers): one per block of `block`.
fn block_reduce<T: Copy>(x: &[T], block: usize, init: T, f: impl Fn(T, T) -> T) -> Vec<T> {
    x.chunks(block).map(|c| c.iter().fold(init, |a, v| f(a, *v))).collect()
}

/// generic_reduce.rs: block sums (i32, u8 wrapping, f16 and f64 on exact values), block maxima
/// with `T::MIN` padding (i8, u64, f32), and a grid-stride mean of squares.
pub fn generic_reduce(dev: &Device) -> Outcome {
    let m = module("generic_reduce.rs")?;
    const B: usize = 128;
    let n = 1000; // not a multiple of the block: the last block is padded
    let g = Grid::linear(n, B as u32);
    let nb = n.div_ceil(B);
    let sum = kernel(&m, "block_sum")?;
    let xi: Vec<i32> = (0..n).map(|i| (rnd(i as u64) % 2001) as i32 - 1000).collect();
    let mut s = zeros::<i32>(dev, &[nb])?;
    run(&sum, dev, g, (&up(dev, &xi)?, &mut s))?;
    eq("block_sum::<i32>", &dl(&s)?, &block_reduce(&xi, B, 0, |a, v| a + v))?;
    let xu: Vec<u8> = (0..n).map(|i| rnd(i as u64) as u8).collect();
    let mut s = zeros::<u8>(dev, &[nb])?;
    run(&sum, dev, g, (&up(dev, &xu)?, &mut s))?;
    eq("block_sum::<u8> (wraps)", &dl(&s)?, &block_reduce(&xu, B, 0, |a, v| a.wrapping_add(v)))?;
    let xf: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
    let mut s = zeros::<f16>(dev, &[nb])?;
    run(&sum, dev, g, (&up(dev, &xf.iter().map(|v| h(*v)).collect::<Vec<_>>())?, &mut s))?;
    exact("block_sum::<f16>", &dl(&s)?, &block_reduce(&xf, B, 0.0, |a, v| a + v).iter().map(|v| h(*v)).collect::<Vec<_>>())?;
    let mut s = zeros::<f64>(dev, &[nb])?;
    run(&sum, dev, g, (&up(dev, &xf)?, &mut s))?;
    exact("block_sum::<f64>", &dl(&s)?, &block_reduce(&xf, B, 0.0, |a, v| a + v))?;
    made(&sum, &["block_sum::<i32>", "block_sum::<u8>", "block_sum::<f16>", "block_sum::<f64>"])?;

    let max = kernel(&m, "block_max")?;
    let x8: Vec<i8> = (0..n).map(|i| -((rnd(i as u64) % 100) as i8) - 20).collect();
    let mut o = zeros::<i8>(dev, &[nb])?;
    run(&max, dev, g, (&up(dev, &x8)?, &mut o))?;
    eq("block_max::<i8> (all negative)", &dl(&o)?, &block_reduce(&x8, B, i8::MIN, |a, v| a.max(v)))?;
    let x64: Vec<u64> = (0..n).map(|i| rnd(i as u64)).collect();
    let mut o = zeros::<u64>(dev, &[nb])?;
    run(&max, dev, g, (&up(dev, &x64)?, &mut o))?;
    eq("block_max::<u64>", &dl(&o)?, &block_reduce(&x64, B, 0, |a, v| a.max(v)))?;
    let x32: Vec<f32> = (0..n).map(|i| -1000.0 + (rnd(i as u64) % 500) as f32 * 0.5).collect();
    let mut o = zeros::<f32>(dev, &[nb])?;
    run(&max, dev, g, (&up(dev, &x32)?, &mut o))?;
    exact("block_max::<f32>", &dl(&o)?, &block_reduce(&x32, B, f32::MIN, |a, v| a.max(v)))?;

    let ms = kernel(&m, "mean_square")?;
    let threads = 96;
    let x: Vec<f64> = (0..n).map(|i| rndf(i as u64, -2.0, 2.0)).collect();
    let mut p = zeros::<f64>(dev, &[threads])?;
    run(&ms, dev, Grid::new(3u32, 32u32), (&up(dev, &x)?, &mut p))?;
    let want: Vec<f64> = (0..threads).map(|t| x.iter().skip(t).step_by(threads).map(|v| v * v).sum::<f64>() / n as f64).collect();
    close("mean_square::<f64>", &dl(&p)?, &want, 1e-12, 0.0)?;
    let x32: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let mut p = zeros::<f32>(dev, &[threads])?;
    run(&ms, dev, Grid::new(3u32, 32u32), (&up(dev, &x32)?, &mut p))?;
    let want: Vec<f32> = want.iter().map(|v| *v as f32).collect();
    close("mean_square::<f32>", &dl(&p)?, &want, 1e-5, 0.0)
}

/// generic_map.rs: clamping through a generic device function, ReLU and the logistic over
/// several float types, and conversions between two element types.
pub fn generic_map(dev: &Device) -> Outcome {
    let m = module("generic_map.rs")?;
    let n = 257;
    let g = Grid::linear(n, 64);
    let clamp = kernel(&m, "clamp_all")?;
    let xi: Vec<i16> = (0..n).map(|i| rnd(i as u64) as i16).collect();
    let mut d = up(dev, &xi)?;
    run(&clamp, dev, g, (&mut d, -1000i16, 2500i16))?;
    eq("clamp_all::<i16>", &dl(&d)?, &xi.iter().map(|v| (*v).clamp(-1000, 2500)).collect::<Vec<_>>())?;
    let xf: Vec<f32> = (0..n).map(|i| (i as f32 - 128.0) * 0.25).collect();
    let mut d = up(dev, &xf)?;
    run(&clamp, dev, g, (&mut d, -3.5f32, 7.25f32))?;
    exact("clamp_all::<f32>", &dl(&d)?, &xf.iter().map(|v| v.clamp(-3.5, 7.25)).collect::<Vec<_>>())?;

    let relu = kernel(&m, "relu")?;
    let mut d = up(dev, &xf.iter().map(|v| *v as f64).collect::<Vec<_>>())?;
    run(&relu, dev, g, (&mut d,))?;
    exact("relu::<f64>", &dl(&d)?, &xf.iter().map(|v| v.max(0.0) as f64).collect::<Vec<_>>())?;
    let mut d = up(dev, &xf.iter().map(|v| b(*v as f64)).collect::<Vec<_>>())?;
    run(&relu, dev, g, (&mut d,))?;
    exact("relu::<bf16>", &dl(&d)?, &xf.iter().map(|v| b(v.max(0.0) as f64)).collect::<Vec<_>>())?;

    let logistic = kernel(&m, "logistic")?;
    let x64: Vec<f64> = (0..n).map(|i| rndf(i as u64, -8.0, 8.0)).collect();
    let mut y = zeros::<f64>(dev, &[n])?;
    run(&logistic, dev, g, (&up(dev, &x64)?, &mut y))?;
    close("logistic::<f64>", &dl(&y)?, &x64.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect::<Vec<_>>(), 1e-14, 1e-15)?;
    let x32: Vec<f32> = x64.iter().map(|v| *v as f32).collect();
    let mut y = zeros::<f32>(dev, &[n])?;
    run(&logistic, dev, g, (&up(dev, &x32)?, &mut y))?;
    close("logistic::<f32>", &dl(&y)?, &x32.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect::<Vec<_>>(), 1e-6, 1e-7)?;

    let convert = kernel(&m, "convert")?;
    let bytes: Vec<u8> = (0..n).map(|i| rnd(i as u64) as u8).collect();
    let mut y = zeros::<f32>(dev, &[n])?;
    run(&convert, dev, g, (&up(dev, &bytes)?, &mut y))?;
    exact("convert::<u8, f32>", &dl(&y)?, &bytes.iter().map(|v| *v as f32).collect::<Vec<_>>())?;
    let mut wide: Vec<f64> = (0..n).map(|i| rndf(i as u64, -70000.0, 70000.0)).collect();
    wide[0] = f64::NAN;
    wide[1] = f64::INFINITY;
    let mut y = zeros::<i16>(dev, &[n])?;
    run(&convert, dev, g, (&up(dev, &wide)?, &mut y))?;
    eq("convert::<f64, i16> (saturates, NaN is 0)", &dl(&y)?, &wide.iter().map(|v| *v as i16).collect::<Vec<_>>())?;
    let ints: Vec<i32> = (0..n).map(|i| rnd(i as u64) as i32).collect();
    let mut y = zeros::<u8>(dev, &[n])?;
    run(&convert, dev, g, (&up(dev, &ints)?, &mut y))?;
    eq("convert::<i32, u8> (truncates)", &dl(&y)?, &ints.iter().map(|v| *v as u8).collect::<Vec<_>>())?;
    made(&convert, &["convert::<u8, f32>", "convert::<f64, i16>", "convert::<i32, u8>"])
}

fn matmul_ref<T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    let mut c = vec![T::default(); m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = T::default();
            for p in 0..k {
                acc = acc + a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = acc;
        }
    }
    c
}

fn launch_matmul<T: Element>(k: &Kernel, dev: &Device, tile: u32, a: &[T], b: &[T], dims: (usize, usize, usize)) -> Result<Vec<T>, String> {
    let (m, kk, n) = dims;
    let mut c = zeros::<T>(dev, &[m, n])?;
    let grid = Grid::new((blocks(n, tile as usize), blocks(m, tile as usize)), (tile, tile));
    run(k, dev, grid, (&up_nd(dev, a, &[m, kk])?, &up_nd(dev, b, &[kk, n])?, &mut c))?;
    dl(&c)
}

/// generic_matmul_tiled.rs: the const-generic tiled matmul named as `matmul_tiled::<8>` and
/// `matmul_tiled::<16>` (each launched with blocks of its tile), and over `i64` and `f64`.
pub fn generic_matmul_tiled(dev: &Device) -> Outcome {
    let m = module("generic_matmul_tiled.rs")?;
    let dims = (37, 29, 45); // no dimension a multiple of a tile
    let a: Vec<f32> = (0..dims.0 * dims.1).map(|i| (rnd(i as u64) % 9) as f32 - 4.0).collect();
    let b: Vec<f32> = (0..dims.1 * dims.2).map(|i| (rnd(i as u64 + 5) % 7) as f32 - 3.0).collect();
    let want = matmul_ref(&a, &b, dims.0, dims.1, dims.2);
    for tile in [8u32, 16] {
        let k = kernel(&m, &format!("matmul_tiled::<{tile}>"))?;
        exact(&format!("matmul_tiled::<{tile}>"), &launch_matmul(&k, dev, tile, &a, &b, dims)?, &want)?;
    }
    let ai: Vec<i64> = a.iter().map(|v| *v as i64 * 1_000_003).collect();
    let bi: Vec<i64> = b.iter().map(|v| *v as i64).collect();
    let k = kernel(&m, "matmul_tiled_t::<i64, 16>")?;
    eq("matmul_tiled_t::<i64, 16>", &launch_matmul(&k, dev, 16, &ai, &bi, dims)?, &matmul_ref(&ai, &bi, dims.0, dims.1, dims.2))?;
    let ad: Vec<f64> = a.iter().map(|v| *v as f64 * 0.5).collect();
    let bd: Vec<f64> = b.iter().map(|v| *v as f64).collect();
    let k = kernel(&m, "matmul_tiled_t::<f64,8>")?;
    exact("matmul_tiled_t::<f64, 8>", &launch_matmul(&k, dev, 8, &ad, &bd, dims)?, &matmul_ref(&ad, &bd, dims.0, dims.1, dims.2))
}

fn conv_ref(x: &[f64], w: &[f64]) -> Vec<f64> {
    let k = w.len();
    (0..x.len()).map(|i| (0..k).filter(|j| i + j >= k / 2 && i + j - k / 2 < x.len()).map(|j| w[j] * x[i + j - k / 2]).sum()).collect()
}

/// generic_conv1d.rs: `conv1d::<f32, 3>`, `conv1d::<f64, 5>` and the tiled version with a
/// halo of `K - 1` (`conv1d_tiled::<f32, 7>`, `conv1d_tiled::<f16, 3>`).
pub fn generic_conv1d(dev: &Device) -> Outcome {
    let m = module("generic_conv1d.rs")?;
    let n = 300;
    let x: Vec<f64> = (0..n).map(|i| (rnd(i as u64) % 11) as f64 - 5.0).collect();
    let g = Grid::linear(n, 64);
    for (name, w) in [("conv1d::<f32, 3>", vec![1.0, -2.0, 1.0]), ("conv1d_tiled::<f32, 7>", vec![0.5, 1.0, 2.0, 4.0, 2.0, 1.0, 0.5])] {
        let k = kernel(&m, name)?;
        let mut y = zeros::<f32>(dev, &[n])?;
        let f = |v: &Vec<f64>| v.iter().map(|q| *q as f32).collect::<Vec<_>>();
        run(&k, dev, g, (&up(dev, &f(&x))?, &up(dev, &f(&w))?, &mut y))?;
        exact(name, &dl(&y)?, &f(&conv_ref(&x, &w)))?;
    }
    let w = vec![1.0, 2.0, 3.0, 2.0, 1.0];
    let k = kernel(&m, "conv1d::<f64, 5>")?;
    let mut y = zeros::<f64>(dev, &[n])?;
    run(&k, dev, g, (&up(dev, &x)?, &up(dev, &w)?, &mut y))?;
    exact("conv1d::<f64, 5>", &dl(&y)?, &conv_ref(&x, &w))?;
    let w = vec![1.0, 2.0, 1.0];
    let k = kernel(&m, "conv1d_tiled::<f16, 3>")?;
    let mut y = zeros::<f16>(dev, &[n])?;
    let f = |v: &Vec<f64>| v.iter().map(|q| h(*q)).collect::<Vec<_>>();
    run(&k, dev, g, (&up(dev, &f(&x))?, &up(dev, &f(&w))?, &mut y))?;
    exact("conv1d_tiled::<f16, 3>", &dl(&y)?, &f(&conv_ref(&x, &w)))
}

/// generic_bits.rs: the mixing step, bit counts and parity masks over `u32`, `i8` and `u64`.
pub fn generic_bits(dev: &Device) -> Outcome {
    let m = module("generic_bits.rs")?;
    let n = 200;
    let g = Grid::linear(n, 64);
    let mix = kernel(&m, "mix")?;
    let ones = kernel(&m, "ones")?;
    let parity = kernel(&m, "parity_mask")?;
    macro_rules! check {
        ($t:ty, $s:expr) => {{
            let x: Vec<$t> = (0..n).map(|i| rnd(i as u64 * 3) as $t).collect();
            let t = stringify!($t);
            let mut d = up(dev, &x)?;
            run(&mix, dev, g, (&mut d, $s as u32))?;
            let bits = <$t>::BITS;
            let want: Vec<$t> = x.iter().map(|v| v.wrapping_shl($s) ^ v.wrapping_shr(bits - $s) ^ (!*v & (*v | 1))).collect();
            eq(&format!("mix::<{t}>"), &dl(&d)?, &want)?;
            let mut c = zeros::<u32>(dev, &[n])?;
            run(&ones, dev, g, (&up(dev, &x)?, &mut c))?;
            eq(&format!("ones::<{t}>"), &dl(&c)?, &x.iter().map(|v| v.count_ones()).collect::<Vec<_>>())?;
            let mut p = zeros::<$t>(dev, &[n])?;
            run(&parity, dev, g, (&up(dev, &x)?, &mut p))?;
            eq(
                &format!("parity_mask::<{t}>"),
                &dl(&p)?,
                &x.iter().map(|v| if v.count_ones() % 2 == 1 { <$t>::MAX } else { 0 }).collect::<Vec<_>>(),
            )?;
        }};
    }
    check!(u32, 5);
    check!(i8, 3);
    check!(u64, 17);
    made(&mix, &["mix::<u32>", "mix::<i8>", "mix::<u64>"])
}

/// generic_dot.rs: dot products whose accumulator type is inferred from the output array
/// (`dot::<i8, i32>`, `dot::<u8, u32>`) and one named (`dot::<f32, f64>`).
pub fn generic_dot(dev: &Device) -> Outcome {
    let m = module("generic_dot.rs")?;
    const B: usize = 64;
    let n = 1000;
    let g = Grid::linear(n, B as u32);
    let nb = n.div_ceil(B);
    let dot = kernel(&m, "dot")?;
    let a: Vec<i8> = (0..n).map(|i| rnd(i as u64) as i8).collect();
    let c: Vec<i8> = (0..n).map(|i| rnd(i as u64 + 1) as i8).collect();
    let mut p = zeros::<i32>(dev, &[nb])?;
    run(&dot, dev, g, (&up(dev, &a)?, &up(dev, &c)?, &mut p))?;
    let prods: Vec<i32> = a.iter().zip(&c).map(|(x, y)| *x as i32 * *y as i32).collect();
    eq("dot::<i8, i32>", &dl(&p)?, &block_reduce(&prods, B, 0, |s, v| s + v))?;
    let a: Vec<u8> = (0..n).map(|i| rnd(i as u64) as u8).collect();
    let mut p = zeros::<u32>(dev, &[nb])?;
    run(&dot, dev, g, (&up(dev, &a)?, &up(dev, &a)?, &mut p))?;
    let prods: Vec<u32> = a.iter().map(|x| *x as u32 * *x as u32).collect();
    eq("dot::<u8, u32>", &dl(&p)?, &block_reduce(&prods, B, 0, |s, v| s + v))?;
    made(&dot, &["dot::<i8, i32>", "dot::<u8, u32>"])?;
    let named = kernel(&m, "dot::<f32, f64>")?;
    let x: Vec<f32> = (0..n).map(|i| (rnd(i as u64) % 2001) as f32 * 0.5 - 500.0).collect();
    let mut p = zeros::<f64>(dev, &[nb])?;
    run(&named, dev, g, (&up(dev, &x)?, &up(dev, &x)?, &mut p))?;
    let prods: Vec<f64> = x.iter().map(|v| *v as f64 * *v as f64).collect();
    exact("dot::<f32, f64>", &dl(&p)?, &block_reduce(&prods, B, 0.0, |s, v| s + v))
}

/// generic_device_calls.rs: generic device functions (inferred, turbofish, `where`, a const
/// parameter) from a generic kernel over `f32` and `f64`, and from a kernel that is not generic.
pub fn generic_device_calls(dev: &Device) -> Outcome {
    let m = module("generic_device_calls.rs")?;
    let n = 100;
    let g = Grid::linear(n, 32);
    let x: Vec<f64> = (0..n).map(|i| (i % 9) as f64 * 0.5 - 2.0).collect();
    let win = |v: &[f64], i: usize, w: usize| (0..w).filter(|k| i + k < v.len()).map(|k| v[i + k]).sum::<f64>();
    let want: Vec<f64> = (0..n)
        .map(|i| {
            (x[i] + (x[i] * x[i] - x[i]) * 0.5) + win(&x, i, 3) + (0..2).filter(|k| i + k < n).map(|k| x[i + k] * x[i + k]).sum::<f64>()
        })
        .collect();
    let k = kernel(&m, "device_calls")?;
    let mut o = zeros::<f64>(dev, &[n])?;
    run(&k, dev, g, (&up(dev, &x)?, &mut o))?;
    exact("device_calls::<f64>", &dl(&o)?, &want)?;
    let mut o = zeros::<f32>(dev, &[n])?;
    run(&k, dev, g, (&up(dev, &x.iter().map(|v| *v as f32).collect::<Vec<_>>())?, &mut o))?;
    exact("device_calls::<f32>", &dl(&o)?, &want.iter().map(|v| *v as f32).collect::<Vec<_>>())?;

    let xi: Vec<i32> = (0..n).map(|i| i as i32 - 50).collect();
    let mut oi = zeros::<i32>(dev, &[n])?;
    let mut of = zeros::<f64>(dev, &[n])?;
    run(&kernel(&m, "concrete_calls")?, dev, g, (&up(dev, &xi)?, &up(dev, &x)?, &mut oi, &mut of))?;
    let wi: Vec<i32> = (0..n).map(|i| xi[i] * xi[i] + (0..4).filter(|k| i + k < n).map(|k| xi[i + k]).sum::<i32>()).collect();
    eq("concrete_calls (i32)", &dl(&oi)?, &wi)?;
    let wf: Vec<f64> = (0..n).map(|i| x[i] * x[i] + (1.0 + (2.0 - 1.0) * x[i]) + win(&x, i, 2)).collect();
    exact("concrete_calls (f64)", &dl(&of)?, &wf)
}
