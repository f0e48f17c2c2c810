//! Helpers the scenarios share: corpus loading, uploads in every layout, and comparisons
//! that say which elements differ.

use std::fmt::{Debug, Display};
use std::path::PathBuf;

use kache::{Device, DeviceArray, Element, Grid, KernelArgs, Module, Order};

/// What a scenario returns: `Err` with a message that says what differed.
pub type Outcome = Result<(), String>;

/// The repository root (`KACHE_TEST_ROOT` when set, for binaries run elsewhere).
pub fn root() -> PathBuf {
    std::env::var_os("KACHE_TEST_ROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The corpus folder.
pub fn kernels_dir() -> PathBuf {
    root().join("cache-fixtures").join("kernels")
}

pub(super) trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// Loads a corpus file into a fresh in-memory JIT. Contraction is off: the references are Rust's
/// unfused arithmetic, which kache matches to the bit only without `fmad` (on a GPU with it on,
/// `a * b + c` becomes one `fma` and rounds once; docs/language.md).
pub(super) fn module(file: &str) -> Result<Module, String> {
    let jit = kache::Jit::new(kache::Config::in_memory().fmad(false)).ctx("creating the JIT")?;
    jit.load_file(kernels_dir().join(file)).ctx(&format!("loading {file}"))
}

pub(super) fn launch(m: &Module, name: &str, dev: &Device, grid: Grid, args: impl KernelArgs) -> Outcome {
    let k = m.kernel(name).ctx(&format!("kernel {name}"))?;
    k.launch(dev, grid, args).ctx(&format!("launching {name}"))
}

pub(super) fn up<T: Element>(dev: &Device, data: &[T]) -> Result<DeviceArray<T>, String> {
    dev.upload(data).ctx("upload")
}

pub(super) fn up_nd<T: Element>(dev: &Device, data: &[T], shape: &[usize]) -> Result<DeviceArray<T>, String> {
    dev.upload_nd(data, shape, Order::C).ctx("upload_nd")
}

pub(super) fn zeros<T: Element>(dev: &Device, shape: &[usize]) -> Result<DeviceArray<T>, String> {
    dev.alloc::<T>(shape).ctx("alloc")
}

pub(super) fn dl<T: Element>(a: &DeviceArray<T>) -> Result<Vec<T>, String> {
    a.download().ctx("download")
}

/// C-order (row-major) strides in elements.
pub(super) fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The multi-index of linear C-order position `k`.
pub(super) fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = k % shape[d];
        k /= shape[d];
    }
    idx
}

/// `c_data` (logical C order) rearranged into column-major memory order.
pub(super) fn to_f_order<T: Copy>(c_data: &[T], shape: &[usize]) -> Vec<T> {
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
pub(super) fn up_f<T: Element>(dev: &Device, c_data: &[T], shape: &[usize]) -> Result<DeviceArray<T>, String> {
    let a = dev.upload_nd(&to_f_order(c_data, shape), shape, Order::F).ctx("upload_nd (F)")?;
    if a.layout() != kache::Layout::F && shape.iter().filter(|d| **d > 1).count() > 1 {
        return Err(format!("an F-order upload of shape {shape:?} has layout {}", a.layout()));
    }
    Ok(a)
}

/// A strided view, the whole buffer it lies in, and the positions of its elements in the buffer.
pub(super) type Strided<T> = (DeviceArray<T>, DeviceArray<T>, Vec<usize>);

/// A strided view (layout A) holding `c_data`, inside a larger 1-d buffer filled with `fill`:
/// the last stride is 2 and every other stride leaves a gap of one element. Returns the view
/// and the whole buffer (to check that nothing outside the view was written).
pub(super) fn up_strided<T: Element>(dev: &Device, c_data: &[T], shape: &[usize], fill: T) -> Result<Strided<T>, String> {
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
    let signed: Vec<isize> = strides.iter().map(|s| *s as isize).collect();
    let view = base.view(offset, shape, &signed).ctx("view")?;
    if view.layout() != kache::Layout::A {
        return Err(format!("a strided view of shape {shape:?} has layout {}", view.layout()));
    }
    Ok((view, base, positions))
}

/// Checks that a buffer holds `fill` everywhere except at `positions`.
pub(super) fn untouched<T: Element>(what: &str, base: &DeviceArray<T>, positions: &[usize], fill: T) -> Outcome {
    let all = dl(base)?;
    for (k, v) in all.iter().enumerate() {
        if !positions.contains(&k) && *v != fill {
            return Err(format!("{what}: element {k} of the buffer outside the view was overwritten with {v:?}"));
        }
    }
    Ok(())
}

/// The message for elements that differ: how many, and the first few with their values.
pub(super) fn mismatches<T: Debug>(what: &str, got: &[T], want: &[T], bad: &[usize], note: &str) -> Outcome {
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

pub(super) fn eq<T: PartialEq + Debug>(what: &str, got: &[T], want: &[T]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: got {} elements, expected {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    mismatches(what, got, want, &bad, "")
}

/// Floats: NaN matches NaN, infinities must match exactly, others within `abs + rel * |want|`.
pub(super) fn close<T: Copy + Into<f64> + Debug>(what: &str, got: &[T], want: &[T], rel: f64, abs: f64) -> Outcome {
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
pub(super) fn exact<T: Copy + Into<f64> + Debug>(what: &str, got: &[T], want: &[T]) -> Outcome {
    if got.len() != want.len() {
        return Err(format!("{what}: got {} elements, expected {}", got.len(), want.len()));
    }
    let same = |g: f64, w: f64| (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative());
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(got[i].into(), want[i].into())).collect();
    mismatches(what, got, want, &bad, "")
}

/// Column `c` of a row-major matrix with `cols` columns.
pub(super) fn column<T: Copy>(m: &[T], cols: usize, c: usize) -> Vec<T> {
    m.iter().skip(c).step_by(cols).copied().collect()
}

/// A deterministic pseudo-random number (splitmix64 of `i`).
pub(super) fn rnd(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// A pseudo-random float in [lo, hi).
pub(super) fn rndf(i: u64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((rnd(i) >> 11) as f64 / (1u64 << 53) as f64)
}

pub(super) fn blocks(n: usize, b: usize) -> u32 {
    n.div_ceil(b) as u32
}
