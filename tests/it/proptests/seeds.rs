//! Seeds of the property tests: the good kernels of `examples/kernels/` and
//! `cache-fixtures/kernels/`, plus a few written here for what those do not cover.

use super::*;

/// Good kernels written here, covering what the example kernels do not: factories, closures,
/// labels, statics, constants, shared memory, atomics, N-d arrays, casts and math methods.
pub(super) const INLINE_SEEDS: &[&str] = &[
    r#"const N: u32 = 4;
pub(super) static TABLE: [f32; 4] = [0.0, 1.0, 2.0, 4.0];
pub(super) static GRID: [[i32; 2]; 3] = [[1, 2], [3, 4], [5, 6]];

/// Squares.
#[inline]
pub(super) fn sq(v: f32) -> f32 {
    v * v
}

pub(super) fn clamp01(v: f32) -> f32 {
    v.max(0.0).min(1.0)
}

#[kernel]
pub fn mixed(out: &mut [f32], inp: &[f32], n: u32, flag: bool) {
    let i = global_id_x();
    if i >= out.len() {
        return;
    }
    let mut acc = 0.0f32;
    'outer: for r in 0..3 {
        for c in (0..2).step_by(1) {
            if GRID[[r, c]] > 4 {
                break 'outer;
            }
            acc += GRID[[r, c]] as f32;
        }
    }
    let mut k = 0u32;
    while k < N.min(n) {
        k += 1;
        if k % 2 == 0 {
            continue;
        }
        acc = acc.mul_add(0.5, TABLE[(k as usize) % 4]);
    }
    let v = loop {
        break sq(inp[i % inp.len()]) + acc;
    };
    out[i] = if flag { clamp01(v) } else { -v.abs().sqrt() };
}
"#,
    r#"const BLOCK: usize = 128;

#[kernel]
pub fn block_max(x: &[i32], best: &mut [i32], counts: &mut [u32]) {
    let tile = shared_array::<i32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = block_idx_x() as usize * BLOCK + t;
    tile[t] = if i < x.len() { x[i] } else { i32::MIN };
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] = tile[t].max(tile[t + s]);
        }
        sync_threads();
        s >>= 1;
    }
    if t == 0 {
        atomic_max(&mut best[0], tile[0]);
        atomic_add(&mut counts[0], 1);
        let old = atomic_cas(&mut counts[1], 0, 1u32);
        counts[2] = old.wrapping_add(grid_dim_x()) ^ (block_dim_x() << 1);
    }
}
"#,
    r#"#[kernel]
pub fn transpose(a: &Array<f64, 2>, b: &mut Array<f64, 2>, z: &Array<f64, 0>, w: &mut Array<u64, 3>) {
    let r = global_id_y();
    let c = global_id_x();
    if r < a.shape(0) && c < a.shape(1) {
        b[[c, r]] = a[[r, c]] * z[[]] + (a.stride(0) as f64).ln();
    }
    if r == 0 && c == 0 && w.shape(2) > 0 {
        w[[0, 0, 0]] = (u64::MAX >> 3) | (w.len() as u64);
    }
}
"#,
    r#"pub fn make_read(table: &[f32], factor: f32) -> impl Fn(usize) -> f32 {
    move |i: usize| table[i % table.len()] * factor
}

pub fn make_scale(table: &[f32], factor: f32, offset: i64) -> impl Kernel {
    let read = make_read(table, factor);
    let shift = move |v: f32| v + offset as f32;
    move |out: &mut [f32]| {
        let i = global_id_x();
        if i < out.len() {
            out[i] = shift(read(i));
        }
    }
}
"#,
    r#"fn poly(x: f64) -> f64 {
    let a = 1.0;
    let b = -2.5e-3;
    (a * x + b).powi(3) + x.exp() - f64::consts::PI.sin() + x.atan2(0.5)
}

#[kernel]
pub fn eval(x: &[f64], y: &mut [f64], lo: i64, hi: u64, scale: f32) {
    let i = global_id_x();
    if i < x.len() {
        let clamp = (lo as f64).max(x[i]).min(hi as f64);
        let s = scale as f64;
        y[i] = { let t = poly(clamp); t * s } + (i as f64).floor();
    }
}
"#,
];

pub(super) fn read_kernels(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .filter_map(|p| std::fs::read(&p).ok().map(|b| (p.display().to_string(), b)))
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// A good kernel source to mutate.
pub(super) struct Seed {
    /// File path, or `inline N`.
    pub(super) origin: String,
    pub(super) bytes: Vec<u8>,
    /// Whether it must check and compile with no globals bound (the example and inline
    /// kernels); the cache fixtures belong to other tests and may need a host to bind globals.
    pub(super) strict: bool,
}

/// Every seed: example kernels, cache fixture kernels, then the inline ones.
pub(super) static SEEDS: LazyLock<Vec<Seed>> = LazyLock::new(|| {
    let seed = |strict| move |(origin, bytes)| Seed { origin, bytes, strict };
    let mut v: Vec<Seed> = read_kernels(&common::root().join("examples").join("kernels")).into_iter().map(seed(true)).collect();
    v.extend(read_kernels(&common::fixture("kernels")).into_iter().map(seed(false)));
    v.extend(INLINE_SEEDS.iter().enumerate().map(|(i, s)| Seed {
        origin: format!("inline {i}"),
        bytes: s.as_bytes().to_vec(),
        strict: true,
    }));
    v
});
