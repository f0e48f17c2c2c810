//! Device-generic semantic scenarios over the kernel corpus (`cache-fixtures/kernels/`).
//!
//! Each scenario loads corpus kernels, runs them on the given device and compares every
//! result with a plain Rust reference computed here: exact equality for integers, bools and
//! float results that are exactly representable (the inputs are chosen so that they are), a
//! small tolerance where transcendental functions are involved.
//!
//! Included by `tests/it/semantics.rs` (host backend) and `tests/gpu.rs` (CUDA), next to
//! `foreign.rs` (as the sibling module `foreign`).
#![allow(dead_code)]

use std::fmt::{Debug, Display};
use std::path::PathBuf;

use kache::{Device, DeviceArray, Element, Grid, KernelArgs, Module, Order};

use super::foreign::ForeignArray;

/// What a scenario returns: `Err` with a message that says what differed.
pub type Outcome = Result<(), String>;

/// Every scenario, by name.
pub const ALL: &[(&str, fn(&Device) -> Result<(), String>)] = &[
    ("saxpy", saxpy),
    ("vector_add_ints", vector_add_ints),
    ("reduce_shared", reduce_shared),
    ("reduce_dynamic_shared", reduce_dynamic_shared),
    ("matmul_2d", matmul_2d),
    ("stencil_3d", stencil_3d),
    ("histogram_atomics", histogram_atomics),
    ("atomics_minmax", atomics_minmax),
    ("atomic_cas_lock", atomic_cas_lock),
    ("casts", casts),
    ("operators", operators),
    ("compound_assign", compound_assign),
    ("float_remainder", float_remainder),
    ("control_flow", control_flow),
    ("inclusive_and_stepped_ranges_at_type_max", inclusive_and_stepped_ranges_at_type_max),
    ("device_functions", device_functions),
    ("consts_statics", consts_statics),
    ("type_inference", type_inference),
    ("math_f32", math_f32),
    ("math_f64", math_f64),
    ("int_methods", int_methods),
    ("thread_indices", thread_indices),
    ("array_0d", array_0d),
    ("array_shapes_strides", array_shapes_strides),
    ("transpose", transpose),
    ("prefix_scan", prefix_scan),
    ("bool_mask", bool_mask),
    ("collatz", collatz),
    ("mandelbrot", mandelbrot),
    ("softmax_rows", softmax_rows),
    ("bitonic_sort", bitonic_sort),
    ("gather_scatter", gather_scatter),
    ("conv1d", conv1d),
    ("grid_stride", grid_stride),
    ("sparse_csr", sparse_csr),
    ("float_special", float_special),
    ("polynomial_horner", polynomial_horner),
    ("rng_xorshift", rng_xorshift),
    ("scopes_shadowing", scopes_shadowing),
    ("nbody", nbody),
    ("shared_device_functions", shared_device_functions),
    ("layout_specialised_calls", layout_specialised_calls),
    ("ranges_signed", ranges_signed),
    ("float_edge_cases", float_edge_cases),
    ("many_params", many_params),
    ("precedence_literals", precedence_literals),
    ("foreign_arrays", foreign_arrays),
    // Device functions named like another plus digits (norm, norm2): NVPTX linking once merged
    // them, and the kernel recursed until it faulted on the GPU.
    ("device_function_names_with_digit_suffix", device_function_names_with_digit_suffix),
];

// ---------------------------------------------------------------------------------------------
// Helpers

/// The repository root (`KACHE_TEST_ROOT` when set, for binaries run elsewhere).
pub fn root() -> PathBuf {
    std::env::var_os("KACHE_TEST_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The corpus folder.
pub fn kernels_dir() -> PathBuf {
    root().join("cache-fixtures").join("kernels")
}

trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// Loads a corpus file into a fresh in-memory JIT.
fn module(file: &str) -> Result<Module, String> {
    let jit = kache::Jit::new(kache::Config::in_memory()).ctx("creating the JIT")?;
    jit.load_file(kernels_dir().join(file)).ctx(&format!("loading {file}"))
}

fn launch(m: &Module, name: &str, dev: &Device, grid: Grid, args: impl KernelArgs) -> Outcome {
    let k = m.kernel(name).ctx(&format!("kernel {name}"))?;
    k.launch(dev, grid, args).ctx(&format!("launching {name}"))
}

fn up<T: Element>(dev: &Device, data: &[T]) -> Result<DeviceArray<T>, String> {
    dev.upload(data).ctx("upload")
}

fn up_nd<T: Element>(dev: &Device, data: &[T], shape: &[usize]) -> Result<DeviceArray<T>, String> {
    dev.upload_nd(data, shape, Order::C).ctx("upload_nd")
}

fn zeros<T: Element>(dev: &Device, shape: &[usize]) -> Result<DeviceArray<T>, String> {
    dev.alloc::<T>(shape).ctx("alloc")
}

fn dl<T: Element>(a: &DeviceArray<T>) -> Result<Vec<T>, String> {
    a.download().ctx("download")
}

/// C-order (row-major) strides in elements.
fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of linear C-order position `k`.
fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = k % shape[d];
        k /= shape[d];
    }
    idx
}

/// `c_data` (logical C order) rearranged into column-major memory order.
fn to_f_order<T: Copy>(c_data: &[T], shape: &[usize]) -> Vec<T> {
    let mut f_strides = vec![1; shape.len()];
    for d in 1..shape.len() {
        f_strides[d] = f_strides[d - 1] * shape[d - 1];
    }
    let mut out = c_data.to_vec();
    for (k, v) in c_data.iter().enumerate() {
        let idx = unravel(k, shape);
        let at: usize = idx.iter().zip(&f_strides).map(|(i, s)| i * s).sum();
        out[at] = *v;
    }
    out
}

/// An F-order (column-major) array holding `c_data` (given in logical C order).
fn up_f<T: Element>(dev: &Device, c_data: &[T], shape: &[usize]) -> Result<DeviceArray<T>, String> {
    let a = dev.upload_nd(&to_f_order(c_data, shape), shape, Order::F).ctx("upload_nd (F)")?;
    if a.layout() != kache::Layout::F && shape.iter().filter(|d| **d > 1).count() > 1 {
        return Err(format!("an F-order upload of shape {shape:?} has layout {}", a.layout()));
    }
    Ok(a)
}

/// A strided view (layout A) holding `c_data`, inside a larger 1-d buffer filled with `fill`:
/// the last stride is 2 and every other stride leaves a gap of one element. Returns the view
/// and the whole buffer (to check that nothing outside the view was written).
fn up_strided<T: Element>(
    dev: &Device,
    c_data: &[T],
    shape: &[usize],
    fill: T,
) -> Result<(DeviceArray<T>, DeviceArray<T>, Vec<usize>), String> {
    let nd = shape.len();
    let mut strides = vec![2usize; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1] + 1;
    }
    let offset = 3;
    let span = offset + shape.iter().zip(&strides).map(|(n, s)| (n - 1) * s).sum::<usize>() + 4;
    let mut buf = vec![fill; span];
    let mut positions = Vec::with_capacity(c_data.len());
    for (k, v) in c_data.iter().enumerate() {
        let idx = unravel(k, shape);
        let at = offset + idx.iter().zip(&strides).map(|(i, s)| i * s).sum::<usize>();
        buf[at] = *v;
        positions.push(at);
    }
    let base = up(dev, &buf)?;
    let view = base.view(offset, shape, &strides).ctx("view")?;
    if view.layout() != kache::Layout::A {
        return Err(format!("a strided view of shape {shape:?} has layout {}", view.layout()));
    }
    Ok((view, base, positions))
}

/// Checks that a buffer holds `fill` everywhere except at `positions`.
fn untouched<T: Element>(what: &str, base: &DeviceArray<T>, positions: &[usize], fill: T) -> Outcome {
    let all = dl(base)?;
    for (k, v) in all.iter().enumerate() {
        if !positions.contains(&k) && *v != fill {
            return Err(format!("{what}: element {k} of the buffer outside the view was overwritten with {v:?}"));
        }
    }
    Ok(())
}

/// The message for elements that differ: how many, and the first few with their values.
fn mismatches<T: Debug>(what: &str, got: &[T], want: &[T], bad: &[usize], note: &str) -> Outcome {
    if bad.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = bad.iter().take(5).map(|&i| format!("[{i}] got {:?}, expected {:?}", got[i], want[i])).collect();
    Err(format!(
        "{what}: {} of {} elements differ{note}: {}{}",
        bad.len(),
        got.len(),
        shown.join("; "),
        if bad.len() > 5 { "; ..." } else { "" }
    ))
}

fn eq<T: PartialEq + Debug>(what: &str, got: &[T], want: &[T]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: got {} elements, expected {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    mismatches(what, got, want, &bad, "")
}

/// Floats: NaN matches NaN, infinities must match exactly, others within `abs + rel * |want|`.
fn close<T: Copy + Into<f64> + Debug>(what: &str, got: &[T], want: &[T], rel: f64, abs: f64) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: got {} elements, expected {}", got.len(), want.len()));
    }
    let ok = |g: f64, w: f64| {
        if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= abs + rel * w.abs()
        }
    };
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !ok(got[i].into(), want[i].into())).collect();
    mismatches(what, got, want, &bad, &format!(" (tolerance: rel {rel}, abs {abs})"))
}

/// Exact float comparison (NaN matches NaN; 0.0 and -0.0 are told apart).
fn exact<T: Copy + Into<f64> + Debug>(what: &str, got: &[T], want: &[T]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: got {} elements, expected {}", got.len(), want.len()));
    }
    let same = |g: f64, w: f64| (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative());
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(got[i].into(), want[i].into())).collect();
    mismatches(what, got, want, &bad, "")
}

/// Column `c` of a row-major matrix with `cols` columns.
fn column<T: Copy>(m: &[T], cols: usize, c: usize) -> Vec<T> {
    m.iter().skip(c).step_by(cols).copied().collect()
}

/// A deterministic pseudo-random number (splitmix64 of `i`).
fn rnd(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// A pseudo-random float in [lo, hi).
fn rndf(i: u64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((rnd(i) >> 11) as f64 / (1u64 << 53) as f64)
}

fn blocks(n: usize, b: usize) -> u32 {
    n.div_ceil(b) as u32
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// saxpy.rs: element-wise f32 and f64 with a size that is not a multiple of the block.
pub fn saxpy(dev: &Device) -> Outcome {
    let m = module("saxpy.rs")?;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let xd = up(dev, &x)?;
    let mut yd = up(dev, &y0)?;
    launch(&m, "saxpy", dev, Grid::linear(n, 128), (2.5f32, &xd, &mut yd))?;
    let want: Vec<f32> = (0..n).map(|i| 2.5 * x[i] + y0[i]).collect();
    exact("saxpy", &dl(&yd)?, &want)?;

    let n = 777;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 100.0).collect();
    let y0: Vec<f64> = (0..n).map(|i| (i * i % 1000) as f64).collect();
    let xd = up(dev, &x)?;
    let mut yd = up(dev, &y0)?;
    launch(&m, "daxpy", dev, Grid::linear(n, 64), (-3.0f64, &xd, &mut yd))?;
    let want: Vec<f64> = (0..n).map(|i| (-3.0f64).mul_add(x[i], y0[i])).collect();
    exact("daxpy", &dl(&yd)?, &want)
}

/// vector_add_ints.rs: wrapping arithmetic on every integer type.
pub fn vector_add_ints(dev: &Device) -> Outcome {
    let m = module("vector_add_ints.rs")?;
    let n = 300;
    let g = Grid::linear(n, 64);

    let a: Vec<i32> = (0..n).map(|i| i32::MAX - i as i32).collect();
    let b: Vec<i32> = (0..n).map(|i| i as i32 * 7 - 50).collect();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "add_i32", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("add_i32", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_add(b[i])).collect::<Vec<_>>())?;

    let a: Vec<i64> = (0..n).map(|i| i64::MIN + i as i64).collect();
    let b: Vec<i64> = (0..n).map(|i| (i * i) as i64 - 1000).collect();
    let mut out = zeros::<i64>(dev, &[n])?;
    launch(&m, "sub_i64", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("sub_i64", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_sub(b[i])).collect::<Vec<_>>())?;

    let a: Vec<u32> = (0..n).map(|i| 0x10001u32.wrapping_mul(i as u32)).collect();
    let b: Vec<u32> = (0..n).map(|i| 0xFFFF + i as u32).collect();
    let mut out = zeros::<u32>(dev, &[n])?;
    launch(&m, "mul_u32", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("mul_u32", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(b[i])).collect::<Vec<_>>())?;

    let a: Vec<u64> = (0..n).map(|i| u64::MAX - i as u64 * 12345).collect();
    let b: Vec<u64> = (0..n).map(|i| i as u64 + 2).collect();
    let mut out = zeros::<u64>(dev, &[n])?;
    launch(&m, "fma_u64", dev, g, (&up(dev, &a)?, &up(dev, &b)?, 12345u64, &mut out))?;
    eq("fma_u64", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(b[i]).wrapping_add(12345)).collect::<Vec<_>>())?;

    let mut out = zeros::<usize>(dev, &[n])?;
    launch(&m, "iota_usize", dev, g, (17usize, &mut out))?;
    eq("iota_usize", &dl(&out)?, &(0..n).map(|i| i * 3 + 17).collect::<Vec<_>>())
}

/// reduce_shared.rs: multi-block shared-memory reductions (partials, atomics into a 1-d and a
/// 0-d array, a grid smaller than the data).
pub fn reduce_shared(dev: &Device) -> Outcome {
    let m = module("reduce_shared.rs")?;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let nb = blocks(n, 128) as usize;
    let mut partials = zeros::<f32>(dev, &[nb])?;
    let mut total = zeros::<f32>(dev, &[1])?;
    launch(&m, "block_sum_f32", dev, Grid::linear(n, 128), (&up(dev, &x)?, &mut partials, &mut total))?;
    let want: Vec<f32> = x.chunks(128).map(|c| c.iter().sum()).collect();
    exact("block_sum_f32 partials", &dl(&partials)?, &want)?;
    exact("block_sum_f32 total", &dl(&total)?, &[x.iter().sum::<f32>()])?;

    let n = 5000;
    let x: Vec<i64> = (0..n).map(|i| (i as i64 - 2500) * 1_000_003).collect();
    let mut total = dev.upload_scalar(7i64).ctx("upload_scalar")?;
    // 3 blocks of 128 threads for 5000 elements: the kernel's grid-stride loop covers the rest.
    launch(&m, "block_sum_i64", dev, Grid::new(3u32, 128u32), (&up(dev, &x)?, &mut total))?;
    eq("block_sum_i64", &dl(&total)?, &[7 + x.iter().sum::<i64>()])?;

    let n = 777;
    let x: Vec<i32> = (0..n).map(|i| (rnd(i as u64) % 2_000_000) as i32 - 1_000_000).collect();
    let mut out = up(dev, &[i32::MIN])?;
    launch(&m, "block_max_i32", dev, Grid::linear(n, 128), (&up(dev, &x)?, &mut out))?;
    eq("block_max_i32", &dl(&out)?, &[*x.iter().max().unwrap()])
}

/// reduce_dynamic_shared.rs: dynamic shared memory sized at launch, two block sizes.
pub fn reduce_dynamic_shared(dev: &Device) -> Outcome {
    let m = module("reduce_dynamic_shared.rs")?;
    let n = 500;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 17.0).collect();
    let xd = up(dev, &x)?;
    for block in [64usize, 128] {
        let nb = blocks(n, block) as usize;
        let mut partials = zeros::<f64>(dev, &[nb])?;
        let grid = Grid::linear(n, block as u32).with_shared_mem((block * 8) as u32);
        launch(&m, "dyn_block_sum_f64", dev, grid, (&xd, &mut partials))?;
        let want: Vec<f64> = x.chunks(block).map(|c| c.iter().sum()).collect();
        exact(&format!("dyn_block_sum_f64 (block {block})"), &dl(&partials)?, &want)?;
    }

    let n = 150;
    let x: Vec<i32> = (0..n).map(|i| i as i32 * 3 - 7).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "dyn_reverse_blocks", dev, Grid::linear(n, 32).with_shared_mem(32 * 4), (&mut xd,))?;
    let want: Vec<i32> = x.chunks(32).flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>()).collect();
    eq("dyn_reverse_blocks", &dl(&xd)?, &want)?;

    let mut out = zeros::<i32>(dev, &[16])?;
    launch(&m, "dyn_aliases", dev, Grid::linear(16, 16).with_shared_mem(16 * 4), (&mut out,))?;
    let mut want: Vec<i32> = (0..16).map(|t| t * 2).collect();
    want[0] = 16;
    eq("dyn_aliases", &dl(&out)?, &want)
}

fn matmul_ref<T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    n: usize,
    k: usize,
    p: usize,
) -> Vec<T> {
    let mut c = vec![T::default(); n * p];
    for i in 0..n {
        for j in 0..p {
            let mut s = T::default();
            for l in 0..k {
                s = s + a[i * k + l] * b[l * p + j];
            }
            c[i * p + j] = s;
        }
    }
    c
}

/// matmul_2d.rs: 2-d launches with C, F and strided inputs; shared-memory tiles.
pub fn matmul_2d(dev: &Device) -> Outcome {
    let m = module("matmul_2d.rs")?;
    let (n, k, p) = (13, 7, 10);
    let a: Vec<f32> = (0..n * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * p).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
    let want = matmul_ref(&a, &b, n, k, p);
    let grid = Grid::new((blocks(p, 8), blocks(n, 8)), (8u32, 8u32));

    let mut c = zeros::<f32>(dev, &[n, p])?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut c))?;
    exact("matmul (C, C)", &dl(&c)?, &want)?;

    let af = up_f(dev, &a, &[n, k])?;
    let (bv, bbase, bpos) = up_strided(dev, &b, &[k, p], -99.0f32)?;
    let mut c = zeros::<f32>(dev, &[n, p])?;
    launch(&m, "matmul", dev, grid, (&af, &bv, &mut c))?;
    exact("matmul (F, strided)", &dl(&c)?, &want)?;
    untouched("matmul read-only strided input", &bbase, &bpos, -99.0f32)?;

    // Output in F order and as a strided view.
    let mut cf = dev.alloc_with_order::<f32>(&[n, p], Order::F).ctx("alloc F")?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut cf))?;
    exact("matmul (F output)", &dl(&cf)?, &want)?;
    let (mut cv, cbase, cpos) = up_strided(dev, &vec![0.0f32; n * p], &[n, p], 5.5f32)?;
    launch(&m, "matmul", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_nd(dev, &b, &[k, p])?, &mut cv))?;
    exact("matmul (strided output)", &dl(&cv)?, &want)?;
    untouched("matmul strided output", &cbase, &cpos, 5.5f32)?;

    let (n, k, p) = (17, 9, 11);
    let a: Vec<f64> = (0..n * k).map(|i| ((i * 5) % 9) as f64 - 4.0).collect();
    let b: Vec<f64> = (0..k * p).map(|i| ((i * 2) % 11) as f64 * 0.5).collect();
    let mut c = zeros::<f64>(dev, &[n, p])?;
    let grid = Grid::new((blocks(p, 8), blocks(n, 8)), (8u32, 8u32));
    launch(&m, "matmul_tiled", dev, grid, (&up_nd(dev, &a, &[n, k])?, &up_f(dev, &b, &[k, p])?, &mut c))?;
    exact("matmul_tiled", &dl(&c)?, &matmul_ref(&a, &b, n, k, p))?;

    let (r, cols) = (37, 11);
    let mm: Vec<i64> = (0..r * cols).map(|i| (rnd(i as u64) % 2001) as i64 - 1000).collect();
    let x: Vec<i64> = (0..cols).map(|i| i as i64 * 3 - 10).collect();
    let mut y = zeros::<i64>(dev, &[r])?;
    launch(&m, "matvec_i64", dev, Grid::linear(r, 16), (&up_nd(dev, &mm, &[r, cols])?, &up(dev, &x)?, &mut y))?;
    eq("matvec_i64", &dl(&y)?, &matmul_ref(&mm, &x, r, cols, 1))
}

/// stencil_3d.rs: 3-d launches over 3-d arrays (C input, then F input for the integer box sum).
pub fn stencil_3d(dev: &Device) -> Outcome {
    let m = module("stencil_3d.rs")?;
    let (ni, nj, nk) = (5, 6, 7);
    let u: Vec<f32> = (0..ni * nj * nk)
        .map(|q| {
            let [i, j, k] = [q / (nj * nk), (q / nk) % nj, q % nk];
            (i * j + k * k) as f32 * 0.5
        })
        .collect();
    let at = |i: usize, j: usize, k: usize| u[(i * nj + j) * nk + k];
    let mut out = zeros::<f32>(dev, &[ni, nj, nk])?;
    let grid = Grid::new((blocks(nk, 4), blocks(nj, 4), blocks(ni, 2)), (4u32, 4u32, 2u32));
    launch(&m, "laplacian_7pt", dev, grid, (&up_nd(dev, &u, &[ni, nj, nk])?, &mut out, 0.25f32))?;
    let mut want = vec![0.0f32; u.len()];
    for i in 1..ni - 1 {
        for j in 1..nj - 1 {
            for k in 1..nk - 1 {
                let s = at(i - 1, j, k) + at(i + 1, j, k) + at(i, j - 1, k) + at(i, j + 1, k) + at(i, j, k - 1) + at(i, j, k + 1);
                want[(i * nj + j) * nk + k] = (s - 6.0 * at(i, j, k)) * 0.25;
            }
        }
    }
    exact("laplacian_7pt", &dl(&out)?, &want)?;

    let (ni, nj, nk) = (4, 5, 6);
    let u: Vec<i32> = (0..ni * nj * nk).map(|q| (rnd(q as u64) % 100) as i32 - 50).collect();
    let mut out = zeros::<i32>(dev, &[ni, nj, nk])?;
    let grid = Grid::new((blocks(nk, 4), blocks(nj, 4), blocks(ni, 2)), (4u32, 4u32, 2u32));
    launch(&m, "box_sum_i32", dev, grid, (&up_f(dev, &u, &[ni, nj, nk])?, &mut out))?;
    let mut want = vec![0i32; u.len()];
    for i in 0..ni as i64 {
        for j in 0..nj as i64 {
            for k in 0..nk as i64 {
                let mut s = 0;
                for di in -1..=1 {
                    for dj in -1..=1 {
                        for dk in -1..=1 {
                            let (a, b, c) = (i + di, j + dj, k + dk);
                            if a >= 0 && b >= 0 && c >= 0 && a < ni as i64 && b < nj as i64 && c < nk as i64 {
                                s += u[((a as usize) * nj + b as usize) * nk + c as usize];
                            }
                        }
                    }
                }
                want[((i as usize) * nj + j as usize) * nk + k as usize] = s;
            }
        }
    }
    eq("box_sum_i32", &dl(&out)?, &want)
}

/// histogram_atomics.rs: contended atomic adds on u32, i64, f64 and u64 (shared then global).
pub fn histogram_atomics(dev: &Device) -> Outcome {
    let m = module("histogram_atomics.rs")?;
    let n = 5000;
    let values: Vec<u32> = (0..n).map(|i| (i * i + 3) as u32).collect();
    let mut bins = zeros::<u32>(dev, &[7])?;
    launch(&m, "histogram_u32", dev, Grid::linear(n, 128), (&up(dev, &values)?, &mut bins))?;
    let mut want = vec![0u32; 7];
    for v in &values {
        want[*v as usize % 7] += 1;
    }
    eq("histogram_u32", &dl(&bins)?, &want)?;

    let n = 3001;
    let values: Vec<i32> = (0..n).map(|i| (i % 25) as i32 - 5).collect();
    let weights: Vec<f64> = (0..n).map(|i| (i % 4) as f64 - 1.0).collect();
    let mut counts = zeros::<i64>(dev, &[6])?;
    let mut sums = zeros::<f64>(dev, &[6])?;
    launch(&m, "histogram_weighted", dev, Grid::linear(n, 256), (&up(dev, &values)?, &up(dev, &weights)?, &mut counts, &mut sums))?;
    let mut wc = vec![0i64; 6];
    let mut ws = vec![0f64; 6];
    for i in 0..n {
        let b = if values[i] < 0 { 0 } else { values[i] as usize % 5 + 1 };
        wc[b] += 1;
        ws[b] += weights[i];
    }
    eq("histogram_weighted counts", &dl(&counts)?, &wc)?;
    exact("histogram_weighted sums", &dl(&sums)?, &ws)?;

    let n = 3000;
    let values: Vec<u32> = (0..n).map(|i| rnd(i as u64) as u32).collect();
    let mut bins = zeros::<u64>(dev, &[16])?;
    launch(&m, "histogram_shared", dev, Grid::linear(n, 128), (&up(dev, &values)?, &mut bins))?;
    let mut want = vec![0u64; 16];
    for v in &values {
        want[(*v & 15) as usize] += 1;
    }
    eq("histogram_shared", &dl(&bins)?, &want)
}

/// atomics_minmax.rs: atomic max/min on every numeric type, atomic add on every type, all
/// threads contending for one element.
pub fn atomics_minmax(dev: &Device) -> Outcome {
    let m = module("atomics_minmax.rs")?;
    let n = 999;
    let g = Grid::linear(n, 128);

    let x: Vec<i32> = (0..n).map(|i| rnd(i as u64) as i32).collect();
    let mut mx = up(dev, &[i32::MIN])?;
    let mut mn = up(dev, &[i32::MAX])?;
    let mut old = zeros::<i32>(dev, &[n])?;
    launch(&m, "minmax_i32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn, &mut old))?;
    let top = *x.iter().max().unwrap();
    eq("minmax_i32 max", &dl(&mx)?, &[top])?;
    eq("minmax_i32 min", &dl(&mn)?, &[*x.iter().min().unwrap()])?;
    for (i, o) in dl(&old)?.iter().enumerate() {
        if *o != i32::MIN && !x.contains(o) {
            return Err(format!("minmax_i32: atomic_max returned {o} to thread {i}, which is neither the initial value nor an input"));
        }
    }
    if !dl(&old)?.contains(&i32::MIN) {
        return Err("minmax_i32: no thread saw the initial value as the old value".into());
    }

    let x: Vec<u32> = (0..n).map(|i| rnd(i as u64 + 1000) as u32).collect();
    let (mut mx, mut mn) = (up(dev, &[0u32])?, up(dev, &[u32::MAX])?);
    launch(&m, "minmax_u32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_u32", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<i64> = (0..n).map(|i| rnd(i as u64 + 2000) as i64).collect();
    let (mut mx, mut mn) = (up(dev, &[i64::MIN])?, up(dev, &[i64::MAX])?);
    launch(&m, "minmax_i64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_i64", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<u64> = (0..n).map(|i| rnd(i as u64 + 3000)).collect();
    let (mut mx, mut mn) = (up(dev, &[0u64])?, up(dev, &[u64::MAX])?);
    launch(&m, "minmax_u64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_u64", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 4000, -1e6, 1e6) as f32).collect();
    let (mut mx, mut mn) = (up(dev, &[f32::MIN])?, up(dev, &[f32::MAX])?);
    launch(&m, "minmax_f32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    let (fmax, fmin) = (x.iter().copied().fold(f32::MIN, f32::max), x.iter().copied().fold(f32::MAX, f32::min));
    exact("minmax_f32", &[dl(&mx)?[0], dl(&mn)?[0]], &[fmax, fmin])?;

    let x: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 5000, -1e300, 1e300)).collect();
    let (mut mx, mut mn) = (up(dev, &[f64::NEG_INFINITY])?, up(dev, &[f64::INFINITY])?);
    launch(&m, "minmax_f64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    let (dmax, dmin) = (x.iter().copied().fold(f64::MIN, f64::max), x.iter().copied().fold(f64::MAX, f64::min));
    exact("minmax_f64", &[dl(&mx)?[0], dl(&mn)?[0]], &[dmax, dmin])?;

    // Negative floats only: a max/min that compared bit patterns as integers would fail here.
    let x: Vec<f32> = (0..200).map(|i| -1.0 - i as f32 * 0.5).collect();
    let (mut mx, mut mn) = (up(dev, &[f32::NEG_INFINITY])?, up(dev, &[0.0f32])?);
    launch(&m, "minmax_f32", dev, Grid::linear(200, 64), (&up(dev, &x)?, &mut mx, &mut mn))?;
    exact("minmax_f32 (negative inputs)", &[dl(&mx)?[0], dl(&mn)?[0]], &[-1.0, -100.5])?;

    let n = 1000;
    let mut si32 = zeros::<i32>(dev, &[1])?;
    let mut su32 = zeros::<u32>(dev, &[1])?;
    let mut si64 = zeros::<i64>(dev, &[1])?;
    let mut su64 = zeros::<u64>(dev, &[1])?;
    let mut sf32 = zeros::<f32>(dev, &[1])?;
    let mut sf64 = zeros::<f64>(dev, &[1])?;
    let mut susize = zeros::<usize>(dev, &[10])?;
    launch(
        &m,
        "add_all_types",
        dev,
        Grid::linear(n, 128),
        (n, &mut si32, &mut su32, &mut si64, &mut su64, &mut sf32, &mut sf64, &mut susize),
    )?;
    eq("add_all_types i32", &dl(&si32)?, &[(0..n as i32).map(|i| i - 50).sum::<i32>()])?;
    eq("add_all_types u32", &dl(&su32)?, &[(0..n as u32).sum::<u32>()])?;
    eq("add_all_types i64", &dl(&si64)?, &[-(0..n as i64).sum::<i64>()])?;
    eq("add_all_types u64", &dl(&su64)?, &[(0..n as u64).fold(0u64, |a, i| a.wrapping_add(i << 33))])?;
    exact("add_all_types f32", &dl(&sf32)?, &[(0..n).map(|i| (i % 7) as f32).sum::<f32>()])?;
    exact("add_all_types f64", &dl(&sf64)?, &[(0..n).map(|i| i as f64 * 0.5).sum::<f64>()])?;
    eq("add_all_types usize", &dl(&susize)?, &[100usize; 10])
}

/// atomic_cas_lock.rs: compare-and-swap loops (counter, float max), slot claiming, every type.
pub fn atomic_cas_lock(dev: &Device) -> Outcome {
    let m = module("atomic_cas_lock.rs")?;
    let n = 700;
    let mut counter = zeros::<u64>(dev, &[1])?;
    let mut tickets = zeros::<u64>(dev, &[n])?;
    launch(&m, "cas_counter", dev, Grid::linear(n, 128), (n, &mut counter, &mut tickets))?;
    eq("cas_counter total", &dl(&counter)?, &[n as u64])?;
    let mut t = dl(&tickets)?;
    t.sort_unstable();
    eq("cas_counter tickets (sorted)", &t, &(0..n as u64).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..500).map(|i| rndf(i, -50.0, 50.0) as f32).collect();
    let mut out = up(dev, &[f32::MIN])?;
    launch(&m, "cas_float_max", dev, Grid::linear(500, 64), (&up(dev, &x)?, &mut out))?;
    exact("cas_float_max", &dl(&out)?, &[x.iter().copied().fold(f32::MIN, f32::max)])?;

    let n = 400;
    let keys: Vec<i32> = (0..n).map(|i| ((i * 7) % 50) as i32).collect();
    let mut owner = up(dev, &vec![-1i32; 64])?;
    let mut won = zeros::<i32>(dev, &[n])?;
    launch(&m, "claim_slots", dev, Grid::linear(n, 64), (&up(dev, &keys)?, &mut owner, &mut won))?;
    let (owner, won) = (dl(&owner)?, dl(&won)?);
    for s in 0..64usize {
        let claimants: Vec<usize> = (0..n).filter(|&i| keys[i] as usize % 64 == s).collect();
        let winners: Vec<usize> = claimants.iter().copied().filter(|&i| won[i] == 1).collect();
        if claimants.is_empty() {
            if owner[s] != -1 {
                return Err(format!("claim_slots: slot {s} nobody claimed has owner {}", owner[s]));
            }
        } else if winners.len() != 1 || owner[s] != winners[0] as i32 {
            return Err(format!("claim_slots: slot {s}: owner {}, winners {winners:?}", owner[s]));
        }
    }
    if won.iter().any(|w| *w != 0 && *w != 1) {
        return Err("claim_slots: `won` holds something other than 0 or 1".into());
    }

    let n = 10;
    let a0: Vec<i64> = (0..n).map(|i| 5 * i as i64).collect();
    let b0: Vec<u32> = (0..n).map(|i| if i % 3 == 0 { i as u32 } else { i as u32 + 1 }).collect();
    let c0: Vec<f64> = (0..n).map(|i| if i % 2 == 1 { 1.5 } else { 0.0 }).collect();
    let (mut a, mut b, mut c) = (up(dev, &a0)?, up(dev, &b0)?, up(dev, &c0)?);
    let mut olds = zeros::<i64>(dev, &[n])?;
    launch(&m, "cas_types", dev, Grid::linear(n, 4), (&mut a, &mut b, &mut c, &mut olds))?;
    eq("cas_types i64", &dl(&a)?, &(0..n).map(|i| if i % 2 == 0 { 100 + i as i64 } else { a0[i] }).collect::<Vec<_>>())?;
    eq("cas_types old values", &dl(&olds)?, &a0)?;
    eq("cas_types u32", &dl(&b)?, &(0..n).map(|i| if b0[i] == i as u32 { 7 } else { b0[i] }).collect::<Vec<_>>())?;
    exact("cas_types f64", &dl(&c)?, &c0.iter().map(|v| if *v == 1.5 { -2.5 } else { *v }).collect::<Vec<_>>())
}

/// casts.rs: every cast kind against Rust's `as`.
pub fn casts(dev: &Device) -> Outcome {
    let m = module("casts.rs")?;
    let a: Vec<i32> = vec![0, 1, -1, 7, -7, i32::MAX, i32::MIN, 123456789, -98765, 0x4000_0000, 255, -256];
    let b: Vec<u64> =
        vec![0, 1, u64::MAX, 1 << 32, (1 << 32) + 5, 0x8000_0000_0000_0000, 0xDEAD_BEEF_CAFE_F00D, 255, 1 << 31, 42, 7, 1 << 63 | 1];
    let n = a.len();
    let g = Grid::linear(n, 8);
    let (mut oi64, mut ou64, mut oi32, mut ou32, mut ous) = (
        zeros::<i64>(dev, &[2 * n])?,
        zeros::<u64>(dev, &[2 * n])?,
        zeros::<i32>(dev, &[2 * n])?,
        zeros::<u32>(dev, &[2 * n])?,
        zeros::<usize>(dev, &[2 * n])?,
    );
    launch(&m, "int_casts", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut oi64, &mut ou64, &mut oi32, &mut ou32, &mut ous))?;
    eq("int_casts -> i64", &dl(&oi64)?, &(0..n).flat_map(|i| [a[i] as i64, b[i] as i64]).collect::<Vec<_>>())?;
    eq("int_casts -> u64", &dl(&ou64)?, &(0..n).flat_map(|i| [a[i] as u64, (a[i] as u32) as u64]).collect::<Vec<_>>())?;
    eq("int_casts -> i32", &dl(&oi32)?, &(0..n).flat_map(|i| [b[i] as i32, (a[i] as u32 >> 1) as i32]).collect::<Vec<_>>())?;
    eq("int_casts -> u32", &dl(&ou32)?, &(0..n).flat_map(|i| [a[i] as u32, b[i] as u32]).collect::<Vec<_>>())?;
    eq("int_casts -> usize", &dl(&ous)?, &(0..n).flat_map(|i| [a[i] as usize, (b[i] as usize) >> 3]).collect::<Vec<_>>())?;

    let f: Vec<f32> = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        1e20,
        -1e20,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        16777217.0,
        0.1,
        -0.9,
        4294967296.0,
        3.999,
    ];
    let d: Vec<f64> = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        1e300,
        -1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        4294967295.7,
        0.1,
        1e-300,
        9.3e18,
        1.8446744073709552e19,
    ];
    let n = f.len();
    let g = Grid::linear(n, 8);
    let (mut of32, mut of64) = (zeros::<f32>(dev, &[3 * n])?, zeros::<f64>(dev, &[3 * n])?);
    launch(&m, "float_casts", dev, g, (&up(dev, &f)?, &up(dev, &d)?, &mut of32, &mut of64))?;
    exact(
        "float_casts -> f64",
        &dl(&of64)?,
        &(0..n).flat_map(|i| [f[i] as f64, (f[i] as i32) as f64, (d[i] as i64) as f64]).collect::<Vec<_>>(),
    )?;
    exact(
        "float_casts -> f32",
        &dl(&of32)?,
        &(0..n).flat_map(|i| [d[i] as f32, (d[i] as u32) as f32, (f[i] as u64) as f32]).collect::<Vec<_>>(),
    )?;

    let (mut oi32, mut ou32, mut oi64, mut ou64, mut ous) = (
        zeros::<i32>(dev, &[2 * n])?,
        zeros::<u32>(dev, &[2 * n])?,
        zeros::<i64>(dev, &[2 * n])?,
        zeros::<u64>(dev, &[2 * n])?,
        zeros::<usize>(dev, &[2 * n])?,
    );
    launch(&m, "saturating_casts", dev, g, (&up(dev, &f)?, &up(dev, &d)?, &mut oi32, &mut ou32, &mut oi64, &mut ou64, &mut ous))?;
    eq("saturating_casts -> i32", &dl(&oi32)?, &(0..n).flat_map(|i| [f[i] as i32, d[i] as i32]).collect::<Vec<_>>())?;
    eq("saturating_casts -> u32", &dl(&ou32)?, &(0..n).flat_map(|i| [f[i] as u32, d[i] as u32]).collect::<Vec<_>>())?;
    eq("saturating_casts -> i64", &dl(&oi64)?, &(0..n).flat_map(|i| [f[i] as i64, d[i] as i64]).collect::<Vec<_>>())?;
    eq("saturating_casts -> u64", &dl(&ou64)?, &(0..n).flat_map(|i| [f[i] as u64, d[i] as u64]).collect::<Vec<_>>())?;
    eq("saturating_casts -> usize", &dl(&ous)?, &(0..n).flat_map(|i| [f[i] as usize, d[i] as usize]).collect::<Vec<_>>())?;

    let a: Vec<i64> = vec![0, -1, i64::MAX, i64::MIN, 16777217, -16777217, 9007199254740993, 123];
    let b: Vec<u32> = vec![0, 1, u32::MAX, 16777217, 1 << 31, 3, 4294967293, 77];
    let n = a.len();
    let (mut o32, mut o64) = (zeros::<f32>(dev, &[2 * n])?, zeros::<f64>(dev, &[2 * n])?);
    launch(&m, "int_to_float", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut o32, &mut o64))?;
    exact("int_to_float -> f32", &dl(&o32)?, &(0..n).flat_map(|i| [a[i] as f32, b[i] as f32]).collect::<Vec<_>>())?;
    exact("int_to_float -> f64", &dl(&o64)?, &(0..n).flat_map(|i| [a[i] as f64, (b[i] as usize) as f64]).collect::<Vec<_>>())?;

    let flags: Vec<bool> = (0..37).map(|i| i % 3 == 1 || i % 5 == 0).collect();
    let n = flags.len();
    let (mut oi, mut ou, mut ob) = (zeros::<i32>(dev, &[n])?, zeros::<u64>(dev, &[n])?, zeros::<bool>(dev, &[n])?);
    launch(&m, "bool_casts", dev, Grid::linear(n, 16), (&up(dev, &flags)?, &mut oi, &mut ou, &mut ob))?;
    eq("bool_casts -> i32", &dl(&oi)?, &flags.iter().map(|f| *f as i32 * 10).collect::<Vec<_>>())?;
    eq("bool_casts -> u64", &dl(&ou)?, &flags.iter().map(|f| (*f as u64) << 40).collect::<Vec<_>>())?;
    eq("bool_casts -> bool", &dl(&ob)?, &flags)
}

fn div0<T: Default + PartialEq>(y: T, f: impl FnOnce() -> T) -> T {
    if y == T::default() { T::default() } else { f() }
}

/// operators.rs: every operator with the language's defined behaviour at the edges.
pub fn operators(dev: &Device) -> Outcome {
    let m = module("operators.rs")?;
    let a: Vec<i32> = vec![7, -7, 7, -7, i32::MIN, i32::MIN, i32::MAX, 0, 123456, -1, 5, 1, 1, -8, 1000, 3];
    let b: Vec<i32> = vec![2, 2, -2, -2, -1, 1, 1, 5, 0, 0, 33, 31, 32, 1, -1, -3];
    let n = a.len();
    let mut out = zeros::<i32>(dev, &[n, 12])?;
    launch(&m, "int_ops_i32", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<i32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                div0(y, || x.wrapping_div(y)),
                div0(y, || x.wrapping_rem(y)),
                x & y,
                x | y,
                x ^ y,
                x.wrapping_shl(y as u32),
                x.wrapping_shr(y as u32),
                x.wrapping_neg(),
                !x,
            ]
        })
        .collect();
    eq("int_ops_i32", &dl(&out)?, &want)?;

    let a: Vec<u64> = vec![7, 7, u64::MAX, 0, 1 << 63, 12345678901234, 1, 1, 99, u64::MAX - 1];
    let b: Vec<u64> = vec![2, 0, 2, 5, 3, 1000, 64, 65, 99, u64::MAX];
    let n = a.len();
    let mut out = zeros::<u64>(dev, &[n, 11])?;
    launch(&m, "int_ops_u64", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<u64> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                div0(y, || x / y),
                div0(y, || x % y),
                x & y,
                x | y,
                x ^ y,
                x.wrapping_shl(y as u32),
                x.wrapping_shr(y as u32),
                !x,
            ]
        })
        .collect();
    eq("int_ops_u64", &dl(&out)?, &want)?;

    let a: Vec<i64> = vec![1, -1, i64::MIN, 0x0123_4567_89AB_CDEF, -1000, 5, 37, -64];
    let s: Vec<u32> = vec![0, 63, 1, 4, 64, 65, 200, 3];
    let n = a.len();
    let (mut out, mut out_u) = (zeros::<i64>(dev, &[2 * n])?, zeros::<u32>(dev, &[n])?);
    launch(&m, "mixed_shifts", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &s)?, &mut out, &mut out_u))?;
    eq("mixed_shifts i64", &dl(&out)?, &(0..n).flat_map(|i| [a[i].wrapping_shl(s[i]), a[i].wrapping_shr(s[i])]).collect::<Vec<_>>())?;
    eq("mixed_shifts u32", &dl(&out_u)?, &(0..n).map(|i| 0x8000_0000u32 >> (a[i] & 31)).collect::<Vec<_>>())?;

    let a: Vec<f64> = vec![7.5, -7.5, 1.0, 0.0, -0.0, f64::INFINITY, f64::NAN, 1e308, 5.25, -3.0];
    let b: Vec<f64> = vec![2.0, 2.0, 0.0, 0.0, 3.0, 2.0, 1.0, 10.0, -0.5, f64::INFINITY];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n, 6])?;
    launch(&m, "float_ops", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f64> = (0..n).flat_map(|i| [a[i] + b[i], a[i] - b[i], a[i] * b[i], a[i] / b[i], a[i] % b[i], -a[i]]).collect();
    // Column 4 (`%`) is checked by the `float_remainder` scenario.
    for (c, op) in [(0, "+"), (1, "-"), (2, "*"), (3, "/"), (5, "unary -")] {
        exact(&format!("float_ops `{op}`"), &column(&got, 6, c), &column(&want, 6, c))?;
    }

    let a: Vec<f32> = vec![1.0, 1.0, -1.0, 0.0, -0.0, f32::NAN, 2.0, f32::NEG_INFINITY, 3.0];
    let b: Vec<f32> = vec![1.0, 2.0, 1.0, -0.0, 0.0, 1.0, f32::NAN, -1.0, -3.0];
    let n = a.len();
    let mut out = zeros::<bool>(dev, &[n, 13])?;
    launch(&m, "comparisons", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<bool> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            let (p, q) = (x > 0.0, y > 0.0);
            [x == y, x != y, x < y, x <= y, x > y, x >= y, !p, p & q, p | q, p ^ q, p && q, p || q, p == q]
        })
        .collect();
    eq("comparisons", &dl(&out)?, &want)?;

    let data: Vec<i32> = vec![4, -3, 0, 7, 10];
    let idx: Vec<usize> = vec![0, 1, 2, 3, 4, 5, 100, usize::MAX];
    let n = idx.len();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "short_circuit", dev, Grid::linear(n, 4), (&up(dev, &idx)?, &up(dev, &data)?, &mut out))?;
    let want: Vec<i32> = idx
        .iter()
        .map(|&j| {
            let in_range = j < data.len() && data[j] > 0;
            let either = j >= data.len() || data[j] % 2 == 0;
            in_range as i32 + 2 * either as i32
        })
        .collect();
    eq("short_circuit", &dl(&out)?, &want)
}

/// compound_assign.rs: every compound assignment on locals and elements.
pub fn compound_assign(dev: &Device) -> Outcome {
    let m = module("compound_assign.rs")?;
    let a: Vec<i32> = (0..50).map(|i| (rnd(i) % 100_000) as i32 - 50_000).collect();
    let b: Vec<i32> = (0..50).map(|i| (rnd(i + 77) % 200) as i32 - 100).collect();
    let n = a.len();
    let mut ad = up(dev, &a)?;
    launch(&m, "compound_i32", dev, Grid::linear(n, 16), (&mut ad, &up(dev, &b)?))?;
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let y = b[i];
            let mut x = a[i];
            x = x.wrapping_add(y);
            x = x.wrapping_sub(3);
            x = x.wrapping_mul(y);
            x /= 2;
            x %= 1000;
            x &= 0x7fff;
            x |= 0x100;
            x ^= y;
            x = x.wrapping_shl(2);
            x >>= 1;
            x
        })
        .collect();
    eq("compound_i32", &dl(&ad)?, &want)?;

    let n = 12;
    let a: Vec<u32> = (0..n * 10).map(|k| (rnd(k as u64) % 100_000) as u32).collect();
    let b: Vec<u32> = vec![3, 0, 1, 7, 31, 32, 35, 100, u32::MAX, 2, 64, 5];
    let mut ad = up_nd(dev, &a, &[n, 10])?;
    launch(&m, "compound_elements_u32", dev, Grid::linear(n, 8), (&mut ad, &up(dev, &b)?))?;
    let mut want = a.clone();
    for i in 0..n {
        let y = b[i];
        let r = &mut want[i * 10..i * 10 + 10];
        r[0] = r[0].wrapping_add(y);
        r[1] = r[1].wrapping_sub(y);
        r[2] = r[2].wrapping_mul(y);
        r[3] = div0(y, || r[3] / y);
        r[4] = div0(y, || r[4] % y);
        r[5] &= y;
        r[6] |= y;
        r[7] ^= y;
        r[8] = r[8].wrapping_shl(y);
        r[9] = r[9].wrapping_shr(y);
    }
    eq("compound_elements_u32", &dl(&ad)?, &want)?;

    // `compound_float` (which ends in `%=`) is checked by the `float_remainder` scenario.

    let a = vec![false, false, true, true];
    let b = vec![false, true, false, true];
    let mut ad = up(dev, &a)?;
    launch(&m, "compound_bool", dev, Grid::linear(4, 4), (&mut ad, &up(dev, &b)?))?;
    eq("compound_bool", &dl(&ad)?, &(0..4).map(|i| ((a[i] & b[i]) | !b[i]) ^ true).collect::<Vec<_>>())
}

/// control_flow.rs: if/else values, every loop form, labelled break/continue, early return.
pub fn control_flow(dev: &Device) -> Outcome {
    let m = module("control_flow.rs")?;
    let x: Vec<i32> = vec![0, 5, -5, 100, 101, -1000, i32::MAX - 1, 42];
    let n = x.len();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "if_else_expr", dev, Grid::linear(n, 4), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = x.iter().map(|&v| v.signum() * 1000 + v.abs().min(100)).collect();
    eq("if_else_expr", &dl(&out)?, &want)?;

    let ns: Vec<u32> = vec![0, 1, 2, 3, 10, 11, 100, 1000];
    let n = ns.len();
    let mut out = zeros::<u64>(dev, &[n, 5])?;
    launch(&m, "loop_forms", dev, Grid::linear(n, 4), (&up(dev, &ns)?, &mut out))?;
    let want: Vec<u64> = ns
        .iter()
        .flat_map(|&m| {
            let s: u64 = (1..=m as u64).sum();
            [s, s, s, (0..m as u64 + 1).step_by(3).sum(), (2..=m as u64).step_by(2).sum()]
        })
        .collect();
    eq("loop_forms", &dl(&out)?, &want)?;

    let (r, c) = (6, 5);
    let a: Vec<i32> = (0..r * c).map(|k| if k % c == 0 && (k / c) % 3 == 1 { -1 } else { k as i32 }).collect();
    let targets: Vec<i32> = vec![0, 7, 29, 5, 19, 100, -1, 16];
    let n = targets.len();
    let mut found = zeros::<i64>(dev, &[n, 2])?;
    launch(&m, "labelled_search", dev, Grid::linear(n, 4), (&up_nd(dev, &a, &[r, c])?, &up(dev, &targets)?, &mut found))?;
    let mut want = Vec::new();
    for &t in &targets {
        let mut hit = (-1i64, -1i64);
        'rows: for i in 0..r {
            if a[i * c] < 0 {
                continue;
            }
            for j in 0..c {
                if a[i * c + j] == t {
                    hit = (i as i64, j as i64);
                    break 'rows;
                }
            }
        }
        want.extend([hit.0, hit.1]);
    }
    eq("labelled_search", &dl(&found)?, &want)?;

    let ns: Vec<u32> = vec![0, 1, 2, 3, 10, 100, 500, 97];
    let n = ns.len();
    let mut out = zeros::<u32>(dev, &[n])?;
    launch(&m, "count_primes", dev, Grid::linear(n, 4), (&up(dev, &ns)?, &mut out))?;
    let is_prime = |p: u32| p >= 2 && (2..p).take_while(|d| d * d <= p).all(|d| p % d != 0);
    eq("count_primes", &dl(&out)?, &ns.iter().map(|&m| (2..m).filter(|&p| is_prime(p)).count() as u32).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..33).map(|i| i as f32 * 0.5 - 8.0).collect();
    let mut out = zeros::<f32>(dev, &[33])?;
    launch(&m, "block_tails", dev, Grid::linear(33, 16), (&up(dev, &x)?, &mut out))?;
    exact("block_tails", &dl(&out)?, &x.iter().map(|v| (v * 2.0 + 1.0) * (v * 2.0 + 1.0) - v * 2.0).collect::<Vec<_>>())?;

    let x: Vec<i32> = vec![3, 5, 9, 14, 22, 35];
    let of: Vec<i32> = vec![1, 2, 7, 11, 0, 4, 5, 13];
    let n = of.len();
    let mut out = zeros::<i64>(dev, &[n])?;
    launch(&m, "early_return", dev, Grid::linear(n, 4), (&up(dev, &x)?, &up(dev, &of)?, &mut out))?;
    let want: Vec<i64> = of.iter().map(|&o| x.iter().position(|v| o != 0 && v % o == 0).map(|p| p as i64).unwrap_or(-1)).collect();
    eq("early_return", &dl(&out)?, &want)
}

/// control_flow.rs: `a..=MAX` and `(a..b).step_by(s)` near the top of the type terminate and
/// visit exactly what Rust's iterators visit (no wrap-around).
pub fn inclusive_and_stepped_ranges_at_type_max(dev: &Device) -> Outcome {
    let m = module("control_flow.rs")?;
    let mut out = zeros::<u32>(dev, &[4])?;
    launch(&m, "ranges_near_max", dev, Grid::linear(1, 1), (&mut out,))?;
    let want = [
        (u32::MAX - 3..=u32::MAX).count() as u32,
        (u32::MAX - 10..u32::MAX).step_by(4).count() as u32,
        (0..=10u32).step_by(5).map(|k| k + 1).sum::<u32>(),
        (i32::MAX - 2..=i32::MAX).count() as u32,
    ];
    eq("ranges_near_max [a..=u32::MAX, (MAX-10..MAX).step_by(4), (0..=10).step_by(5), a..=i32::MAX]", &dl(&out)?, &want)
}

/// device_functions.rs: call chains, `mut` parameters, array parameters, every return type.
pub fn device_functions(dev: &Device) -> Outcome {
    let m = module("device_functions.rs")?;
    // `norms` is checked by `device_function_names_with_digit_suffix`.
    let a: Vec<u64> = vec![12, 0, 17, 1 << 40, 1071, 6, 0, 999_999_937];
    let b: Vec<u64> = vec![18, 5, 5, 1 << 20, 462, 6, 0, 3];
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let (mut g, mut l) = (zeros::<u64>(dev, &[8])?, zeros::<u64>(dev, &[8])?);
    launch(&m, "gcd_lcm", dev, Grid::linear(8, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut g, &mut l))?;
    eq("gcd", &dl(&g)?, &(0..8).map(|i| gcd(a[i], b[i])).collect::<Vec<_>>())?;
    eq("lcm", &dl(&l)?, &(0..8).map(|i| if a[i] == 0 || b[i] == 0 { 0 } else { a[i] / gcd(a[i], b[i]) * b[i] }).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..45).map(|i| (i % 9) as f32).collect();
    let mut out = zeros::<f32>(dev, &[45])?;
    launch(&m, "windows", dev, Grid::linear(45, 16), (&up(dev, &x)?, 2i64, &mut out))?;
    let want: Vec<f32> = (0..45i64).map(|c| (c - 2..=c + 2).map(|k| x[k.clamp(0, 44) as usize]).sum()).collect();
    exact("windows", &dl(&out)?, &want)?;

    let x: Vec<u32> = (0..30).map(|i| (rnd(i) % 1000) as u32).collect();
    let (mut pairs, mut flags, mut f) = (zeros::<u32>(dev, &[60])?, zeros::<bool>(dev, &[30])?, zeros::<f32>(dev, &[30])?);
    launch(&m, "helpers", dev, Grid::linear(30, 8), (&up(dev, &x)?, &mut pairs, &mut flags, &mut f))?;
    eq("helpers pairs", &dl(&pairs)?, &x.iter().flat_map(|v| [v >> 1, v + 1]).collect::<Vec<_>>())?;
    eq("helpers flags", &dl(&flags)?, &x.iter().map(|v| v % 2 != 0).collect::<Vec<_>>())?;
    exact("helpers floats", &dl(&f)?, &(0..30).map(|i| i as f32 + 0.5).collect::<Vec<_>>())
}

/// device_functions.rs `norms`: a chain of device functions where one name is another's name
/// followed by a digit (`norm` calls `norm2`, which calls `square`).
pub fn device_function_names_with_digit_suffix(dev: &Device) -> Outcome {
    let m = module("device_functions.rs")?;
    let x: Vec<f64> = (0..60).map(|i| rndf(i, -10.0, 10.0)).collect();
    let y: Vec<f64> = (0..60).map(|i| rndf(i + 100, -10.0, 10.0)).collect();
    let mut out = zeros::<f64>(dev, &[60])?;
    launch(&m, "norms", dev, Grid::linear(60, 32), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    close("norms", &dl(&out)?, &(0..60).map(|i| (x[i] * x[i] + y[i] * y[i]).sqrt()).collect::<Vec<_>>(), 1e-15, 0.0)
}

/// consts_statics.rs: constants and 1-d, 2-d and 3-d static tables.
pub fn consts_statics(dev: &Device) -> Outcome {
    let m = module("consts_statics.rs")?;
    let n = 21;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 2.0).collect();
    let idx: Vec<u32> = (0..n).map(|i| (rnd(i as u64) % 1000) as u32).collect();
    let (mut of, mut ou, mut oi) = (zeros::<f32>(dev, &[n])?, zeros::<u32>(dev, &[n])?, zeros::<i64>(dev, &[n])?);
    launch(&m, "lookup", dev, Grid::linear(n, 8), (&up(dev, &x)?, &up(dev, &idx)?, &mut of, &mut ou, &mut oi))?;
    let coef = [1.0f32, -2.0, 0.5, 0.25];
    let primes = [2u32, 3, 5, 7, 11, 13, 17, 19];
    let poly = |x: f32| {
        let (mut acc, mut p) = (0.0f32, 1.0f32);
        for c in coef {
            acc += c * p;
            p *= x;
        }
        acc
    };
    exact("lookup floats", &dl(&of)?, &x.iter().map(|v| poly(*v) * 0.5 + 3.0).collect::<Vec<_>>())?;
    eq("lookup primes", &dl(&ou)?, &idx.iter().map(|v| primes[(v & 15) as usize % 8]).collect::<Vec<_>>())?;
    eq("lookup 3-d static", &dl(&oi)?, &(0..n).map(|i| -(1i64 << 40) + (2 + 4 * (i % 2) + 2 * ((i / 2) % 2)) as i64).collect::<Vec<_>>())?;

    let p: Vec<f64> = (0..14).map(|i| i as f64 - 6.5).collect();
    let mut out = zeros::<f64>(dev, &[7, 2])?;
    let mut half = zeros::<u64>(dev, &[1])?;
    launch(&m, "rotate", dev, Grid::linear(7, 4), (&up_nd(dev, &p, &[7, 2])?, &mut out, &mut half))?;
    let want: Vec<f64> = (0..7).flat_map(|i| [-p[2 * i + 1], p[2 * i]]).collect();
    close("rotate", &dl(&out)?, &want, 0.0, 1e-12)?;
    eq("rotate U64_MAX_HALF", &dl(&half)?, &[u64::MAX / 2])
}

/// type_inference.rs: types inferred from later uses and default literal types.
pub fn type_inference(dev: &Device) -> Outcome {
    let m = module("type_inference.rs")?;
    let x: Vec<i64> = vec![0, -37, 1 << 40, i64::MAX - 37];
    let mut out = zeros::<i64>(dev, &[4])?;
    launch(&m, "infer_from_later_use", dev, Grid::linear(4, 4), (&up(dev, &x)?, &mut out))?;
    eq("infer_from_later_use", &dl(&out)?, &x.iter().map(|s| s + 5 + 32).collect::<Vec<_>>())?;

    let x: Vec<f32> = vec![0.0, 1.5, -2.25, 100.0];
    let mut out = zeros::<f32>(dev, &[4])?;
    launch(&m, "infer_float", dev, Grid::linear(4, 4), (&up(dev, &x)?, &mut out))?;
    exact("infer_float", &dl(&out)?, &x.iter().map(|v| v * 2.0 + 3.0).collect::<Vec<_>>())?;

    let (mut out, mut shifts) = (zeros::<u64>(dev, &[20])?, zeros::<u32>(dev, &[20])?);
    launch(&m, "infer_through_calls", dev, Grid::linear(20, 8), (&mut out, &mut shifts))?;
    eq("infer_through_calls", &dl(&out)?, &(0..20).map(|i| 41u64 << i).collect::<Vec<_>>())?;
    eq("infer_through_calls shifts", &dl(&shifts)?, &[3u32; 20])?;

    let (mut oi, mut of) = (zeros::<i32>(dev, &[3])?, zeros::<f64>(dev, &[3])?);
    launch(&m, "default_literal_types", dev, Grid::linear(3, 4), (&mut oi, &mut of))?;
    eq("default_literal_types i32", &dl(&oi)?, &[7; 3])?;
    exact("default_literal_types f64", &dl(&of)?, &[2.5; 3])
}

macro_rules! math_reference {
    ($t:ty, $x:expr, $y:expr) => {{
        let x: &[$t] = $x;
        let y: &[$t] = $y;
        let mut want: Vec<$t> = Vec::new();
        for i in 0..x.len() {
            let (a, b) = (x[i], y[i]);
            want.extend([
                (a - b).abs(),
                a.sqrt(),
                (a * 10.0).floor(),
                (a * 10.0).ceil(),
                (a * 10.0).round(),
                (a * -10.0).trunc(),
                a.min(b),
                a.max(b),
                a.mul_add(b, 0.25),
                a.exp(),
                a.exp2(),
                a.ln(),
                a.log2(),
                a.log10(),
                a.sin(),
                a.cos(),
                a.tan(),
                a.asin(),
                a.acos(),
                a.atan(),
                a.atan2(b - 0.5),
                a.sinh(),
                a.cosh(),
                a.tanh(),
                a.powf(b),
                (a + 1.0).powi(i as i32 % 5 - 2),
                (a - 0.5).cbrt(),
                a.hypot(b),
            ]);
        }
        want
    }};
}

/// Columns of the math kernels whose results are exact (no rounding error allowed).
const EXACT_MATH_COLUMNS: &[usize] = &[0, 2, 3, 4, 5, 6, 7, 8];

fn math_inputs(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut x: Vec<f64> = (0..n).map(|i| rndf(i as u64, 0.05, 0.95)).collect();
    let y: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 999, 0.05, 0.95)).collect();
    // Halves after scaling by 10: round() must round them away from zero.
    x[0] = 0.25;
    x[1] = 0.75;
    x[2] = 0.5;
    (x, y)
}

/// math_f32.rs: every float method on f32 (transcendentals to a small relative tolerance).
pub fn math_f32(dev: &Device) -> Outcome {
    let m = module("math_f32.rs")?;
    let (x, y) = math_inputs(50);
    let x: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let y: Vec<f32> = y.iter().map(|v| *v as f32).collect();
    let mut out = zeros::<f32>(dev, &[50, 28])?;
    launch(&m, "math_f32", dev, Grid::linear(50, 16), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    let got = dl(&out)?;
    let want = math_reference!(f32, &x, &y);
    for c in 0..28 {
        let g: Vec<f32> = (0..50).map(|i| got[i * 28 + c]).collect();
        let w: Vec<f32> = (0..50).map(|i| want[i * 28 + c]).collect();
        if EXACT_MATH_COLUMNS.contains(&c) {
            exact(&format!("math_f32 column {c}"), &g, &w)?;
        } else {
            close(&format!("math_f32 column {c}"), &g, &w, 2e-6, 1e-7)?;
        }
    }
    Ok(())
}

/// math_f64.rs: every float method on f64.
pub fn math_f64(dev: &Device) -> Outcome {
    let m = module("math_f64.rs")?;
    let (x, y) = math_inputs(50);
    let mut out = zeros::<f64>(dev, &[50, 28])?;
    launch(&m, "math_f64", dev, Grid::linear(50, 16), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    let got = dl(&out)?;
    let want = math_reference!(f64, &x, &y);
    for c in 0..28 {
        let g: Vec<f64> = (0..50).map(|i| got[i * 28 + c]).collect();
        let w: Vec<f64> = (0..50).map(|i| want[i * 28 + c]).collect();
        if EXACT_MATH_COLUMNS.contains(&c) {
            exact(&format!("math_f64 column {c}"), &g, &w)?;
        } else {
            close(&format!("math_f64 column {c}"), &g, &w, 1e-14, 1e-16)?;
        }
    }
    Ok(())
}

/// int_methods.rs: integer methods on every integer type.
pub fn int_methods(dev: &Device) -> Outcome {
    let m = module("int_methods.rs")?;
    let a: Vec<i32> = vec![0, 1, -1, i32::MIN, i32::MAX, 12345, -98765, 1 << 20, 0x00F0_0F00];
    let b: Vec<i32> = vec![0, -1, 1, -1, 1, 54321, 3, i32::MAX, -7];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<i32>(dev, &[n, 6])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_i32", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_i32",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].wrapping_abs(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_i32 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<i64> = vec![0, 1, -1, i64::MIN, i64::MAX, 1 << 40, -(1 << 50) + 3, 0x0F0F];
    let b: Vec<i64> = vec![0, -1, 1, -1, 1, 3, i64::MAX, -7];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<i64>(dev, &[n, 6])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_i64", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_i64",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].wrapping_abs(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_i64 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<u32> = vec![0, 1, u32::MAX, 1 << 31, 12345, 0x8000_0001, 6];
    let b: Vec<u32> = vec![0, u32::MAX, 1, 1 << 31, 54321, 2, 6];
    let n = a.len();
    let mut out = zeros::<u32>(dev, &[n, 8])?;
    launch(&m, "int_methods_u32", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq(
        "int_methods_u32",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].count_ones(),
                    a[i].leading_zeros(),
                    a[i].trailing_zeros(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;

    let a: Vec<u64> = vec![0, 1, u64::MAX, 1 << 63, 1 << 33, 0xDEAD_BEEF_0000];
    let b: Vec<u64> = vec![0, u64::MAX, 2, 1 << 63, 7, 3];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<u64>(dev, &[n, 5])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_u64", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_u64",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| [a[i].wrapping_add(b[i]), a[i].wrapping_sub(b[i]), a[i].wrapping_mul(b[i]), a[i].min(b[i]), a[i].max(b[i])])
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_u64 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<usize> = vec![0, 1, 5, 1 << 50, usize::MAX, 12345];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<usize>(dev, &[n])?, zeros::<u32>(dev, &[n])?);
    launch(&m, "int_methods_usize", dev, Grid::linear(n, 4), (&up(dev, &a)?, &mut out, &mut bits))?;
    eq("int_methods_usize", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(3).max(i).min(1 << 40)).collect::<Vec<_>>())?;
    eq("int_methods_usize bits", &dl(&bits)?, &a.iter().map(|v| v.count_ones() + v.leading_zeros() * 100).collect::<Vec<_>>())
}

/// thread_indices.rs: every index builtin on a 3-d grid of 3-d blocks.
pub fn thread_indices(dev: &Device) -> Outcome {
    let m = module("thread_indices.rs")?;
    let (g, b) = ([3u32, 2, 2], [4u32, 2, 2]);
    let total = (g.iter().product::<u32>() * b.iter().product::<u32>()) as usize;
    let (mut ids, mut gid) = (zeros::<u32>(dev, &[total, 12])?, zeros::<usize>(dev, &[total, 3])?);
    launch(&m, "record_indices", dev, Grid::new((g[0], g[1], g[2]), (b[0], b[1], b[2])), (&mut ids, &mut gid))?;
    let mut want_ids = vec![0u32; total * 12];
    let mut want_gid = vec![0usize; total * 3];
    for bz in 0..g[2] {
        for by in 0..g[1] {
            for bx in 0..g[0] {
                for tz in 0..b[2] {
                    for ty in 0..b[1] {
                        for tx in 0..b[0] {
                            let t = (tz * b[1] + ty) * b[0] + tx;
                            let blk = (bz * g[1] + by) * g[0] + bx;
                            let lin = (blk * b[0] * b[1] * b[2] + t) as usize;
                            want_ids[lin * 12..lin * 12 + 12]
                                .copy_from_slice(&[tx, ty, tz, bx, by, bz, b[0], b[1], b[2], g[0], g[1], g[2]]);
                            want_gid[lin * 3..lin * 3 + 3].copy_from_slice(&[
                                (bx * b[0] + tx) as usize,
                                (by * b[1] + ty) as usize,
                                (bz * b[2] + tz) as usize,
                            ]);
                        }
                    }
                }
            }
        }
    }
    eq("record_indices ids", &dl(&ids)?, &want_ids)?;
    eq("record_indices global ids", &dl(&gid)?, &want_gid)?;

    let (nz, ny, nx) = (5, 7, 9);
    let mut out = zeros::<u32>(dev, &[nz, ny, nx])?;
    launch(&m, "fill_coords_3d", dev, Grid::new((blocks(nx, 4), blocks(ny, 4), blocks(nz, 2)), (4u32, 4u32, 2u32)), (&mut out,))?;
    let want: Vec<u32> = (0..nz * ny * nx).map(|q| ((q / (ny * nx)) * 10000 + ((q / nx) % ny) * 100 + q % nx) as u32).collect();
    eq("fill_coords_3d", &dl(&out)?, &want)
}

/// array_0d.rs: 0-d arrays read, written and updated atomically.
pub fn array_0d(dev: &Device) -> Outcome {
    let m = module("array_0d.rs")?;
    let x: Vec<f32> = (0..100).map(|i| i as f32 - 50.0).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "scale_by_0d", dev, Grid::linear(100, 32), (&dev.upload_scalar(1.5f32).ctx("scalar")?, &mut xd))?;
    exact("scale_by_0d", &dl(&xd)?, &x.iter().map(|v| v * 1.5).collect::<Vec<_>>())?;

    let x: Vec<i32> = (0..300).map(|i| (rnd(i) % 40) as i32).collect();
    let mut count = dev.upload_scalar(0u64).ctx("scalar")?;
    launch(&m, "count_into_0d", dev, Grid::linear(300, 64), (&up(dev, &x)?, &dev.upload_scalar(10i32).ctx("scalar")?, &mut count))?;
    eq("count_into_0d", &dl(&count)?, &[x.iter().filter(|v| **v > 10).count() as u64])?;

    let (mut out, mut flag, mut n) =
        (dev.upload_scalar(0.0f64).ctx("s")?, dev.upload_scalar(false).ctx("s")?, dev.upload_scalar(0usize).ctx("s")?);
    launch(&m, "write_0d", dev, Grid::linear(1, 32), (2.25f64, &mut out, &mut flag, &mut n))?;
    exact("write_0d value", &dl(&out)?, &[4.5])?;
    eq("write_0d flag", &dl(&flag)?, &[true])?;
    eq("write_0d len of a 0-d array", &dl(&n)?, &[1usize])
}

/// array_shapes_strides.rs: len/shape/stride under C, F and strided layouts, 1-d to 4-d.
pub fn array_shapes_strides(dev: &Device) -> Outcome {
    let m = module("array_shapes_strides.rs")?;
    let g = Grid::linear(1, 32);

    let base = up(dev, &(0..30).map(|i| i as f32).collect::<Vec<_>>())?;
    let mut out = zeros::<usize>(dev, &[3])?;
    launch(&m, "describe_1d", dev, g, (&base, &mut out))?;
    eq("describe_1d (contiguous)", &dl(&out)?, &[30, 30, 1])?;
    launch(&m, "describe_1d", dev, g, (&base.view(2, &[9], &[3]).ctx("view")?, &mut out))?;
    eq("describe_1d (stride 3)", &dl(&out)?, &[9, 9, 3])?;

    let d2: Vec<i64> = (0..12).collect();
    let mut out = zeros::<usize>(dev, &[5])?;
    launch(&m, "describe_2d", dev, g, (&up_nd(dev, &d2, &[3, 4])?, &mut out))?;
    eq("describe_2d (C)", &dl(&out)?, &[12, 3, 4, 4, 1])?;
    launch(&m, "describe_2d", dev, g, (&up_f(dev, &d2, &[3, 4])?, &mut out))?;
    eq("describe_2d (F)", &dl(&out)?, &[12, 3, 4, 1, 3])?;
    launch(&m, "describe_2d", dev, g, (&up_nd(dev, &d2, &[3, 4])?.transpose(), &mut out))?;
    eq("describe_2d (transposed C)", &dl(&out)?, &[12, 4, 3, 1, 4])?;
    let (v, _, _) = up_strided(dev, &d2, &[3, 4], 0i64)?;
    launch(&m, "describe_2d", dev, g, (&v, &mut out))?;
    eq("describe_2d (strided)", &dl(&out)?, &[12, 3, 4, 9, 2])?;

    let d3: Vec<u32> = (0..24).map(|i| i * 10).collect();
    let mut out = zeros::<usize>(dev, &[7])?;
    let mut a = up_nd(dev, &d3, &[2, 3, 4])?;
    launch(&m, "describe_3d", dev, g, (&mut a, &mut out))?;
    eq("describe_3d (C)", &dl(&out)?, &[24, 2, 3, 4, 12, 4, 1])?;
    let mut want = d3.clone();
    want[0] += 1;
    eq("describe_3d (C) write", &dl(&a)?, &want)?;
    let mut a = up_f(dev, &d3, &[2, 3, 4])?;
    launch(&m, "describe_3d", dev, g, (&mut a, &mut out))?;
    eq("describe_3d (F)", &dl(&out)?, &[24, 2, 3, 4, 1, 2, 6])?;
    eq("describe_3d (F) write", &dl(&a)?, &want)?;
    let (mut v, vbase, vpos) = up_strided(dev, &d3, &[2, 3, 4], 77u32)?;
    launch(&m, "describe_3d", dev, g, (&mut v, &mut out))?;
    eq("describe_3d (strided)", &dl(&out)?, &[24, 2, 3, 4, 28, 9, 2])?;
    eq("describe_3d (strided) write", &dl(&v)?, &want)?;
    untouched("describe_3d (strided)", &vbase, &vpos, 77u32)?;

    let shape4 = [2usize, 3, 4, 5];
    let d4: Vec<f64> = (0..120).map(|i| i as f64 * 0.5).collect();
    let mut out = zeros::<usize>(dev, &[9])?;
    launch(&m, "describe_4d", dev, g, (&up_nd(dev, &d4, &shape4)?, &mut out))?;
    eq("describe_4d (C)", &dl(&out)?, &[120, 2, 3, 4, 5, 60, 20, 5, 1])?;
    launch(&m, "describe_4d", dev, g, (&up_f(dev, &d4, &shape4)?, &mut out))?;
    eq("describe_4d (F)", &dl(&out)?, &[120, 2, 3, 4, 5, 1, 2, 6, 24])?;
    let (v4, _, _) = up_strided(dev, &d4, &shape4, -1.0f64)?;
    launch(&m, "describe_4d", dev, g, (&v4, &mut out))?;
    let s3 = 2;
    let s2 = s3 * 5 + 1;
    let s1 = s2 * 4 + 1;
    let s0 = s1 * 3 + 1;
    eq("describe_4d (strided)", &dl(&out)?, &[120, 2, 3, 4, 5, s0, s1, s2, s3])?;

    let want: Vec<f64> = d4.chunks(5).map(|c| c.iter().sum()).collect();
    for (what, arr) in [("C", up_nd(dev, &d4, &shape4)?), ("F", up_f(dev, &d4, &shape4)?), ("strided", v4.clone())] {
        let mut out = zeros::<f64>(dev, &[2, 3, 4])?;
        launch(&m, "sum_last_axis_4d", dev, Grid::linear(24, 16), (&arr, &mut out))?;
        exact(&format!("sum_last_axis_4d ({what})"), &dl(&out)?, &want)?;
    }

    let p: Vec<i32> = (0..120).map(|i| i - 60).collect();
    let mut want = vec![0i32; 120];
    for q in 0..120 {
        let idx = unravel(q, &shape4);
        let (i, j, k, l) = (idx[0], idx[1], idx[2], idx[3]);
        want[((l * 4 + k) * 3 + j) * 2 + i] = p[q] * 2;
    }
    let mut out = zeros::<i32>(dev, &[5, 4, 3, 2])?;
    launch(&m, "permute_4d", dev, Grid::linear(120, 32), (&up_nd(dev, &p, &shape4)?, &mut out))?;
    eq("permute_4d (C -> C)", &dl(&out)?, &want)?;
    let mut outf = dev.alloc_with_order::<i32>(&[5, 4, 3, 2], Order::F).ctx("alloc F")?;
    launch(&m, "permute_4d", dev, Grid::linear(120, 32), (&up_f(dev, &p, &shape4)?, &mut outf))?;
    eq("permute_4d (F -> F)", &dl(&outf)?, &want)?;

    let a0: Vec<u64> = (0..50).map(|i| i * i).collect();
    let mut a = up(dev, &a0)?;
    launch(&m, "array1_both_index_forms", dev, Grid::linear(50, 16), (&mut a,))?;
    eq("array1_both_index_forms", &dl(&a)?, &a0.iter().map(|v| v * 10 + 1).collect::<Vec<_>>())?;
    let (mut v, vbase, vpos) = up_strided(dev, &a0, &[50], 3u64)?;
    launch(&m, "array1_both_index_forms", dev, Grid::linear(50, 16), (&mut v,))?;
    eq("array1_both_index_forms (strided)", &dl(&v)?, &a0.iter().map(|v| v * 10 + 1).collect::<Vec<_>>())?;
    untouched("array1_both_index_forms (strided)", &vbase, &vpos, 3u64)
}

/// transpose.rs: naive transpose over C, F and strided inputs; tiled transpose with shared memory.
pub fn transpose(dev: &Device) -> Outcome {
    let m = module("transpose.rs")?;
    let (r, c) = (13, 19);
    let a: Vec<f64> = (0..r * c).map(|i| i as f64 * 1.5 - 3.0).collect();
    let want: Vec<f64> = (0..c * r).map(|q| a[(q % r) * c + q / r]).collect();
    let grid = Grid::new((blocks(c, 8), blocks(r, 8)), (8u32, 8u32));
    let (v, _, _) = up_strided(dev, &a, &[r, c], f64::NAN)?;
    for (what, arr) in [("C", up_nd(dev, &a, &[r, c])?), ("F", up_f(dev, &a, &[r, c])?), ("strided", v)] {
        let mut out = zeros::<f64>(dev, &[c, r])?;
        launch(&m, "transpose_naive", dev, grid, (&arr, &mut out))?;
        exact(&format!("transpose_naive ({what})"), &dl(&out)?, &want)?;
    }
    let af: Vec<f32> = a.iter().map(|v| *v as f32).collect();
    let wantf: Vec<f32> = want.iter().map(|v| *v as f32).collect();
    let mut out = zeros::<f32>(dev, &[c, r])?;
    launch(&m, "transpose_tiled", dev, grid, (&up_nd(dev, &af, &[r, c])?, &mut out))?;
    exact("transpose_tiled", &dl(&out)?, &wantf)
}

/// prefix_scan.rs: a multi-block inclusive scan in two launches.
pub fn prefix_scan(dev: &Device) -> Outcome {
    let m = module("prefix_scan.rs")?;
    let n = 300;
    let x: Vec<i32> = (0..n).map(|i| (i % 11) as i32 - 5).collect();
    let nb = blocks(n, 64) as usize;
    let (mut out, mut totals) = (zeros::<i32>(dev, &[n])?, zeros::<i32>(dev, &[nb])?);
    launch(&m, "block_scan_i32", dev, Grid::linear(n, 64), (&up(dev, &x)?, &mut out, &mut totals))?;
    let block_scan: Vec<i32> = x
        .chunks(64)
        .flat_map(|c| {
            c.iter()
                .scan(0, |s, v| {
                    *s += v;
                    Some(*s)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    eq("block_scan_i32", &dl(&out)?, &block_scan)?;
    eq("block_scan_i32 totals", &dl(&totals)?, &x.chunks(64).map(|c| c.iter().sum::<i32>()).collect::<Vec<_>>())?;
    launch(&m, "add_block_offsets", dev, Grid::linear(n, 64), (&mut out, &totals))?;
    eq(
        "prefix scan",
        &dl(&out)?,
        &x.iter()
            .scan(0, |s, v| {
                *s += v;
                Some(*s)
            })
            .collect::<Vec<_>>(),
    )
}

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

/// bitonic_sort.rs: per-block sort in shared memory, the last block partial.
pub fn bitonic_sort(dev: &Device) -> Outcome {
    let m = module("bitonic_sort.rs")?;
    let n = 200;
    let keys: Vec<u32> = (0..n).map(|i| (rnd(i as u64) % 1000) as u32).collect();
    let mut kd = up(dev, &keys)?;
    launch(&m, "bitonic_sort_blocks", dev, Grid::linear(n, 64), (&mut kd,))?;
    let want: Vec<u32> = keys
        .chunks(64)
        .flat_map(|c| {
            let mut v = c.to_vec();
            v.sort_unstable();
            v
        })
        .collect();
    eq("bitonic_sort_blocks", &dl(&kd)?, &want)
}

/// gather_scatter.rs: index arrays of u32, usize and u64; scatter with atomics.
pub fn gather_scatter(dev: &Device) -> Outcome {
    let m = module("gather_scatter.rs")?;
    let src: Vec<f64> = (0..50).map(|i| i as f64 * 0.25).collect();
    let idx: Vec<u32> = (0..80).map(|i| (rnd(i) % 60) as u32).collect();
    let mut out = zeros::<f64>(dev, &[80])?;
    launch(&m, "gather", dev, Grid::linear(80, 32), (&up(dev, &src)?, &up(dev, &idx)?, &mut out))?;
    exact("gather", &dl(&out)?, &idx.iter().map(|j| src.get(*j as usize).copied().unwrap_or(-1.0)).collect::<Vec<_>>())?;

    let values: Vec<i64> = (0..500).map(|i| i as i64 - 250).collect();
    let sidx: Vec<usize> = (0..500).map(|i| rnd(i + 5) as usize).collect();
    let mut out = zeros::<i64>(dev, &[13])?;
    launch(&m, "scatter_add", dev, Grid::linear(500, 64), (&up(dev, &values)?, &up(dev, &sidx)?, &mut out))?;
    let mut want = vec![0i64; 13];
    for i in 0..500 {
        want[sidx[i] % 13] += values[i];
    }
    eq("scatter_add", &dl(&out)?, &want)?;

    let table: Vec<i32> = (0..42).map(|i| i * 3 - 20).collect();
    let pairs: Vec<u64> = (0..30).flat_map(|i| [rnd(i) % 6, rnd(i + 50) % 7]).collect();
    let mut out = zeros::<i32>(dev, &[30])?;
    launch(&m, "gather_2d", dev, Grid::linear(30, 8), (&up_nd(dev, &table, &[6, 7])?, &up_nd(dev, &pairs, &[30, 2])?, &mut out))?;
    eq("gather_2d", &dl(&out)?, &(0..30).map(|i| table[pairs[2 * i] as usize * 7 + pairs[2 * i + 1] as usize]).collect::<Vec<_>>())
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

/// grid_stride.rs: grids far smaller than the data, in 1-d and 2-d.
pub fn grid_stride(dev: &Device) -> Outcome {
    let m = module("grid_stride.rs")?;
    let x: Vec<f64> = (0..1000).map(|i| i as f64 - 300.0).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "grid_stride_scale", dev, Grid::new(3u32, 32u32), (&mut xd, 1.5f64))?;
    exact("grid_stride_scale", &dl(&xd)?, &x.iter().map(|v| v * 1.5).collect::<Vec<_>>())?;

    let mut out = zeros::<u64>(dev, &[777])?;
    launch(&m, "grid_stride_squares", dev, Grid::new(2u32, 64u32), (&mut out,))?;
    eq("grid_stride_squares", &dl(&out)?, &(0..777u64).map(|i| i * i).collect::<Vec<_>>())?;

    let (r, c) = (13, 17);
    let mut a = up_nd(dev, &vec![1i32; r * c], &[r, c])?;
    launch(&m, "grid_stride_2d", dev, Grid::new((2u32, 2u32), (4u32, 4u32)), (&mut a,))?;
    eq("grid_stride_2d", &dl(&a)?, &(0..r * c).map(|q| 1 + ((q / c) * 1000 + q % c) as i32).collect::<Vec<_>>())
}

/// sparse_csr.rs: CSR matrix-vector product and row statistics (with empty rows).
pub fn sparse_csr(dev: &Device) -> Outcome {
    let m = module("sparse_csr.rs")?;
    let (rows, ncols) = (20, 15);
    let (mut row_ptr, mut cols, mut vals) = (vec![0u32], Vec::new(), Vec::new());
    let mut dense = vec![0.0f64; rows * ncols];
    for r in 0..rows {
        for c in 0..ncols {
            if r % 7 != 3 && rnd((r * ncols + c) as u64) % 4 == 0 {
                cols.push(c as u32);
                let v = (rnd((r * 100 + c) as u64) % 9) as f64 - 4.0;
                vals.push(v);
                dense[r * ncols + c] = v;
            }
        }
        row_ptr.push(cols.len() as u32);
    }
    let x: Vec<f64> = (0..ncols).map(|i| i as f64 * 0.5).collect();
    let mut y = zeros::<f64>(dev, &[rows])?;
    let (rp, cd) = (up(dev, &row_ptr)?, up(dev, &cols)?);
    launch(&m, "spmv_csr", dev, Grid::linear(rows, 8), (&rp, &cd, &up(dev, &vals)?, &up(dev, &x)?, &mut y))?;
    exact("spmv_csr", &dl(&y)?, &(0..rows).map(|r| (0..ncols).map(|c| dense[r * ncols + c] * x[c]).sum::<f64>()).collect::<Vec<_>>())?;

    let (mut len, mut max_col) = (zeros::<u32>(dev, &[rows])?, zeros::<i64>(dev, &[rows])?);
    launch(&m, "csr_row_stats", dev, Grid::linear(rows, 8), (&rp, &cd, &mut len, &mut max_col))?;
    eq("csr_row_stats len", &dl(&len)?, &(0..rows).map(|r| row_ptr[r + 1] - row_ptr[r]).collect::<Vec<_>>())?;
    eq(
        "csr_row_stats max col",
        &dl(&max_col)?,
        &(0..rows)
            .map(|r| cols[row_ptr[r] as usize..row_ptr[r + 1] as usize].iter().map(|c| *c as i64).max().unwrap_or(-1))
            .collect::<Vec<_>>(),
    )
}

/// float_special.rs: numeric constants and NaN semantics.
pub fn float_special(dev: &Device) -> Outcome {
    let m = module("float_special.rs")?;
    let g = Grid::linear(1, 32);
    let (mut o32, mut o64) = (zeros::<f32>(dev, &[8])?, zeros::<f64>(dev, &[8])?);
    launch(&m, "float_constants", dev, g, (&mut o32, &mut o64))?;
    exact(
        "float_constants f32",
        &dl(&o32)?,
        &[f32::MAX, f32::MIN, f32::EPSILON, f32::MIN_POSITIVE, f32::INFINITY, f32::NEG_INFINITY, std::f32::consts::PI, std::f32::consts::E],
    )?;
    use std::f64::consts as c;
    exact(
        "float_constants f64",
        &dl(&o64)?,
        &[f64::MAX, c::TAU, c::SQRT_2, c::LN_2, c::FRAC_PI_4, c::LOG2_E, c::FRAC_1_SQRT_2, f64::EPSILON],
    )?;

    let (mut oi32, mut ou32, mut oi64, mut ou64, mut ous) = (
        zeros::<i32>(dev, &[2])?,
        zeros::<u32>(dev, &[2])?,
        zeros::<i64>(dev, &[2])?,
        zeros::<u64>(dev, &[2])?,
        zeros::<usize>(dev, &[2])?,
    );
    launch(&m, "int_constants", dev, g, (&mut oi32, &mut ou32, &mut oi64, &mut ou64, &mut ous))?;
    eq("int_constants i32", &dl(&oi32)?, &[i32::MIN, i32::MAX])?;
    eq("int_constants u32", &dl(&ou32)?, &[u32::MAX, 32])?;
    eq("int_constants i64", &dl(&oi64)?, &[i64::MIN, i64::MAX])?;
    eq("int_constants u64", &dl(&ou64)?, &[u64::MAX, 0])?;
    eq("int_constants usize", &dl(&ous)?, &[usize::MAX, 64])?;

    let x = vec![1.0f32, f32::NAN, f32::NEG_INFINITY, 0.0, -0.0];
    let (mut flags, mut ints) = (zeros::<bool>(dev, &[5, 4])?, up(dev, &[99i32; 5])?);
    launch(&m, "nan_behaviour", dev, Grid::linear(5, 4), (&up(dev, &x)?, &mut flags, &mut ints))?;
    eq("nan_behaviour flags", &dl(&flags)?, &x.iter().flat_map(|v| [false, true, false, v.is_nan()]).collect::<Vec<_>>())?;
    eq("nan_behaviour NaN as i32", &dl(&ints)?, &[0; 5])
}

/// polynomial_horner.rs: mul_add chains over a 2-d static table.
pub fn polynomial_horner(dev: &Device) -> Outcome {
    let m = module("polynomial_horner.rs")?;
    let coeffs = [[1.0f64, 0.0, -2.0, 1.0], [0.5, 0.25, 0.0, -1.0], [0.0, 0.0, 3.0, 0.125]];
    let x: Vec<f64> = (0..50).map(|i| rndf(i, -3.0, 3.0)).collect();
    let mut out = zeros::<f64>(dev, &[50, 3])?;
    launch(&m, "eval_polys", dev, Grid::linear(50, 16), (&up(dev, &x)?, &mut out))?;
    let want: Vec<f64> = x.iter().flat_map(|v| coeffs.map(|row| row.iter().fold(0.0f64, |acc, c| acc.mul_add(*v, *c)))).collect();
    exact("eval_polys", &dl(&out)?, &want)
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

/// scopes_shadowing.rs: shadowing, deferred initialisation, `mut` kernel parameters.
pub fn scopes_shadowing(dev: &Device) -> Outcome {
    let m = module("scopes_shadowing.rs")?;
    let x: Vec<i32> = (0..40).map(|i| i - 20).collect();
    let mut out = up(dev, &vec![-5i64; 30])?;
    launch(&m, "shadowing", dev, Grid::linear(40, 16), (1000usize, &up(dev, &x)?, &mut out))?;
    let want: Vec<i64> = (0..30)
        .map(|i| {
            let v = x[i] as i64 * 3;
            let w = if v > 10 { v - 10 } else { 10 - v };
            1000 + v + w
        })
        .collect();
    eq("shadowing", &dl(&out)?, &want)?;

    let mut out = zeros::<f32>(dev, &[25])?;
    launch(&m, "mut_params", dev, Grid::linear(25, 16), (1.5f32, 3u32, &mut out))?;
    exact("mut_params", &dl(&out)?, &(0..25).map(|i| (1.5 + i as f32) * 6.0).collect::<Vec<_>>())
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

/// Foreign arrays (known only through `ArrayInterface`) as kernel arguments: read-only and
/// writable, C, F, strided and 0-d; a read-only one refused for a writable parameter.
pub fn foreign_arrays(dev: &Device) -> Outcome {
    let sax = module("saxpy.rs")?;
    let n = 300;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| 100.0 - i as f32).collect();
    let (xd, yd) = (up(dev, &x)?, up(dev, &y0)?);
    let xf = ForeignArray::wrap(&xd).read_only();
    let yf = ForeignArray::wrap(&yd);
    launch(&sax, "saxpy", dev, Grid::linear(n, 64), (3.0f32, xf.iface(), yf.iface()))?;
    let want: Vec<f32> = (0..n).map(|i| 3.0 * x[i] + y0[i]).collect();
    exact("saxpy through foreign arrays", &dl(&yd)?, &want)?;

    // A read-only foreign array for the written parameter: refused, nothing runs.
    let y_ro = ForeignArray::wrap(&yd).read_only();
    let k = sax.kernel("saxpy").ctx("kernel saxpy")?;
    if k.launch(dev, Grid::linear(n, 64), (3.0f32, xf.iface(), y_ro.iface())).is_ok() {
        return Err("saxpy accepted a read-only foreign array for its `&mut` parameter".into());
    }
    exact("saxpy after a refused launch", &dl(&yd)?, &want)?;

    let mm = module("matmul_2d.rs")?;
    let (r, k, p) = (9, 5, 6);
    let a: Vec<f32> = (0..r * k).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * p).map(|i| (i % 5) as f32 * 0.5).collect();
    let af_dev = up_f(dev, &a, &[r, k])?;
    let (bv, _, _) = up_strided(dev, &b, &[k, p], 0.0f32)?;
    let (af, bf) = (ForeignArray::wrap(&af_dev), ForeignArray::wrap(&bv));
    let cd = zeros::<f32>(dev, &[r, p])?;
    let cf = ForeignArray::wrap(&cd);
    launch(&mm, "matmul", dev, Grid::new((blocks(p, 8), blocks(r, 8)), (8u32, 8u32)), (af.iface(), bf.iface(), cf.iface()))?;
    exact("matmul through foreign arrays (F, strided, C)", &dl(&cd)?, &matmul_ref(&a, &b, r, k, p))?;

    let z = module("array_0d.rs")?;
    let factor = dev.upload_scalar(-2.0f32).ctx("scalar")?;
    let ff = ForeignArray::wrap(&factor).read_only();
    let xs = up(dev, &x)?;
    let xsf = ForeignArray::wrap(&xs);
    launch(&z, "scale_by_0d", dev, Grid::linear(n, 128), (ff.iface(), xsf.iface()))?;
    exact("scale_by_0d through foreign arrays", &dl(&xs)?, &x.iter().map(|v| v * -2.0).collect::<Vec<_>>())
}

/// float_remainder.rs (and the `%` of operators.rs and compound_assign.rs): `%` on floats is
/// Rust's exact fmod, with the dividend's sign on zero results.
pub fn float_remainder(dev: &Device) -> Outcome {
    let m = module("float_remainder.rs")?;
    let a: Vec<f64> = vec![
        7.5,
        -7.5,
        7.5,
        -7.5,
        -0.0,
        0.0,
        -3.0,
        3.0,
        5.0,
        0.7,
        1e22,
        1e17,
        1e308,
        123456789012345.0,
        1.0,
        f64::INFINITY,
        f64::NAN,
        2.5,
        -1e-310,
    ];
    let b: Vec<f64> = vec![2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, -3.0, 0.1, 0.1, 3.0, 7.0, 10.0, 0.1, 0.0, 2.0, 1.0, f64::INFINITY, 1e-300];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n])?;
    launch(&m, "rem_f64", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("rem_f64 (a[i] % b[i] with a, b as listed in the scenario)", &dl(&out)?, &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let a: Vec<f32> = vec![7.5, -7.5, -0.0, -3.0, 5.0, 0.7, 1e20, 16777217.0, 1.0, f32::NEG_INFINITY, -2.5, 3e38];
    let b: Vec<f32> = vec![2.0, 2.0, 3.0, 3.0, 0.1, 0.1, 3.0, 7.0, 0.0, 2.0, f32::INFINITY, 1e-3];
    let n = a.len();
    let mut out = zeros::<f32>(dev, &[n])?;
    launch(&m, "rem_f32", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("rem_f32", &dl(&out)?, &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let a: Vec<f32> = (0..40).map(|i| i as f32 * 0.75 - 10.0).collect();
    let mut ad = up(dev, &a)?;
    launch(&m, "rem_assign_f32", dev, Grid::linear(40, 16), (&mut ad, 1.5f32))?;
    exact("rem_assign_f32", &dl(&ad)?, &a.iter().map(|v| v % 1.5).collect::<Vec<_>>())?;

    let ops = module("operators.rs")?;
    let a: Vec<f64> = vec![7.5, -7.5, 1.0, 0.0, -0.0, f64::INFINITY, f64::NAN, 1e308, 5.25, -3.0];
    let b: Vec<f64> = vec![2.0, 2.0, 0.0, 0.0, 3.0, 2.0, 1.0, 10.0, -0.5, f64::INFINITY];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n, 6])?;
    launch(&ops, "float_ops", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("operators.rs float_ops `%`", &column(&dl(&out)?, 6, 4), &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let ca = module("compound_assign.rs")?;
    let a: Vec<f32> = (0..40).map(|i| i as f32 * 0.75 - 10.0).collect();
    let b: Vec<f32> = (0..40).map(|i| (i % 6) as f32 * 1.25).collect();
    let mut ad = up(dev, &a)?;
    launch(&ca, "compound_float", dev, Grid::linear(40, 16), (&mut ad, &up(dev, &b)?))?;
    exact(
        "compound_assign.rs compound_float (ends in `%= 3.0`)",
        &dl(&ad)?,
        &(0..40).map(|i| ((a[i] + b[i]) * 2.0 - 1.0) / 4.0 % 3.0).collect::<Vec<_>>(),
    )
}

/// shared_device_functions.rs: shared arrays passed to device functions, a barrier in a device
/// function, a shared length from a constant expression, static bools, 0-d compound updates.
pub fn shared_device_functions(dev: &Device) -> Outcome {
    let m = module("shared_device_functions.rs")?;
    let mut out = zeros::<f32>(dev, &[33])?;
    launch(&m, "shared_to_device_fn", dev, Grid::linear(32, 32), (&mut out,))?;
    let mut want = vec![(0..32).sum::<i32>() as f32];
    want.extend((0..32).rev().map(|t| t as f32));
    exact("shared_to_device_fn", &dl(&out)?, &want)?;

    let mut out = zeros::<i32>(dev, &[2])?;
    let mut z = dev.upload_scalar(1i32).ctx("scalar")?;
    launch(&m, "shared_const_expr_len", dev, Grid::linear(32, 32), (&mut out, &mut z))?;
    eq("shared_const_expr_len", &dl(&out)?, &[5, 131])?;
    eq("shared_const_expr_len 0-d", &dl(&z)?, &[12])
}

/// layout_specialised_calls.rs: one device function on a C and an F argument in one kernel;
/// atomics on a 2-d F-order array and a 0-d array.
pub fn layout_specialised_calls(dev: &Device) -> Outcome {
    let m = module("layout_specialised_calls.rs")?;
    let data: Vec<f32> = (0..12).map(|i| i as f32 - 3.0).collect();
    let want: f32 = (0..12).map(|k| data[k] * ((k / 4) * 10 + k % 4) as f32).sum();
    let c = up_nd(dev, &data, &[3, 4])?;
    let f = up_f(dev, &data, &[3, 4])?;
    let (v, _, _) = up_strided(dev, &data, &[3, 4], 0.0f32)?;
    let mut out = zeros::<f32>(dev, &[2])?;
    launch(&m, "weighted_two_layouts", dev, Grid::linear(1, 1), (&c, &f, &mut out))?;
    exact("weighted_two_layouts (C, F)", &dl(&out)?, &[want, want])?;
    launch(&m, "weighted_two_layouts", dev, Grid::linear(1, 1), (&v, &c, &mut out))?;
    exact("weighted_two_layouts (strided, C)", &dl(&out)?, &[want, want])?;

    let idx: Vec<usize> = (0..500).map(|i| i * 13 + 5).collect();
    let mut a = dev.alloc_with_order::<u32>(&[5, 4], Order::F).ctx("alloc F")?;
    let mut last = dev.upload_scalar(-1i32).ctx("scalar")?;
    launch(&m, "atomic_counts_2d", dev, Grid::linear(500, 64), (&up(dev, &idx)?, &mut a, &mut last))?;
    let mut want = vec![0u32; 20];
    for v in &idx {
        want[(v % 5) * 4 + (v / 7) % 4] += 1;
    }
    eq("atomic_counts_2d", &dl(&a)?, &want)?;
    eq("atomic_counts_2d 0-d max", &dl(&last)?, &[499])
}

/// ranges_signed.rs: signed and empty ranges, short-circuited side effects, labelled `while`.
pub fn ranges_signed(dev: &Device) -> Outcome {
    let m = module("ranges_signed.rs")?;
    let mut out = zeros::<i64>(dev, &[7])?;
    launch(&m, "signed_ranges", dev, Grid::linear(1, 1), (&mut out,))?;
    let s2 = (-10i64..10).step_by(3).fold(0i64, |acc, i| acc * 2 + i);
    eq("signed_ranges", &dl(&out)?, &[-3, 6, s2, 0, 1 << 40, 1000, 20])
}

/// float_edge_cases.rs: methods at NaN, infinities, signed zeros, halves and just below one
/// half (libdevice's `hypot` to a tolerance, everything else exact).
pub fn float_edge_cases(dev: &Device) -> Outcome {
    let m = module("float_edge_cases.rs")?;
    let x = vec![
        f32::NAN,
        -2.5,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.5,
        -3.5,
        2.5,
        -7.0,
        1e-45,
        -0.4,
        0.49999997,
        -0.49999997,
        8388609.0,
        -8388609.0,
        1.5,
        -1.5,
    ];
    let n = x.len();
    let mut out = zeros::<f32>(dev, &[n, 10])?;
    launch(&m, "float_edges", dev, Grid::linear(n, 8), (&up(dev, &x)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f32> = x
        .iter()
        .flat_map(|v| [v.min(1.0), v.max(1.0), v.round(), v.abs(), v.hypot(3.0), v.floor(), v.sqrt(), -v, v.ceil(), v.trunc()])
        .collect();
    for (c, what) in ["min(1)", "max(1)", "round", "abs", "hypot(3)", "floor", "sqrt", "neg", "ceil", "trunc"].iter().enumerate() {
        let (g, w) = (column(&got, 10, c), column(&want, 10, c));
        if c == 4 {
            close(&format!("float_edges f32 {what}"), &g, &w, 2e-7, 0.0)?;
        } else {
            exact(&format!("float_edges f32 {what} (inputs {x:?})"), &g, &w)?;
        }
    }

    let x = vec![
        f64::NAN,
        -2.5,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.5,
        -3.5,
        5.0e-324,
        7.25,
        0.49999999999999994,
        -0.49999999999999994,
        4503599627370497.0,
        -4503599627370497.0,
    ];
    let n = x.len();
    let mut out = zeros::<f64>(dev, &[n, 8])?;
    launch(&m, "float_edges_f64", dev, Grid::linear(n, 8), (&up(dev, &x)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f64> =
        x.iter().flat_map(|v| [v.min(1.0), v.max(1.0), v.round(), v.abs(), v.sqrt(), v.floor() + v.ceil(), v * 0.0, 1.0 / v]).collect();
    for (c, what) in ["min(1)", "max(1)", "round", "abs", "sqrt", "floor + ceil", "* 0", "1 /"].iter().enumerate() {
        exact(&format!("float_edges f64 {what} (inputs {x:?})"), &column(&got, 8, c), &column(&want, 8, c))?;
    }
    Ok(())
}

/// many_params.rs: one parameter of every scalar type plus arrays of rank 0, 1 and 2.
pub fn many_params(dev: &Device) -> Outcome {
    let m = module("many_params.rs")?;
    let y = up_nd(dev, &[0.0f64, 1.0, 2.0, 3.0], &[2, 2])?;
    let z = dev.upload_scalar(-4i32).ctx("scalar")?;
    let x = up(dev, &[10.0f32, 0.0, 0.0])?;
    let mut out = zeros::<f64>(dev, &[2])?;
    launch(&m, "many_params", dev, Grid::linear(1, 1), (-1i32, 2u32, -3i64, 4u64, 5usize, 0.5f32, 0.25f64, true, &x, &y, &z, &mut out))?;
    exact("many_params", &dl(&out)?, &[-1.0 + 2.0 - 3.0 + 4.0 + 5.0 + 0.5 + 0.25 + 1.0 + 10.0 + 3.0 - 4.0, 3.0])?;
    launch(&m, "many_params", dev, Grid::linear(1, 1), (0i32, 0u32, 0i64, 0u64, 0usize, 0.0f32, 0.0f64, false, &x, &y, &z, &mut out))?;
    exact("many_params (false)", &dl(&out)?, &[10.0 + 3.0 - 4.0, -1.0])
}

/// precedence_literals.rs: the same expressions evaluated by rustc and by the kernel.
pub fn precedence_literals(dev: &Device) -> Outcome {
    let m = module("precedence_literals.rs")?;
    let n = 64;
    let a: Vec<i32> = (0..n).map(|i| (rnd(i) % 101) as i32 - 50).collect();
    let b: Vec<i32> = (0..n).map(|i| (rnd(i + 300) % 101) as i32 - 50).collect();
    let c: Vec<i32> = (0..n).map(|i| (rnd(i + 600) % 101) as i32 - 50).collect();
    let mut out = zeros::<i32>(dev, &[n as usize, 12])?;
    launch(&m, "precedence", dev, Grid::linear(n as usize, 16), (&up(dev, &a)?, &up(dev, &b)?, &up(dev, &c)?, &mut out))?;
    let mut want = Vec::new();
    for i in 0..n as usize {
        let (x, y, z) = (a[i], b[i], c[i]);
        #[allow(clippy::precedence, clippy::nonminimal_bool)]
        want.extend([
            x + y * z,
            x - y - z,
            x * y % 7 / 2,
            x + y << 2 & z | x ^ y,
            -x.abs() + !y & z,
            (x > y && y > z || x == z) as i32,
            (-x as u32 >> 1) as i32,
            x as i64 as i32 * 2 - (y as f32 / 2.0) as i32,
            (x | y) ^ (z & 7) << 1,
            -(x - y) * -z,
            x >> 1 >> 1 << 3,
            (x < 0) as i32 + (y == 0 || z / y > 1) as i32,
        ]);
    }
    eq("precedence", &dl(&out)?, &want)?;

    let (mut oi, mut of, mut ou) = (zeros::<i64>(dev, &[5])?, zeros::<f64>(dev, &[6])?, zeros::<u32>(dev, &[2])?);
    launch(&m, "literals", dev, Grid::linear(1, 1), (&mut oi, &mut of, &mut ou))?;
    eq("literals i64", &dl(&oi)?, &[0x1F + 0o17 + 0b1010 + 1_000, i64::MIN, -1, u32::MAX as i64, -1])?;
    exact("literals f64", &dl(&of)?, &[1e3, 2.5e-1f32 as f64, 2.0f64.sqrt(), std::f32::consts::PI as f64, 1.0, -0.0])?;
    eq("literals u32", &dl(&ou)?, &[1 + 29, 3_000_000_000])?;

    let x: Vec<i32> = vec![5, -1, 0, 1, 10, -7, 3];
    let mut out = up(dev, &vec![-100i32; x.len()])?;
    launch(&m, "never_branches", dev, Grid::linear(x.len(), 4), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = x.iter().map(|&v| if v < 0 { -100 } else { (2 * v).max(1) + 1 + x[0] }).collect();
    eq("never_branches", &dl(&out)?, &want)
}
