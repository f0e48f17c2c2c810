//! Tests: code as fast as NVRTC's. Floating-point contraction (`fmad`: on by default, off by
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test
//! `Config::fmad(false)`, `--fmad false` and `#[kernel(fmad = false)]`, and keyed), read-only
//! array parameters loaded through `ld.global.nc`, strided loops unrolled by 4 on NVPTX (left
//! to ptxas to unroll again only where the step is a constant, pinned by their PTX), and `for`
//! loops keeping Rust's meaning at the edges of their types.

use kache::{Arch, Config, Device, Grid, Jit, Layout, Specialization, Target};

use crate::common;

fn sm_90() -> Target {
    Target::Nvptx(Arch::parse("sm_90").unwrap())
}

fn ptx_with(config: Config, source: &str, kernel: &str) -> String {
    let jit = Jit::new(config).unwrap();
    let k = jit.load_source("fast.rs", source).unwrap().kernel(kernel).unwrap_or_else(|e| panic!("{e}"));
    let c = k.compile(sm_90(), &Specialization::uniform(k.program(), Layout::C)).unwrap_or_else(|e| panic!("{e}"));
    c.ptx().unwrap().to_string()
}

const AXPY: &str = r#"
#[kernel]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}
#[kernel(fmad = false)]
pub fn axpy_unfused(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}
#[kernel(fmad = true)]
pub fn axpy_fused(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}
"#;

fn fused(ptx: &str) -> bool {
    let fma = ptx.contains("fma.rn.f32");
    let split = ptx.contains("mul.rn.f32") && ptx.contains("add.rn.f32");
    assert!(fma != split, "neither one fma nor a multiply and an add:\n{ptx}");
    fma
}

#[test]
fn contraction_is_on_by_default_and_off_by_config_or_attribute() {
    let on = Config::in_memory();
    assert!(on.fmad, "fmad is on by default, as with nvcc");
    assert!(fused(&ptx_with(on.clone(), AXPY, "axpy")));
    assert!(!fused(&ptx_with(on.clone(), AXPY, "axpy_unfused")), "#[kernel(fmad = false)] overrides the default");
    let off = Config::in_memory().fmad(false);
    assert!(!fused(&ptx_with(off.clone(), AXPY, "axpy")));
    assert!(fused(&ptx_with(off, AXPY, "axpy_fused")), "#[kernel(fmad = true)] overrides Config::fmad(false)");
}

#[test]
fn contraction_is_keyed() {
    let key = |config: Config, kernel: &str| {
        let jit = Jit::new(config).unwrap();
        let k = jit.load_source("fast.rs", AXPY).unwrap().kernel(kernel).unwrap();
        k.explain(sm_90(), &Specialization::uniform(k.program(), Layout::C)).unwrap().key
    };
    let on = key(Config::in_memory(), "axpy");
    assert_ne!(on, key(Config::in_memory().fmad(false), "axpy"), "the option changes the code, so the key");
    // The attribute is part of the program: same body, different attribute, different key; and
    // the attribute wins over the option, whatever the option says.
    assert_ne!(key(Config::in_memory(), "axpy_fused"), key(Config::in_memory(), "axpy_unfused"));
    // A disk cache serves each setting its own PTX.
    let dir = tempfile::tempdir().unwrap();
    let a = ptx_with(Config::in_memory().with_cache_dir(dir.path()), AXPY, "axpy");
    let b = ptx_with(Config::in_memory().with_cache_dir(dir.path()).fmad(false), AXPY, "axpy");
    assert!(fused(&a) && !fused(&b));
}

#[test]
fn the_command_line_takes_fmad() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("axpy.rs");
    std::fs::write(&src, AXPY).unwrap();
    let run = |flag: Option<&str>| {
        let out = work.path().join(format!("axpy-{}.ptx", flag.unwrap_or("default")));
        let mut c = std::process::Command::new(common::kache_bin());
        c.env("KACHE_DIR", work.path().join("cache")).env_remove("KACHE_FMAD").env_remove("KACHE_ARCH");
        c.arg("compile").arg(&src).args(["--kernel", "axpy", "--arch", "sm_90", "-o"]).arg(&out);
        if let Some(f) = flag {
            c.args(["--fmad", f]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(out).unwrap()
    };
    assert!(fused(&run(None)));
    assert!(fused(&run(Some("true"))));
    assert!(!fused(&run(Some("false"))));
    let o = std::process::Command::new(common::kache_bin()).arg("compile").arg(&src).args(["--fmad", "maybe"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "clap rejects a non-boolean");
}

#[test]
fn kernel_options_are_checked() {
    let jit = common::memory_jit();
    for (src, want) in [
        ("#[kernel(fmad = 1)]\npub fn k(x: &mut [f32]) {}", "`fmad` is `true` or `false`"),
        ("#[kernel(fmad = true, fmad = false)]\npub fn k(x: &mut [f32]) {}", "`fmad` is given twice"),
        ("#[kernel(unroll = 4)]\npub fn k(x: &mut [f32]) {}", "unknown kernel option `unroll`"),
        ("#[kernel = true]\npub fn k(x: &mut [f32]) {}", "takes options in parentheses"),
        ("#[kernel(fmad)]\npub fn k(x: &mut [f32]) {}", "malformed `#[kernel(..)]`"),
    ] {
        let e = jit.load_source("opts.rs", src).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("opts.rs:1:"), "{src}: {e}");
    }
}

#[test]
fn a_read_only_array_beside_a_writable_one_loads_through_the_non_coherent_path() {
    let ptx = ptx_with(Config::in_memory(), AXPY, "axpy");
    // x is `&[f32]`: ld.global.nc; y is `&mut [f32]`: a plain load (it is written).
    assert!(ptx.contains("ld.global.nc.f32"), "{ptx}");
    assert!(ptx.lines().any(|l| l.contains("ld.global.f32")), "{ptx}");
    // Through a device function, for N-d arrays and integers too.
    let src = r#"
fn at(m: &Array<u32, 2>, i: usize, j: usize) -> u32 { m[[i, j]] }
#[kernel]
pub fn k(m: &Array<u32, 2>, out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() { out[i] = at(m, i, 0) + at(m, i, 1); }
}"#;
    let ptx = ptx_with(Config::in_memory(), src, "k");
    assert!(ptx.matches("ld.global.nc.u32").count() >= 2, "{ptx}");
    if let Some(p) = common::ptxas() {
        common::assemble(&p, &ptx, "k");
    }
}

/// The PTX of a kernel of the speed suite (benches/speed/kernels.rs), bounds-checked (what a
/// safe launch runs) or not (what `launch_unchecked` runs, and NVRTC's code is).
fn speed_ptx(kernel: &str, checked: bool) -> String {
    let jit = common::memory_jit();
    let m = jit.load_file(common::root().join("benches/speed/kernels.rs")).unwrap();
    let k = m.kernel(kernel).unwrap_or_else(|e| panic!("{e}"));
    let spec = Specialization::uniform(k.program(), Layout::C);
    let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
    c.unwrap_or_else(|e| panic!("{e}")).ptx().unwrap().to_string()
}

/// Each basic block with a `ld.global.nc.f32` in it: its loads, and whether it is marked
/// `.pragma "nounroll"` (which stops ptxas unrolling it further).
fn loop_blocks(ptx: &str) -> Vec<(usize, bool)> {
    let mut out = vec![(0, false)];
    for l in ptx.lines() {
        if l.starts_with("$L__") {
            out.push((0, false));
        }
        let last = out.last_mut().unwrap();
        if l.contains("ld.global.nc.f32") {
            last.0 += 1;
        }
        if l.contains(".pragma \"nounroll\"") {
            last.1 = true;
        }
    }
    out.into_iter().filter(|(n, _)| *n > 0).collect()
}

/// A grid-strided loop (its step known only at run time) and a block-strided one (a constant
/// step), each a load and an add.
const STRIDED: &str = r#"
#[kernel]
pub fn grid_sum(x: &[f32], out: &mut [f32]) {
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut acc = 0.0f32;
    for j in (global_id_x()..x.len()).step_by(stride) {
        acc += x[j];
    }
    atomic_add(&mut out[0], acc);
}
#[kernel]
pub fn row_max(x: &Array<f32, 2>, out: &mut [f32]) {
    let row = block_idx_x() as usize;
    let mut m = 0.0f32;
    for j in (thread_idx_x() as usize..x.shape(1)).step_by(256) {
        m = m.max(x[[row, j]]);
    }
    out[row * 256 + thread_idx_x() as usize] = m;
}
"#;

fn strided_ptx(kernel: &str, checked: bool) -> String {
    let jit = common::memory_jit();
    let k = jit.load_source("strided.rs", STRIDED).unwrap().kernel(kernel).unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
    c.unwrap_or_else(|e| panic!("{e}")).ptx().unwrap().to_string()
}

#[test]
fn strided_loops_unroll_by_four_as_nvidias_compiler_does() {
    // Unrolled by 4: a body of 4 loads and a remainder loop of 1 (in checked code, the copy
    // without checks that a loop versioned for bounds checks runs has the same shape).
    for checked in [false, true] {
        let grid = strided_ptx("grid_sum", checked);
        let block = strided_ptx("row_max", checked);
        // Which unrolled loop ptxas may unroll again follows what ptxas does with NVIDIA's:
        // with a step known only at run time it cannot count the trips of NVVM's loop and
        // leaves it at 4 loads in flight (NVRTC's reductions, at the copy bandwidth), so
        // kache's loop (whose trips ptxas could count) says `nounroll`; with a constant step
        // ptxas unrolls NVVM's loop again, so kache's is left free. Remainders say `nounroll`.
        let (grid_shape, block_shape) = ([(4, true), (1, true)], [(4, false), (1, true)]);
        if checked {
            assert!(loop_blocks(&grid).windows(2).any(|w| w == grid_shape), "{grid}");
            assert!(loop_blocks(&block).windows(2).any(|w| w == block_shape), "{block}");
        } else {
            assert_eq!(loop_blocks(&grid), grid_shape, "{grid}");
            assert_eq!(loop_blocks(&block), block_shape, "{block}");
        }
        if let Some(p) = common::ptxas() {
            common::assemble(&p, &grid, "grid_sum");
            common::assemble(&p, &block, "row_max");
        }
    }
    // The speed suite's reductions (grid-strided) take the first shape.
    for k in ["reduce_block", "reduce_warp"] {
        let ptx = speed_ptx(k, false);
        assert_eq!(loop_blocks(&ptx), vec![(4, true), (1, true)], "{ptx}");
    }
    // The `while` spelling: the same, after the loop as written for steps that may wrap (run
    // only then, so not unrolled).
    let ptx = speed_ptx("reduce_while", false);
    assert_eq!(loop_blocks(&ptx), vec![(1, true), (4, true), (1, true)], "{ptx}");
    // A loop with a barrier in it is not unrolled by a forced count (LLVM could not, and
    // would say so on stderr): the tiled matmul's loop over tiles stays one copy.
    let matmul = speed_ptx("matmul_tiled", false);
    assert_eq!(matmul.matches("bar.sync").count(), 2, "{matmul}");
    assert!(matmul.matches("fma.rn.f32").count() >= 32, "the inner tile loop is unrolled and fused:\n{matmul}");
    if let Some(p) = common::ptxas() {
        common::assemble(&p, &matmul, "matmul_tiled");
    }
}

#[test]
fn a_check_the_range_does_not_prove_stays_in_the_ptx() {
    // `x[j]` is proven by the range; `y[j]` (another array, maybe shorter) is not.
    let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { for j in 0..x.len() { y[j] = x[j]; } }";
    let ptx = ptx_with(Config::in_memory(), src, "k");
    assert!(ptx.contains("atom.global.cas.b32"), "the fault path of `y[j]`:\n{ptx}");
    let proven = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { for j in 0..y.len() { y[j] = 2.0 * y[j]; } }";
    let ptx = ptx_with(Config::in_memory(), proven, "k");
    assert!(!ptx.contains("atom.global.cas.b32"), "every check is proven:\n{ptx}");
}

#[test]
fn loops_over_constants_that_index_a_fixed_size_array_unroll_whole() {
    // An exponential per element: LLVM's own cost model unrolls such a loop by 2 at most and
    // leaves `v` in local memory; unrolled whole, `v` is 16 registers.
    let src = r#"
#[kernel]
pub fn k(x: &[f32], y: &mut [f32]) {
    let t = thread_idx_x() as usize;
    let mut v = [0.0f32; 16];
    for k in 0..16 {
        v[k] = x[t + k * 256];
    }
    let mut s = 0.0f32;
    for k in 0..16 {
        v[k] = if t + k * 256 < y.len() { (v[k] - s).exp() } else { 0.0 };
        s += v[k];
    }
    for k in 0..16 {
        y[t + k * 256] = v[k] * s;
    }
}"#;
    for checked in [true, false] {
        let jit = common::memory_jit();
        let k = jit.load_source("local.rs", src).unwrap().kernel("k").unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
        let ptx = c.unwrap().ptx().unwrap().to_string();
        // Checked code's copy of a loop that a correct launch never runs works on its own copy
        // of `v` in local memory (safety.rs); the code that runs has `v` in registers.
        let local = |code: &str| code.contains("ld.local") || code.contains("st.local");
        assert!(checked || !local(&ptx), "unchecked:\n{ptx}");
        assert!(!ptx.split("$L__").any(|block| block.contains("ex2.approx") && local(block)), "checked {checked}:\n{ptx}");
        assert_eq!(ptx.matches("ex2.approx").count(), 16, "checked {checked}:\n{ptx}");
        if let Some(p) = common::ptxas() {
            common::assemble(&p, &ptx, "k");
        }
    }
}

#[test]
fn checked_strided_loops_run_a_copy_without_checks_shaped_like_unchecked_code() {
    // The reductions' accesses are in bounds at both ends of every launch of the suite, so
    // checked code tests that once before the loop and runs a copy of the loop without checks
    // (codegen/lower/version.rs): the unchecked code's loop blocks (4 loads unrolled, a
    // remainder of 1, both `nounroll`) appear in it unchanged, beside the checked copy.
    for kernel in ["reduce_block", "reduce_warp"] {
        let checked = speed_ptx(kernel, true);
        let unchecked = loop_blocks(&speed_ptx(kernel, false));
        let blocks = loop_blocks(&checked);
        assert!(blocks.windows(unchecked.len()).any(|w| w == unchecked), "{kernel}: {blocks:?} lacks {unchecked:?}:\n{checked}");
        assert!(checked.contains("atom.global.cas.b32"), "{kernel}: the checked copy writes the fault record");
        if let Some(p) = common::ptxas() {
            common::assemble(&p, &checked, kernel);
        }
    }
    // The tiled matmul's inner loop over a tile's shared rows has no check in its fast copy:
    // a block of (at least 4 iterations') shared loads with only the loop's own exit test.
    let matmul = speed_ptx("matmul_tiled", true);
    let clean = matmul.split("$L__").any(|b| b.matches("ld.shared.f32").count() >= 8 && b.matches("setp.").count() <= 1);
    assert!(clean, "no unchecked copy of the inner loop:\n{matmul}");
}

#[test]
fn kernels_and_device_functions_must_progress() {
    let jit = common::memory_jit();
    let k = jit
        .load_source("p.rs", "fn f(x: u32) -> u32 { x + 1 }\n#[kernel]\npub fn k(o: &mut [u32]) { o[0] = f(o[1]); }")
        .unwrap()
        .kernel("k")
        .unwrap();
    let input = kache::codegen::CompileInput {
        program: k.program(),
        spec: &Specialization::uniform(k.program(), Layout::C),
        captures: &[],
        options: Config::in_memory().options(Target::Host),
        libdevice: None,
    };
    let ir = kache::codegen::emit_llvm_ir(&input).unwrap();
    let attrs: Vec<&str> = ir.lines().filter(|l| l.starts_with("attributes #")).collect();
    assert!(attrs.iter().any(|l| l.contains("mustprogress")), "{ir}");
}

/// A call of a device function full of warp collectives, reached from both arms of a divergent
/// branch (lane 0 publishes first), stays one call: every function is `convergent` on NVPTX,
/// as clang makes CUDA's, so LLVM clones no call into the arms of a branch (call-site
/// splitting gave lane 0 its own copy of the speed suite's look-back loop, run by the warp
/// after the other lanes' copy).
#[test]
fn a_call_reaching_warp_collectives_is_not_cloned_into_divergent_branches() {
    for checked in [true, false] {
        let ptx = speed_ptx("scan", checked);
        assert_eq!(ptx.matches("ld.volatile.global").count(), 1, "one look-back loop (checked: {checked}): {ptx}");
        assert_eq!(ptx.matches("vote.sync.all").count(), 1, "one look-back loop (checked: {checked})");
    }
    let jit = common::memory_jit();
    let src = "fn f(x: u32) -> u32 { x + 1 }\nfn g(x: u32) -> u32 { shfl_xor_sync(0xffffffff, x, 1) }\n#[kernel]\npub fn k(o: &mut [u32]) { o[0] = f(o[1]) + g(o[2]); }";
    let k = jit.load_source("c.rs", src).unwrap().kernel("k").unwrap();
    let input = kache::codegen::CompileInput {
        program: k.program(),
        spec: &Specialization::uniform(k.program(), Layout::C),
        captures: &[],
        options: Config::in_memory().options(sm_90()),
        libdevice: None,
    };
    let ir = kache::codegen::emit_llvm_ir(&input).unwrap();
    let groups: Vec<&str> = ir.lines().filter(|l| l.starts_with("attributes #")).collect();
    let of = |name: &str| -> bool {
        let line = ir.lines().find(|l| l.starts_with("define") && l.contains(name)).unwrap_or_else(|| panic!("{name} in {ir}"));
        let group = line.rsplit('#').next().and_then(|g| g.split_whitespace().next()).unwrap_or_else(|| panic!("{line}"));
        groups.iter().any(|a| a.starts_with(&format!("attributes #{group} ")) && a.contains("convergent"))
    };
    assert!(of("@k("), "the kernel reaches a shuffle: {ir}");
}

/// Under `max_threads = 256` the thread index is below 256, so a shared-memory access indexed
/// by it is proven in bounds and its check leaves the safe launch's code; without the bound it
/// stays (a launch may have 1,024 threads).
#[test]
fn launch_bounds_prove_shared_memory_accesses_by_thread_index() {
    let src = |attr: &str| {
        format!(
            "{attr}\npub fn k(x: &mut [u32]) {{ let s = shared_array::<u32, 256>(); let t = thread_idx_x() as usize; s[t] = 1; \
             sync_threads(); if t < x.len() {{ x[t] = s[255 - t]; }} }}"
        )
    };
    let faults = |attr: &str| ptx_with(Config::in_memory(), &src(attr), "k").matches("atom.global.cas.b32").count();
    let (bounded, free) = (faults("#[kernel(max_threads = 256)]"), faults("#[kernel]"));
    assert!(free >= 1, "the unbounded kernel checks its shared accesses");
    assert!(bounded < free, "the bound proves the shared accesses: {bounded} fault sites against {free}");
}

/// `for` over every kind of range keeps Rust's meaning: the same values in the same order as
/// Rust's own iterators, at the edges of each type and with steps past the range.
#[test]
fn ranges_run_as_rust_iterates_them_at_the_edges_of_their_types() {
    let src = r#"
#[kernel]
pub fn walk_u32(lo: u32, hi: u32, step: usize, inclusive: bool, out: &mut [u32], count: &mut [u32]) {
    let mut n = 0;
    if inclusive {
        for i in (lo..=hi).step_by(step) { if (n as usize) < out.len() { out[n as usize] = i; } n += 1; }
    } else {
        for i in (lo..hi).step_by(step) { if (n as usize) < out.len() { out[n as usize] = i; } n += 1; }
    }
    count[0] = n;
}
#[kernel]
pub fn walk_i32(lo: i32, hi: i32, step: usize, inclusive: bool, out: &mut [i32], count: &mut [u32]) {
    let mut n = 0;
    if inclusive {
        for i in (lo..=hi).step_by(step) { if (n as usize) < out.len() { out[n as usize] = i; } n += 1; }
    } else {
        for i in (lo..hi).step_by(step) { if (n as usize) < out.len() { out[n as usize] = i; } n += 1; }
    }
    count[0] = n;
}
"#;
    let jit = common::memory_jit();
    let m = jit.load_source("ranges.rs", src).unwrap();
    let dev = Device::host();
    // One kernel object each: a new one would JIT-compile its host code again.
    let walk_u32 = m.kernel("walk_u32").unwrap();
    let walk_i32 = m.kernel("walk_i32").unwrap();
    let cap = 16usize;
    let edges_u = [0u32, 1, 2, 7, 100, u32::MAX / 2, u32::MAX - 7, u32::MAX - 1, u32::MAX];
    let edges_i = [i32::MIN, i32::MIN + 1, -9, -1, 0, 1, 5, i32::MAX - 3, i32::MAX];
    let steps = [1usize, 2, 3, 7, 1 << 31, (1 << 32) + 1, usize::MAX];
    let mut checked = 0;
    for &lo in &edges_u {
        for &hi in &edges_u {
            for &step in &steps {
                for inclusive in [false, true] {
                    // Rust's own count (exact for these iterators) and first values.
                    let (len, want): (usize, Vec<u32>) = if inclusive {
                        let r = (lo..=hi).step_by(step);
                        (r.size_hint().0, r.take(cap).collect())
                    } else {
                        let r = (lo..hi).step_by(step);
                        (r.size_hint().0, r.take(cap).collect())
                    };
                    if len > 1 << 16 {
                        continue;
                    }
                    let mut out = dev.alloc::<u32>(&[cap]).unwrap();
                    let mut count = dev.alloc::<u32>(&[1]).unwrap();
                    walk_u32.launch(&dev, Grid::linear(1, 1), (lo, hi, step, inclusive, &mut out, &mut count)).unwrap();
                    let n = count.download().unwrap()[0] as usize;
                    let got = out.download().unwrap();
                    assert_eq!(n, len, "u32 {lo}..{}{hi} step {step}", if inclusive { "=" } else { "" });
                    assert_eq!(&got[..n.min(cap)], &want[..], "u32 {lo}..{hi} step {step}");
                    checked += 1;
                }
            }
        }
    }
    for &lo in &edges_i {
        for &hi in &edges_i {
            for &step in &steps {
                for inclusive in [false, true] {
                    // Rust's own count (exact for these iterators) and first values.
                    let (len, want): (usize, Vec<i32>) = if inclusive {
                        let r = (lo..=hi).step_by(step);
                        (r.size_hint().0, r.take(cap).collect())
                    } else {
                        let r = (lo..hi).step_by(step);
                        (r.size_hint().0, r.take(cap).collect())
                    };
                    if len > 1 << 16 {
                        continue;
                    }
                    let mut out = dev.alloc::<i32>(&[cap]).unwrap();
                    let mut count = dev.alloc::<u32>(&[1]).unwrap();
                    walk_i32.launch(&dev, Grid::linear(1, 1), (lo, hi, step, inclusive, &mut out, &mut count)).unwrap();
                    let n = count.download().unwrap()[0] as usize;
                    let got = out.download().unwrap();
                    assert_eq!(n, len, "i32 {lo}..{}{hi} step {step}", if inclusive { "=" } else { "" });
                    assert_eq!(&got[..n.min(cap)], &want[..], "i32 {lo}..{hi} step {step}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

const BOUNDED: &str = r#"
#[kernel(max_threads = 256, min_blocks = 4)]
pub fn scale(x: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() { x[i] = x[i] * 2.0; }
}
#[kernel]
pub fn scale_free(x: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() { x[i] = x[i] * 2.0; }
}
"#;

#[test]
fn launch_bounds_reach_the_ptx_and_the_key_and_refuse_larger_blocks() {
    let ptx = ptx_with(Config::in_memory(), BOUNDED, "scale");
    assert!(ptx.contains(".maxntid 256, 1, 1"), "{ptx}");
    assert!(ptx.contains(".minnctapersm 4"), "{ptx}");
    let free = ptx_with(Config::in_memory(), BOUNDED, "scale_free");
    assert!(!free.contains(".maxntid") && !free.contains(".minnctapersm"), "{free}");
    // Keyed: the same body with and without bounds are two entries.
    let jit = Jit::new(Config::in_memory()).unwrap();
    let m = jit.load_source("b.rs", BOUNDED).unwrap();
    let spec = |k: &kache::Kernel| Specialization::uniform(k.program(), Layout::C);
    let a = m.kernel("scale").unwrap();
    let unbounded = jit.load_source("c.rs", &BOUNDED.replace("#[kernel(max_threads = 256, min_blocks = 4)]", "#[kernel]")).unwrap();
    let c = unbounded.kernel("scale").unwrap();
    assert_ne!(a.compile(sm_90(), &spec(&a)).unwrap().key(), c.compile(sm_90(), &spec(&c)).unwrap().key());
    // A launch within the bounds runs; one with larger blocks is refused before it runs.
    let dev = Device::host();
    let mut x = dev.upload(&[1.0f32; 512]).unwrap();
    a.launch(&dev, Grid::linear(512, 256), (&mut x,)).unwrap();
    assert_eq!(x.download().unwrap(), vec![2.0; 512]);
    let e = a.launch(&dev, Grid::linear(512, 512), (&mut x,)).unwrap_err();
    assert!(matches!(e, kache::Error::BadLaunch(_)), "{e:?}");
    assert!(e.to_string().contains("`max_threads = 256`") && e.to_string().contains("512 threads"), "{e}");
    assert_eq!(x.download().unwrap(), vec![2.0; 512], "nothing ran");
}

#[test]
fn bad_launch_bounds_are_diagnosed_where_they_are_written() {
    let jit = Jit::new(Config::in_memory()).unwrap();
    for (attr, want) in [
        ("#[kernel(min_blocks = 2)]", "`min_blocks` needs `max_threads`"),
        ("#[kernel(max_threads = 2048)]", "`max_threads` is an integer from 1 to 1024"),
        ("#[kernel(max_threads = 0)]", "`max_threads` is an integer from 1 to 1024"),
        ("#[kernel(max_threads = 64, min_blocks = 33)]", "`min_blocks` is an integer from 1 to 32"),
        ("#[kernel(max_threads = 64, max_threads = 64)]", "`max_threads` is given twice"),
        ("#[kernel(max_threads = true)]", "`max_threads` is an integer from 1 to 1024"),
    ] {
        let src = format!("{attr}\npub fn k(x: &mut [f32]) {{ x[0] = 1.0; }}\n");
        let e = jit.load_source("lb.rs", &src).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("lb.rs:1:"), "{attr}: {e}");
    }
}

/// The grid-stride sum spelled as users write it without `for`: `while i < n { ..; i += s; }`
/// (`+=` and `i = i + s`), with the bound a slice length or a parameter.
const WHILE_STRIDED: &str = r#"
#[kernel]
pub fn while_sum(x: &[f32], out: &mut [f32]) {
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut i = global_id_x();
    let mut acc = 0.0f32;
    while i < x.len() {
        acc += x[i];
        i += stride;
    }
    atomic_add(&mut out[0], acc);
}
#[kernel]
pub fn while_sum_n(x: &[f32], n: usize, out: &mut [f32]) {
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut i = global_id_x();
    let mut acc = 0.0f32;
    while i < n {
        acc += x[i];
        i = i + stride;
    }
    atomic_add(&mut out[0], acc);
}
#[kernel]
pub fn while_sum_u32(x: &[f32], n: u32, out: &mut [f32]) {
    let stride = block_dim_x() * grid_dim_x();
    let mut i = block_idx_x() * block_dim_x() + thread_idx_x();
    let mut acc = 0.0f32;
    while i < n {
        acc += x[i as usize];
        i += stride;
    }
    atomic_add(&mut out[0], acc);
}
#[kernel]
pub fn loop_sum(x: &[f32], out: &mut [f32]) {
    let stride = block_dim_x() as usize * grid_dim_x() as usize;
    let mut i = global_id_x();
    let mut acc = 0.0f32;
    loop {
        if i >= x.len() {
            break;
        }
        acc += x[i];
        i += stride;
    }
    atomic_add(&mut out[0], acc);
}
#[kernel]
pub fn loop_end(x: &[f32], start: usize, step: usize, out: &mut [f32], last: &mut [usize]) {
    let mut i = start;
    let mut acc = 0.0f32;
    loop {
        if !(i < x.len()) { break }
        acc += x[i];
        i = i + step;
    }
    out[0] = acc;
    last[0] = i;
}
#[kernel]
pub fn while_end_u32(x: &[f32], start: u32, step: u32, out: &mut [f32], last: &mut [u32]) {
    let mut i = start;
    let mut acc = 0.0f32;
    while i < x.len() as u32 {
        acc += x[i as usize];
        i += step;
    }
    out[0] = acc;
    last[0] = i;
}
#[kernel]
pub fn while_end_i32(x: &[f32], start: i32, n: i32, step: i32, out: &mut [f32], last: &mut [i32]) {
    let mut i = start;
    let mut acc = 0.0f32;
    while i < n {
        if i >= 0 && (i as usize) < x.len() { acc += x[i as usize]; }
        i += step;
    }
    out[0] = acc;
    last[0] = i;
}
#[kernel]
pub fn while_end(x: &[f32], start: usize, step: usize, out: &mut [f32], last: &mut [usize]) {
    let mut i = start;
    let mut acc = 0.0f32;
    while i < x.len() {
        acc += x[i];
        i += step;
    }
    out[0] = acc;
    last[0] = i;
}
"#;

/// A `while` grid-stride loop, and a `loop` whose first statement leaves it (`if i >= n {
/// break; }`), over `usize` or `u32`, get the unrolling the `for .. step_by` spelling gets: 4
/// loads in flight and a remainder of 1, in unchecked code and in the copy without checks of
/// checked code (NVRTC's SASS of the same loops in CUDA C, `int` indices: 4 LDG per trip).
#[test]
fn while_strided_loops_unroll_as_the_for_spelling_does() {
    let jit = common::memory_jit();
    let m = jit.load_source("while.rs", WHILE_STRIDED).unwrap();
    for kernel in ["while_sum", "while_sum_n", "while_sum_u32", "loop_sum"] {
        let k = m.kernel(kernel).unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        for checked in [false, true] {
            let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
            let ptx = c.unwrap().ptx().unwrap().to_string();
            let blocks = loop_blocks(&ptx);
            assert!(blocks.windows(2).any(|w| w == [(4, true), (1, true)]), "{kernel} checked={checked}: {blocks:?}\n{ptx}");
            if let Some(p) = common::ptxas() {
                common::assemble(&p, &ptx, kernel);
            }
        }
    }
}

/// The same loops keep the `while`'s meaning on the host backend: every element summed once,
/// the variable left one step past its last value, and a step so large that `i += s` wraps
/// (where the counted form would be wrong, so the loop runs as written) wrapping as in Rust.
#[test]
fn while_strided_loops_keep_their_meaning_at_the_edges() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let m = jit.load_source("while.rs", WHILE_STRIDED).unwrap();
    let xs: Vec<f32> = (0..1000).map(|v| v as f32).collect();
    let x = dev.upload(&xs).unwrap();
    for (threads, block) in [(1000u32, 128u32), (96, 32), (7, 7), (1, 1)] {
        let mut out = dev.upload(&[0.0f32]).unwrap();
        m.kernel("while_sum").unwrap().launch(&dev, Grid::linear(threads as usize, block), (&x, &mut out)).unwrap();
        assert_eq!(out.download().unwrap(), vec![499500.0], "{threads} threads");
        let mut out = dev.upload(&[0.0f32]).unwrap();
        m.kernel("while_sum_n").unwrap().launch(&dev, Grid::linear(threads as usize, block), (&x, 500usize, &mut out)).unwrap();
        assert_eq!(out.download().unwrap(), vec![124750.0], "{threads} threads, n = 500");
    }
    let k = m.kernel("while_end").unwrap();
    let reference = |start: usize, step: usize| {
        let (mut i, mut acc) = (start, 0.0f32);
        while i < xs.len() {
            acc += xs[i];
            i = i.wrapping_add(step);
        }
        (acc, i)
    };
    let loop_end = m.kernel("loop_end").unwrap();
    for (start, step) in [(0usize, 1usize), (3, 7), (999, 5), (1000, 3), (5000, 1), (5, usize::MAX - 2), (10, usize::MAX - 999)] {
        for k in [&k, &loop_end] {
            let (mut out, mut last) = (dev.upload(&[0.0f32]).unwrap(), dev.upload(&[0usize]).unwrap());
            k.launch(&dev, Grid::linear(1, 1), (&x, start, step, &mut out, &mut last)).unwrap();
            let (acc, i) = reference(start, step);
            assert_eq!((out.download().unwrap()[0], last.download().unwrap()[0]), (acc, i), "start {start}, step {step}");
        }
    }
    // 32-bit variables: a step of 0 (the loop would not end: none here), steps that wrap,
    // and for `i32` negative starts, negative steps and bounds near `i32::MAX`.
    let k = m.kernel("while_end_u32").unwrap();
    for (start, step) in [(0u32, 1u32), (3, 7), (999, 5), (1000, 3), (5, u32::MAX - 2), (10, u32::MAX - 999), (7, 1 << 31)] {
        let (mut acc, mut i) = (0.0f32, start);
        while (i as usize) < xs.len() {
            acc += xs[i as usize];
            i = i.wrapping_add(step);
        }
        let (mut out, mut last) = (dev.upload(&[0.0f32]).unwrap(), dev.upload(&[0u32]).unwrap());
        k.launch(&dev, Grid::linear(1, 1), (&x, start, step, &mut out, &mut last)).unwrap();
        assert_eq!((out.download().unwrap()[0], last.download().unwrap()[0]), (acc, i), "u32 start {start}, step {step}");
    }
    let k = m.kernel("while_end_i32").unwrap();
    let cases = [
        (0i32, 1000i32, 1i32),
        (-50, 1000, 7),
        (-5, 20, 3),
        (999, 1000, 5),
        (5, 1000, i32::MAX - 2),
        (i32::MAX - 10, i32::MAX - 1, 3),
        (i32::MAX - 10, i32::MAX - 5, 2),
        (-20, -3, 2),
        (1000, 5, -3),
    ];
    for (start, n, step) in cases {
        let (mut acc, mut i) = (0.0f32, start);
        while i < n {
            if i >= 0 && (i as usize) < xs.len() {
                acc += xs[i as usize];
            }
            i = i.wrapping_add(step);
        }
        let (mut out, mut last) = (dev.upload(&[0.0f32]).unwrap(), dev.upload(&[0i32]).unwrap());
        k.launch(&dev, Grid::linear(1, 1), (&x, start, n, step, &mut out, &mut last)).unwrap();
        assert_eq!((out.download().unwrap()[0], last.download().unwrap()[0]), (acc, i), "i32 start {start}, n {n}, step {step}");
    }
}

/// A loop over `0..n` per thread (a row's dot product, stepping by one) and its `while`
/// spelling: unrolled by 4 by LLVM and left for ptxas to unroll again, its trip counter
/// counting down to zero (codegen/trip_counts.rs), not merged with the loop's index into one
/// register stepping down, which ptxas does not unroll (8 LDG per trip in SASS against
/// NVRTC's 32; with the counter counting down, 32).
#[test]
fn loops_stepping_by_one_keep_a_counter_ptxas_can_unroll() {
    let src = r#"
#[kernel]
pub fn row_dot(a: &[f32], x: &[f32], cols: usize, y: &mut [f32]) {
    let r = global_id_x();
    if r < y.len() {
        let mut acc = 0.0f32;
        for j in 0..cols { acc += a[r * cols + j] * x[j]; }
        y[r] = acc;
    }
}
#[kernel]
pub fn row_dot_while(a: &[f32], x: &[f32], cols: usize, y: &mut [f32]) {
    let r = global_id_x();
    if r < y.len() {
        let mut acc = 0.0f32;
        let mut j = 0;
        while j < cols { acc += a[r * cols + j] * x[j]; j += 1; }
        y[r] = acc;
    }
}"#;
    let jit = common::memory_jit();
    let m = jit.load_source("row.rs", src).unwrap();
    for kernel in ["row_dot", "row_dot_while"] {
        let k = m.kernel(kernel).unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        for checked in [false, true] {
            let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
            let ptx = c.unwrap().ptx().unwrap().to_string();
            // The unrolled loop: 8 loads (4 trips of 2), not `nounroll`, and no register in it
            // stepping down (the counter that ptxas could not count).
            let unrolled: Vec<&str> = ptx.split("$L__").filter(|b| b.matches("ld.global.nc.f32").count() == 8).collect();
            assert_eq!(
                unrolled.len(),
                1,
                "{kernel} checked={checked}:
{ptx}"
            );
            let block = unrolled[0];
            assert!(!block.contains("nounroll"), "{kernel} checked={checked}: {block}");
            let down = block.lines().any(|l| l.trim_start().starts_with("add.s64") && l.contains(", -"));
            assert!(!down, "{kernel} checked={checked}: a register steps down in\n{block}");
            if let Some(p) = common::ptxas() {
                common::assemble(&p, &ptx, kernel);
            }
        }
    }
    // What it computes, on the host (the rewrite is NVPTX's; the kernels' meaning is one).
    let dev = Device::host();
    let (rows, cols) = (37usize, 23usize);
    let a: Vec<f32> = (0..rows * cols).map(|v| (v % 13) as f32).collect();
    let xv: Vec<f32> = (0..cols).map(|v| (v % 5) as f32).collect();
    let (ad, xd) = (dev.upload(&a).unwrap(), dev.upload(&xv).unwrap());
    for kernel in ["row_dot", "row_dot_while"] {
        let mut y = dev.alloc::<f32>(&[rows]).unwrap();
        m.kernel(kernel).unwrap().launch(&dev, Grid::linear(rows, 32), (&ad, &xd, cols, &mut y)).unwrap();
        let want: Vec<f32> = (0..rows).map(|r| (0..cols).map(|j| a[r * cols + j] * xv[j]).sum()).collect();
        assert_eq!(y.download().unwrap(), want, "{kernel}");
    }
}

/// The fault records (`atom.global.cas`) in `ptx`: one per access whose bounds check stayed.
fn fault_paths(ptx: &str) -> usize {
    ptx.matches("atom.global.cas.b32").count()
}

#[test]
fn a_neighbours_index_under_its_edge_test_needs_no_check() {
    // `x[i - 1]` under `i > 0` and `x[i + 1]` under `i + 1 < x.len()`: both are in bounds
    // (constraint elimination before the standard pipeline, which reads `i > 0` before it
    // becomes `i != 0`; `i - 1` built as `i + (-1)`).
    let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { let i = global_id_x(); \
               if i < y.len() && i > 0 && i + 1 < x.len() { y[i] = x[i - 1] + x[i + 1]; } }";
    assert_eq!(fault_paths(&ptx_with(Config::in_memory(), src, "k")), 0);
    // In two dimensions, written as the speed suite's stencil (`>= 1` too): only the other
    // array's two indices keep their checks (`v` may be smaller than `u`).
    let src = "#[kernel] pub fn k(u: &Array<f32, 2>, v: &mut Array<f32, 2>) { \
               let (i, j) = (global_id_y(), global_id_x()); let (ny, nx) = (u.shape(0), u.shape(1)); \
               if i >= 1 && i + 1 < ny && j > 0 && j + 1 < nx { \
               v[[i, j]] = u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]]; } }";
    assert_eq!(fault_paths(&ptx_with(Config::in_memory(), src, "k")), 2);
    // An edge test that does not cover the index keeps the check, and it still fires.
    let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { let i = global_id_x(); \
               if i < y.len() && i > 0 { y[i] = x[i - 1]; } }";
    assert_eq!(fault_paths(&ptx_with(Config::in_memory(), src, "k")), 1);
    let dev = Device::host();
    let k = common::memory_jit().load_source("edge.rs", src).unwrap().kernel("k").unwrap();
    let x = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[5]).unwrap();
    k.launch(&dev, Grid::linear(5, 8), (&x, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    let mut y = dev.alloc::<f32>(&[6]).unwrap();
    match k.launch(&dev, Grid::linear(6, 8), (&x, &mut y)).unwrap_err() {
        kache::Error::Launch { index, len, .. } => assert_eq!((index, len), (4, 4)),
        other => panic!("expected an out-of-bounds fault, got {other}"),
    }
}

#[test]
fn loops_inside_the_checked_copy_of_a_versioned_loop_stay_rolled() {
    // conv2d's loop over input channels is versioned on its filter's bounds; its 3 x 3 window
    // loops are unrolled in the fast copy and left rolled in the checked one, which a correct
    // launch does not run: 2 loads there, not 18 (whose registers ptxas allocated for the whole
    // kernel: 47 against the unchecked code's 32, now 36).
    let m = common::memory_jit().load_file(common::root().join("benches/speed/kernels/matrix.rs")).unwrap();
    let k = m.kernel("conv2d").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    let loads = |checked: bool| {
        let c = if checked { k.compile(sm_90(), &spec) } else { k.compile_unchecked(sm_90(), &spec) };
        let ptx = c.unwrap().ptx().unwrap().to_string();
        if let Some(p) = common::ptxas() {
            common::assemble(&p, &ptx, "conv2d");
        }
        ptx.matches("ld.global.nc.f32").count()
    };
    let (checked, unchecked) = (loads(true), loads(false));
    assert_eq!(unchecked, 18, "the unchecked window: 9 pairs of loads");
    assert_eq!(checked, unchecked + 2, "the fast copy's 18 loads and the rolled checked copy's 2");
}
