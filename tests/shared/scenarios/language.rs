//! Scenarios: the language Rust users expect (`cache-fixtures/kernels/lang_*.rs`): one per
//! feature (traits, operator traits, generic structs in shared memory, `Option` with `?`,
//! closures with state), each compared with the same computation written in plain Rust here.
//! Inputs are small integers and eighths, so the float results are exact.

use kache::{Device, Grid};

use super::helpers::*;

const N: usize = 200;

fn xs() -> Vec<f32> {
    (0..N).map(|i| ((i * 37) % 101) as f32 * 0.125 - 3.0).collect()
}

fn xi() -> Vec<i32> {
    (0..N).map(|i| ((i * 37) % 101) as i32 - 50).collect()
}

/// lang_traits.rs `activations`: trait methods of unit structs, a struct and an enum, through a
/// generic function bounded by the trait.
pub fn lang_traits(dev: &Device) -> Outcome {
    let m = module("lang_traits.rs")?;
    let x = xs();
    let mut out = zeros::<f32>(dev, &[N])?;
    launch(&m, "activations", dev, Grid::linear(N, 64), (&up(dev, &x)?, &mut out))?;
    let relu = |v: f32| if v > 0.0 { v } else { 0.0 };
    let leaky = |v: f32, s: f32| if v > 0.0 { v } else { s * v };
    let want: Vec<f32> = (0..N)
        .map(|i| {
            let mode = if i % 3 == 0 { relu(x[i]) } else { leaky(x[i], 0.25) };
            relu(x[i] * 2.0 + 0.5) + leaky(x[i] * -1.5 + 0.5, 0.1) + mode
        })
        .collect();
    exact("activations", &dl(&out)?, &want)
}

/// lang_ops.rs `mandelbrot`: `z = z * z + c` through `impl Mul` and `impl Add` of a `Complex`.
pub fn lang_operators(dev: &Device) -> Outcome {
    let m = module("lang_ops.rs")?;
    let x = xs();
    let mut out = zeros::<f32>(dev, &[N])?;
    launch(&m, "mandelbrot", dev, Grid::linear(N, 64), (&up(dev, &x)?, &mut out))?;
    let want: Vec<f32> = x
        .iter()
        .map(|&v| {
            let (cr, ci) = (v * 0.5, 0.25f32);
            let (mut zr, mut zi) = (0.0f32, 0.0f32);
            let mut n = 0;
            while n < 64 && zr * zr + zi * zi <= 4.0 {
                let (r, i) = (zr * zr - zi * zi, zr * zi + zi * zr);
                (zr, zi) = (r + cr, i + ci);
                n += 1;
            }
            n as f32
        })
        .collect();
    exact("mandelbrot", &dl(&out)?, &want)
}

/// lang_generic_structs.rs `shared_ranges`: a `Range<f32>` per thread in shared memory, read
/// by a neighbour after the barrier, its generic methods called there.
pub fn lang_generic_structs(dev: &Device) -> Outcome {
    let m = module("lang_generic_structs.rs")?;
    let x = xs();
    let n = 128;
    let mut out = zeros::<f32>(dev, &[n])?;
    launch(&m, "shared_ranges", dev, Grid::linear(n, 32), (&up(dev, &x)?, &mut out))?;
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let t = i % 32;
            let j = i - t + (t + 1) % 32;
            let v = x[j % x.len()];
            let (lo, hi) = if v < 0.0 { (v, 0.0) } else { (0.0, v) };
            let c = if x[i] < lo {
                lo
            } else if x[i] > hi {
                hi
            } else {
                x[i]
            };
            c + hi - lo
        })
        .collect();
    exact("shared_ranges", &dl(&out)?, &want)
}

/// lang_option.rs `question_mark`: `?` in device functions returning `Option`, matched.
pub fn lang_option(dev: &Device) -> Outcome {
    let m = module("lang_option.rs")?;
    let x = xi();
    let mut out = zeros::<i32>(dev, &[N])?;
    launch(&m, "question_mark", dev, Grid::linear(N, 64), (&up(dev, &x)?, &mut out))?;
    let div = |a: i32, b: i32| if b == 0 { None } else { Some(a / b) };
    let want: Vec<i32> = x
        .iter()
        .map(|&a| {
            let v = div(a, 2).and_then(|h| div(h, if a % 3 == 0 { 0 } else { 3 }).map(|t| h + t));
            v.unwrap_or(-999) + div(100, a).unwrap_or(0)
        })
        .collect();
    eq("question_mark", &dl(&out)?, &want)
}

/// lang_closures.rs `stateful`: a `move` closure that counts, closures passed to a generic
/// function and composed.
pub fn lang_closures(dev: &Device) -> Outcome {
    let m = module("lang_closures.rs")?;
    let x = xi();
    let mut out = zeros::<i32>(dev, &[N])?;
    launch(&m, "stateful", dev, Grid::linear(N, 64), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = x
        .iter()
        .map(|&base| {
            let (a, b) = (base + 1, base + 2);
            a * 10 + b + -(3 + base) + (b * 3 + base)
        })
        .collect();
    eq("stateful", &dl(&out)?, &want)
}
