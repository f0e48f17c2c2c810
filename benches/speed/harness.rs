//! What every part of the suite shares: the run's state, measuring a row (and a kernel's usual
//! rows), problem sizes, inputs from a fixed seed.

use kache::{Device, Jit, Layout, Module, Specialization, Target};

use super::gpu::{Gpu, Nvrtc, time};
use super::{Options, Report, Row};

pub use super::gpu::{A, zero_words};

/// The grid of the grid-strided kernels (reductions, histogram): as many blocks of 256 as keep
/// every SM busy, the same for both implementations.
pub const STRIDED_BLOCKS: u32 = 1056;

/// The state of one run.
pub struct Run<'a> {
    pub opts: &'a Options,
    pub dev: Device,
    pub jit: Jit,
    /// The modules of `KACHE_SOURCES`.
    pub kache: Vec<Module>,
    pub gpu: Option<Gpu>,
    pub report: Report,
}

impl<'a> Run<'a> {
    pub fn new(opts: &'a Options, dev: Device, jit: Jit, kache: Vec<Module>, gpu: Option<Gpu>) -> Run<'a> {
        Run { opts, report: Report { device: dev.describe(), ..Default::default() }, dev, jit, kache, gpu }
    }

    /// A problem size: `full` on the GPU, `host` in a dry run (small: the dry run is part of
    /// the test suite, on two cores) or with `--small`.
    pub fn size(&self, full: usize, host: usize) -> usize {
        if self.full_size() { full } else { host }
    }

    /// Whether this run measures the GPU's problem sizes (on a GPU, without `--small`).
    pub fn full_size(&self) -> bool {
        self.gpu.is_some() && !self.opts.small
    }

    /// Adds one row for `imp`: checks the first launch with `verify`, then times. A launch or a
    /// check that fails makes a failed row (and the rest of the part still runs); the error is
    /// returned only for what the row cannot record.
    pub fn measure(
        &mut self,
        kernel: &str,
        bytes: Option<f64>,
        flops: Option<f64>,
        imp: &str,
        mut launch: impl FnMut(&Self) -> Result<(), String>,
        verify: &dyn Fn(&Self) -> Result<String, String>,
    ) -> Result<(), String> {
        let mut once = || -> Result<(String, f64, f64), String> {
            launch(self)?;
            self.dev.synchronize().map_err(|e| e.to_string())?;
            let check = verify(self)?;
            let (median, min) = if self.gpu.is_some() { time(self.opts, || launch(self))? } else { (0.0, 0.0) };
            Ok((check, median, min))
        };
        let row = match once() {
            Ok((check, median, min)) => {
                let per_s = |x: f64| if median > 0.0 { Some(x / (median * 1e-3) / 1e9) } else { None };
                eprintln!("{kernel:>14} {imp:>6}: {median:9.4} ms  {check}");
                Row {
                    kernel: kernel.into(),
                    implementation: imp.into(),
                    median_ms: median,
                    min_ms: min,
                    gbs: bytes.and_then(per_s),
                    gflops: flops.and_then(per_s),
                    check,
                    ok: true,
                }
            }
            Err(e) => {
                eprintln!("{kernel:>14} {imp:>6}: FAILED: {e}");
                Row::failed(kernel, imp, e)
            }
        };
        self.report.rows.push(row);
        Ok(())
    }

    /// A kernel's usual rows, each after `reset` (which restores what the kernel changes that
    /// its check reads) and checked by `verify` before it is timed: kache's safe launch
    /// (`kache`), the same kernel through `unsafe launch_unchecked` (`unchk`: run only where
    /// the safe launch of the same arguments passed, so it is known to stay in bounds) and,
    /// on the GPU, NVRTC's twin (`nvrtc`). `kache` launches kache's kernel, checked or not
    /// (`kache_launch!`).
    pub fn rows(
        &mut self,
        kernel: &str,
        work: Work,
        reset: &dyn Fn(&Run) -> Result<(), String>,
        kache: &dyn Fn(&Run, bool) -> Result<(), String>,
        nvrtc: &dyn Fn(&Run) -> Result<(), String>,
        verify: &dyn Fn(&Run) -> Result<String, String>,
    ) -> Result<(), String> {
        let (bytes, flops) = work.split();
        reset(self)?;
        self.measure(kernel, bytes, flops, "kache", |r| kache(r, true), verify)?;
        if self.report.rows.last().is_some_and(|r| r.ok) {
            reset(self)?;
            self.measure(kernel, bytes, flops, UNCHECKED, |r| kache(r, false), verify)?;
        } else {
            self.report.rows.push(Row::failed(kernel, UNCHECKED, "not run: the safe launch failed".into()));
        }
        if self.gpu.is_some() {
            reset(self)?;
            self.measure(kernel, bytes, flops, "nvrtc", nvrtc, verify)?;
        }
        Ok(())
    }

    /// The kernel `name` of whichever kache source defines it.
    pub fn k(&self, name: &str) -> Result<kache::Kernel, String> {
        let mut why = Vec::new();
        for m in &self.kache {
            match m.kernel(name) {
                Ok(k) => return Ok(k),
                Err(e) => why.push(e.to_string()),
            }
        }
        Err(format!("kache kernel {name}: {}", why.join("; ")))
    }

    /// The NVRTC side, on the GPU.
    pub fn nvrtc(&self) -> Result<&Nvrtc, String> {
        Ok(&self.gpu.as_ref().ok_or("no GPU")?.nvrtc)
    }
}

/// What a kernel's speed is measured against: the bytes a memory-bound kernel must move at
/// least (its rows report GB/s and the share of the copy roofline), or the floating-point
/// operations a compute-bound kernel does (GFLOP/s and the share of the FMA peak).
#[derive(Clone, Copy, Debug)]
pub enum Work {
    Bytes(f64),
    Flops(f64),
}

impl Work {
    /// `(bytes, flops)`, as `Run::measure` takes them.
    pub fn split(self) -> (Option<f64>, Option<f64>) {
        match self {
            Work::Bytes(b) => (Some(b), None),
            Work::Flops(f) => (None, Some(f)),
        }
    }
}

/// Launches kache kernel `$k` on `$r`'s device with `$grid` and the argument tuple `$args`:
/// a safe launch when `$checked`, else `unsafe launch_unchecked`. The unchecked launch is sound
/// only as `Run::rows` makes it: after a safe launch of the same kernel with the same
/// arguments passed (stayed in bounds and matched the reference).
macro_rules! kache_launch {
    ($k:expr, $r:expr, $grid:expr, $checked:expr, $args:expr) => {{
        let result = if $checked {
            $k.launch(&$r.dev, $grid, $args)
        } else {
            // SAFETY: `Run::rows` runs this unchecked launch only after the safe launch of the
            // same kernel and arguments passed: it stayed in bounds (a fault would have failed
            // it) and matched the reference, and the inputs are the same.
            unsafe { $k.launch_unchecked(&$r.dev, $grid, $args) }
        };
        result.map_err(|e| e.to_string())
    }};
}
pub(crate) use kache_launch;

/// The row name of kache's kernels launched through `unsafe launch_unchecked` (no bounds
/// checks): what safe launches cost is the difference to the `kache` row.
pub const UNCHECKED: &str = "unchk";

/// The row name of the reductions compiled by H200 run 3's rule: the loop unrolled by 4 left
/// free for ptxas to unroll again (it unrolls it to 16 loads, which it does not do to NVRTC's).
/// Today's rule (`src/codegen/lower/loops.rs`) marks it `nounroll` as a grid-strided loop.
pub const FREE_UNROLL: &str = "k-free";

/// kache's bounds-checked PTX of `k` for sm_90 with C layouts.
pub fn sm_90_ptx(k: &kache::Kernel) -> Result<String, String> {
    let target = Target::Nvptx(kache::Arch::parse("sm_90").map_err(|e| e.to_string())?);
    let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).map_err(|e| e.to_string())?;
    Ok(c.ptx().ok_or("no PTX")?.to_string())
}

pub fn rel_err(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(1e-30)
}

/// A xorshift generator from `seed`: inputs from a fixed seed, the same in every run.
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// `n` values uniform in [0, 1) from `seed`.
pub fn uniform_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| (r() >> 40) as f32 / (1u64 << 24) as f32).collect()
}

/// An error's message (for `map_err`).
pub fn msg<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A check's verdict: the worst error `worst` found, against `tolerance`; `what` says what it
/// measures (`max rel err`).
pub fn within(worst: f64, tolerance: f64, what: &str) -> Result<String, String> {
    if worst <= tolerance { Ok(format!("{what} {worst:.1e}")) } else { Err(format!("{what} {worst:e} (tolerance {tolerance:e})")) }
}

/// `count` distinct indices below `n` to check a large result at (all of them when `n` is at
/// most `count`), from a fixed seed.
pub fn samples(n: usize, count: usize, seed: u64) -> Vec<usize> {
    if n <= count {
        return (0..n).collect();
    }
    let mut r = rng(seed);
    (0..count).map(|_| r() as usize % n).collect()
}
