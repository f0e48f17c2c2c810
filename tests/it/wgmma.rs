//! Tests: the warpgroup MMA of sm_90a (`wgmma_desc`, `wgmma`, its fence, groups and wait,
//! `fence_proxy_async`) on the host backend against float64 references, tiles staged in shared
//! memory through each swizzle; its PTX (assembled by ptxas for sm_90a); the located error for
//! any other architecture; and misuse (a descriptor off its tile, misaligned, or of global
//! memory) as compile or launch errors. Then the mbarriers and bulk copies of sm_90: their PTX,
//! their architectures, and misuse (a barrier outside shared memory, a misaligned or overrunning
//! copy, a wait that can never end) as errors. (Their semantics on the host: the scenario
//! `tensor_bulk_copy`.)
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use kache::{Arch, Device, Error, Grid, Layout, Specialization, Target};

use crate::common;

/// A one-warpgroup GEMM: D (64 x N) = A (64 x K) · B (K x N), A given row-major and B as Bᵀ
/// (N x K) row-major, both staged in shared memory in rows of `SW` bytes, swizzled as the
/// hardware reads them (`swizzle::<B, 3, 3>` of 16-bit elements, `swizzle::<B, 2, 3>` of
/// `f32`s read as tf32); K is split into column blocks of a row's elements, each a tile of its
/// own. `wg_gemm::<T>` is generic over the 16-bit floats; `wg_gemm_tf32` multiplies `f32`s.
fn gemm_source(n: usize, k: usize, sw: usize) -> String {
    let bits = match sw {
        128 => 3,
        64 => 2,
        _ => 1,
    };
    // (signature, element type, element bytes, swizzle's M, K of a `wgmma`) of each kernel.
    let kernels = [("wg_gemm<T: Half>", "T", 2, 3, 16), ("wg_gemm_tf32", "f32", 4, 2, 8)];
    let mut out = String::new();
    for (sig, ty, size, m, kstep) in kernels {
        let per_row = sw / size;
        let name = sig.split('<').next().unwrap();
        out += &format!(
            r#"
/// Element (r, c) of a tile of `rows` rows whose K is split in blocks of {per_row} columns.
fn {name}_at(rows: usize, r: usize, c: usize) -> usize {{
    (c / {per_row}) * rows * {per_row} + swizzle::<{bits}, {m}, 3>(r * {per_row} + c % {per_row})
}}

#[kernel]
pub fn {sig}(a: &[{ty}], bt: &[{ty}], d: &mut [f32]) {{
    let sa = shared_array::<{ty}, {asz}>();
    let sb = shared_array::<{ty}, {bsz}>();
    let t = thread_idx_x() as usize;
    for e in (t..{asz}).step_by(128) {{
        sa[{name}_at(64, e / {k}, e % {k})] = a[e];
    }}
    for e in (t..{bsz}).step_by(128) {{
        sb[{name}_at({n}, e / {k}, e % {k})] = bt[e];
    }}
    fence_proxy_async();
    sync_threads();
    let mut acc = WgAcc::<f32, {n}>([0.0; {regs}]);
    wgmma_fence();
    for kb in 0..{blocks} {{
        for kk in 0..{steps} {{
            let da = wgmma_desc::<{sw}, 64>(&sa[kb * 64 * {per_row} + kk * {kstep}]);
            let db = wgmma_desc::<{sw}, {n}>(&sb[kb * {n} * {per_row} + kk * {kstep}]);
            acc = wgmma(da, db, acc);
        }}
    }}
    wgmma_commit();
    acc = wgmma_wait::<0>(acc);
    let (w, lane) = (t / 32, t % 32);
    let (g, q) = (lane / 4, lane % 4);
    for i in 0..{regs} {{
        d[(16 * w + g + 8 * ((i / 2) % 2)) * {n} + 8 * (i / 4) + 2 * q + i % 2] = acc.x[i];
    }}
}}
"#,
            asz = 64 * k,
            bsz = n * k,
            regs = n / 2,
            blocks = k / per_row,
            steps = per_row / kstep,
        );
    }
    out
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// Values exact in `f16` and `bf16` (8 significant bits or fewer), with fractions.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| ((r() % 64) as f32 - 32.0) / 8.0).collect()
}

fn reference(a: &[f32], bt: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m * n).map(|x| (0..k).map(|p| a[(x / n) * k + p] as f64 * bt[(x % n) * k + p] as f64).sum()).collect()
}

fn run_gemm(n: usize, k: usize, sw: usize, elem: &str) {
    let dev = Device::host();
    let jit = common::memory_jit();
    let module = jit.load_source("wg_gemm.rs", &gemm_source(n, k, sw)).unwrap();
    let (a, bt) = (values(64 * k, 3 + n as u64), values(n * k, 5 + k as u64));
    let want = reference(&a, &bt, 64, n, k);
    let mut d = dev.alloc::<f32>(&[64 * n]).unwrap();
    let grid = Grid::new(1u32, 128u32);
    if elem == "bf16" {
        let conv = |v: &[f32]| v.iter().map(|x| half::bf16::from_f32(*x)).collect::<Vec<_>>();
        let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&bt)).unwrap());
        module.kernel("wg_gemm::<bf16>").unwrap().launch(&dev, grid, (&ad, &bd, &mut d)).unwrap();
    } else if elem == "f16" {
        let conv = |v: &[f32]| v.iter().map(|x| half::f16::from_f32(*x)).collect::<Vec<_>>();
        let (ad, bd) = (dev.upload(&conv(&a)).unwrap(), dev.upload(&conv(&bt)).unwrap());
        module.kernel("wg_gemm::<f16>").unwrap().launch(&dev, grid, (&ad, &bd, &mut d)).unwrap();
    } else {
        // tf32 reads the top 19 bits of each `f32`: low bits set here must not count.
        let noisy = |v: &[f32]| v.iter().map(|x| f32::from_bits(x.to_bits() | 0x0fff)).collect::<Vec<_>>();
        let (ad, bd) = (dev.upload(&noisy(&a)).unwrap(), dev.upload(&noisy(&bt)).unwrap());
        module.kernel("wg_gemm_tf32").unwrap().launch(&dev, grid, (&ad, &bd, &mut d)).unwrap();
    }
    let got = d.download().unwrap();
    // Products of 3 significant bits summed over K <= 128: exact in f32.
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(*g as f64, *w, "{elem} 64 x {n} x {k}, {sw}-byte rows: element ({}, {})", i / n, i % n);
    }
}

#[test]
fn wgmma_gemm_on_the_host_equals_a_float64_reference() {
    // The issue's tile: 64 x 128 x 64 bf16 through the 128-byte swizzle.
    run_gemm(128, 64, 128, "bf16");
    run_gemm(64, 64, 64, "f16");
    run_gemm(256, 32, 32, "bf16");
    run_gemm(8, 128, 128, "f16");
    // tf32: K of 8 a `wgmma`, rows of 32, 16 or 8 `f32`s.
    run_gemm(128, 64, 128, "f32");
    run_gemm(64, 32, 64, "f32");
    run_gemm(256, 16, 32, "f32");
}

/// Every form assembles for sm_90a (ptxas, where there is one), checked and unchecked, with the
/// accumulator in registers; any other architecture is an error at the first call, naming
/// sm_90a.
#[test]
fn wgmma_assembles_for_sm_90a_and_is_a_located_error_elsewhere() {
    let jit = common::memory_jit();
    let ptxas = common::ptxas();
    let sm90a = Target::Nvptx(Arch::parse("sm_90a").unwrap());
    for (n, k, sw, elem) in [(256, 32, 32, "bf16"), (64, 64, 64, "f16"), (128, 64, 128, "bf16"), (128, 64, 128, "tf32")] {
        let module = jit.load_source("wg_gemm.rs", &gemm_source(n, k, sw)).unwrap();
        let name = if elem == "tf32" { "wg_gemm_tf32".to_string() } else { format!("wg_gemm::<{elem}>") };
        let kernel = module.kernel(&name).unwrap();
        let spec = Specialization::uniform(kernel.program(), Layout::C);
        for checked in [true, false] {
            let c = if checked { kernel.compile(sm90a, &spec) } else { kernel.compile_unchecked(sm90a, &spec) }.unwrap();
            let ptx = c.ptx().unwrap();
            for want in [
                &format!("wgmma.mma_async.sync.aligned.m64n{n}k{}.f32.{elem}.{elem}", if elem == "tf32" { 8 } else { 16 }) as &str,
                "wgmma.fence.sync.aligned;",
                "wgmma.commit_group.sync.aligned;",
                "wgmma.wait_group.sync.aligned 0;",
                "fence.proxy.async.shared::cta;",
                ".target sm_90a",
            ] {
                assert!(ptx.contains(want), "n = {n} (checked: {checked}): no `{want}` in\n{ptx}");
            }
            // (At N = 256 the test's store loop of 128 iterations is not unrolled: it indexes
            // the accumulator with its variable.)
            assert!(n > 128 || !ptx.contains(".local"), "n = {n}: the accumulator spilled to local memory");
            if let Some(p) = &ptxas {
                kache::toolchain::ptxas(p, ptx, "sm_90a").unwrap_or_else(|e| panic!("ptxas sm_90a, n = {n}: {e}"));
            }
        }
        for arch in ["sm_90", "sm_80", "sm_70"] {
            let e = kernel.compile(Target::Nvptx(Arch::parse(arch).unwrap()), &spec).unwrap_err();
            let Error::Source(d) = &e else { panic!("{arch}: {e}") };
            let text = d.to_string();
            // The first is `fence_proxy_async` (sm_90) on sm_80 and sm_70, `wgmma_fence` on sm_90.
            let line = |call: &str| {
                let src = gemm_source(n, k, sw);
                let from = src.lines().position(|l| l.contains(&format!("pub fn {}", name.split(':').next().unwrap()))).unwrap();
                from + src.lines().skip(from).position(|l| l.contains(call)).unwrap() + 1
            };
            let want = if arch == "sm_90" {
                format!("wg_gemm.rs:{}:5: `wgmma_fence` needs sm_90a; this compile is for sm_90", line("wgmma_fence()"))
            } else {
                format!(
                    "wg_gemm.rs:{}:5: `fence_proxy_async` needs sm_90 or later; this compile is for {arch}",
                    line("fence_proxy_async()")
                )
            };
            assert!(text.contains(&want), "{arch}: {text}");
        }
    }
    // The host backend runs them all.
    let module = jit.load_source("wg_gemm.rs", &gemm_source(64, 64, 128)).unwrap();
    module
        .kernel("wg_gemm::<bf16>")
        .unwrap()
        .compile(Target::Host, &Specialization::uniform(module.kernel("wg_gemm::<bf16>").unwrap().program(), Layout::C))
        .unwrap();
}

/// Operands are typed: an accumulator of another N, a B of the wrong rows, mixed element types,
/// a descriptor of `f32` or of a swizzle the hardware lacks are compile errors at the operand.
#[test]
fn wgmma_operands_are_typed() {
    let jit = common::memory_jit();
    let cases: [(&str, &str); 6] = [
        (
            "acc = wgmma(wgmma_desc::<128, 64>(&sa[0]), wgmma_desc::<128, 64>(&sb[0]), acc);",
            "`WgDesc<bf16, 64>` (N rows of Bᵀ) does not accumulate into `WgAcc<f32, 128>`",
        ),
        ("acc = wgmma(wgmma_desc::<128, 128>(&sb[0]), wgmma_desc::<128, 128>(&sb[0]), acc);", "the A operand of `wgmma` has 64 rows"),
        ("acc = wgmma(wgmma_desc::<128, 64>(&sa[0]), wgmma_desc::<128, 128>(&sh[0]), acc);", "mismatched operands"),
        ("let x = wgmma_desc::<128, 64>(&si[0]);", "`wgmma` multiplies `f16`, `bf16` or `f32` (as tf32), not `i32`"),
        ("let x = wgmma_desc::<16, 64>(&sa[0]);", "`wgmma_desc` swizzles rows of 32, 64 or 128 bytes, not 16"),
        ("let y = wgmma_wait::<0>(sa[0]);", "`wgmma_wait` passes a `WgAcc<f32, N>` through, not `bf16`"),
    ];
    for (line, want) in cases {
        let src = format!(
            r#"
#[kernel]
pub fn k(out: &mut [f32]) {{
    let sa = shared_array::<bf16, 4096>();
    let sb = shared_array::<bf16, 8192>();
    let sh = shared_array::<f16, 8192>();
    let si = shared_array::<i32, 4096>();
    let mut acc = WgAcc::<f32, 128>([0.0; 64]);
    {line}
    out[0] = acc.x[0];
}}
"#
        );
        let e = match jit.load_source("typed.rs", &src) {
            Err(e) => e.to_string(),
            Ok(m) => m.kernel("k").map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains("typed.rs:9:") && e.contains(want), "`{line}`: {e}");
    }
}

/// A descriptor must describe a tile inside a shared array, from a 32-byte K step of a row
/// that starts a swizzle atom: anything else is a launch error naming the array and element.
#[test]
fn a_descriptor_off_its_tile_is_a_launch_error() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn k(x: &[bf16], at: usize, global: bool, out: &mut [f32]) {
    let sa = shared_array::<bf16, 8192>();
    let mut acc = WgAcc::<f32, 64>([0.0; 32]);
    wgmma_fence();
    let db = wgmma_desc::<128, 64>(&sa[0]);
    if global {
        acc = wgmma(wgmma_desc::<128, 64>(&x[at]), db, acc);
    } else {
        acc = wgmma(wgmma_desc::<128, 64>(&sa[at]), db, acc);
    }
    wgmma_commit();
    acc = wgmma_wait::<0>(acc);
    out[thread_idx_x() as usize] = acc.x[0];
}
"#;
    let module = jit.load_source("desc.rs", src).unwrap();
    let k = module.kernel("k").unwrap();
    let x = dev.upload(&vec![half::bf16::from_f32(1.0); 8192]).unwrap();
    let mut out = dev.alloc::<f32>(&[128]).unwrap();
    let g = Grid::new(1u32, 128u32);
    k.launch(&dev, g, (&x, 48usize, false, &mut out)).unwrap();
    for (at, global, element, problem) in [
        (8usize, false, "element 8 of `sa`", "is not aligned to 32 bytes"),
        (64, false, "element 64 of `sa`", "is not aligned to 1024 bytes"),
        // The 64 rows from row 121 end past the array's 128.
        (121 * 64 + 16, false, "index 11839", "out of bounds for `sa`"),
        (0, true, "element 0 of parameter `x`", "is not in shared memory"),
    ] {
        let e = k.launch(&dev, g, (&x, at, global, &mut out)).unwrap_err().to_string();
        assert!(e.contains(element) && e.contains(problem) && e.contains("desc.rs:"), "at {at}: {e}");
    }
}

/// The mbarriers and the bulk copy: the PTX instructions, assembled for sm_90 and sm_90a; the
/// barrier operations sm_80 has assemble for sm_80; the others are located errors there.
#[test]
fn mbarriers_and_bulk_copies_assemble_for_sm_90_and_are_located_errors_before() {
    let jit = common::memory_jit();
    let ptxas = common::ptxas();
    let m = jit.load_file(common::fixture("kernels").join("tensor_bulk.rs")).unwrap();
    let k = m.kernel("ring_sum").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    for arch in ["sm_90", "sm_90a"] {
        let ptx = k.compile(Target::Nvptx(Arch::parse(arch).unwrap()), &spec).unwrap().ptx().unwrap().to_string();
        for want in [
            "mbarrier.init.shared.b64",
            "mbarrier.arrive.shared.b64",
            "mbarrier.arrive.expect_tx.shared.b64",
            "mbarrier.try_wait.parity.shared.b64",
            "mbarrier.inval.shared.b64",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            "fence.proxy.async.shared::cta",
        ] {
            assert!(ptx.contains(want), "{arch}: no `{want}` in\n{ptx}");
        }
        if let Some(p) = &ptxas {
            kache::toolchain::ptxas(p, &ptx, arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}"));
        }
    }
    let e = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &spec).unwrap_err().to_string();
    assert!(e.contains("tensor_bulk.rs:20:5") && e.contains("`fence_proxy_async` needs sm_90 or later; this compile is for sm_80"), "{e}");
    let src = r#"
#[kernel]
pub fn bar80(out: &mut [u32]) {
    let bar = shared_array::<u64, 2>();
    if thread_idx_x() == 0 {
        mbarrier_init(&mut bar[1], 1);
    }
    sync_threads();
    mbarrier_arrive(&mut bar[1]);
    sync_threads();
    mbarrier_inval(&mut bar[1]);
    out[0] = 1;
}
#[kernel]
pub fn wait90(out: &mut [u32]) {
    let bar = shared_array::<u64, 1>();
    out[0] = mbarrier_try_wait_parity(&bar[0], 0) as u32;
}
"#;
    let m = jit.load_source("bar.rs", src).unwrap();
    let k = m.kernel("bar80").unwrap();
    let ptx = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap();
    if let Some(p) = &ptxas {
        kache::toolchain::ptxas(p, ptx.ptx().unwrap(), "sm_80").unwrap_or_else(|e| panic!("ptxas sm_80: {e}"));
    }
    let k = m.kernel("wait90").unwrap();
    let e = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap_err();
    assert!(e.to_string().contains("bar.rs:17:14") && e.to_string().contains("`mbarrier_try_wait_parity` needs sm_90 or later"), "{e}");
}

/// A barrier outside shared memory, a bulk copy misaligned or past its arrays' ends are launch
/// errors naming the array and element; a wait for a phase that never completes is the host's
/// deadlock error, not a hang; a barrier of another type or a copy of a size the instruction
/// lacks is a compile error.
#[test]
fn misused_barriers_and_bulk_copies_are_errors() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn k(x: &[f32], gbar: &mut [u64], dst_at: usize, src_at: usize, global_bar: bool, copies: bool, out: &mut [f32]) {
    let tile = shared_array::<f32, 256>();
    let bar = shared_array::<u64, 1>();
    if thread_idx_x() == 0 {
        if global_bar {
            mbarrier_init(&mut gbar[0], 1);
        }
        mbarrier_init(&mut bar[0], 1);
        mbarrier_arrive_expect_tx(&mut bar[0], 512);
        if copies {
            cp_async_bulk::<512>(&mut tile[dst_at], &x[src_at], &mut bar[0]);
        }
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    out[thread_idx_x() as usize] = tile[thread_idx_x() as usize];
}
"#;
    let m = jit.load_source("bulk.rs", src).unwrap();
    let k = m.kernel("k").unwrap();
    let xs: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let x = dev.upload(&xs).unwrap();
    let mut gbar = dev.alloc::<u64>(&[1]).unwrap();
    let mut out = dev.alloc::<f32>(&[32]).unwrap();
    let g = Grid::new(1u32, 32u32);
    k.launch(&dev, g, (&x, &mut gbar, 0usize, 128usize, false, true, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), xs[128..160].to_vec());
    for (dst_at, src_at, global_bar, copies, want) in [
        (2usize, 0usize, false, true, ["element 2 of `tile`", "is not aligned to 16 bytes"]),
        (0, 200, false, true, ["index 327", "out of bounds for parameter `x`"]),
        (0, 0, true, true, ["element 0 of parameter `gbar`", "is not in shared memory"]),
        (0, 0, false, false, ["deadlock: thread 0 waits in mbarrier_try_wait_parity for the phase of parity 0", "never come"]),
    ] {
        let e = k.launch(&dev, g, (&x, &mut gbar, dst_at, src_at, global_bar, copies, &mut out)).unwrap_err().to_string();
        assert!(want.iter().all(|w| e.contains(w)), "{dst_at} {src_at} {global_bar} {copies}: {e}");
    }
    for (line, want) in [
        (
            "let b = shared_array::<u32, 1>(); mbarrier_arrive(&mut b[0]);",
            "`mbarrier_arrive` takes a barrier, a `u64` in shared memory, not `u32`",
        ),
        (
            "let t = shared_array::<f32, 64>(); let b = shared_array::<u64, 1>(); cp_async_bulk::<24>(&mut t[0], &x[0], &mut b[0]);",
            "`cp_async_bulk` copies a multiple of 16 bytes",
        ),
    ] {
        let src = format!("#[kernel]\npub fn bad(x: &[f32]) {{\n    {line}\n}}\n");
        let e = match jit.load_source("bad.rs", &src) {
            Err(e) => e.to_string(),
            Ok(m) => m.kernel("bad").map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains("bad.rs:3:") && e.contains(want), "{line}: {e}");
    }
}

/// `setmaxnreg_inc`/`setmaxnreg_dec` (sm_90a): a warp-specialised kernel's producer warpgroup
/// gives registers back and its consumers take them. Unchecked code has the instructions (ptxas
/// accepts them); checked code, which cannot know that the plan balances the registers the
/// kernel is given at launch (an unbalanced `inc` waits for ever), has none; sm_90 is a located
/// error naming sm_90a, a count the instruction does not take is a compile error at the
/// constant, and on the host they do nothing (the kernel's result is unchanged).
#[test]
fn setmaxnreg_assembles_for_sm_90a_and_is_checked() {
    let jit = common::memory_jit();
    let src = r#"
#[kernel(max_threads = 384, min_blocks = 1)]
pub fn ws(x: &[f32], out: &mut [f32]) {
    let t = thread_idx_x() as usize;
    if t < 128 {
        setmaxnreg_dec::<40>();
    } else {
        setmaxnreg_inc::<232>();
        out[t - 128] = x[t - 128] * 2.0;
    }
}
"#;
    let module = jit.load_source("ws.rs", src).unwrap();
    let kernel = module.kernel("ws").unwrap();
    let spec = Specialization::uniform(kernel.program(), Layout::C);
    let sm90a = Target::Nvptx(Arch::parse("sm_90a").unwrap());
    let ptx = kernel.compile_unchecked(sm90a, &spec).unwrap().ptx().unwrap().to_string();
    for want in ["setmaxnreg.dec.sync.aligned.u32 40;", "setmaxnreg.inc.sync.aligned.u32 232;"] {
        assert!(ptx.contains(want), "no `{want}` in\n{ptx}");
    }
    let checked = kernel.compile(sm90a, &spec).unwrap().ptx().unwrap().to_string();
    assert!(!checked.contains("setmaxnreg"), "checked code with a setmaxnreg:\n{checked}");
    if let Some(p) = common::ptxas() {
        kache::toolchain::ptxas(&p, &ptx, "sm_90a").unwrap_or_else(|e| panic!("ptxas sm_90a: {e}"));
    }
    let e = kernel.compile(Target::Nvptx(Arch::parse("sm_90").unwrap()), &spec).unwrap_err().to_string();
    assert!(e.contains("ws.rs:6:9: `setmaxnreg_dec` needs sm_90a; this compile is for sm_90"), "{e}");
    let dev = Device::host();
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let xd = dev.upload(&x).unwrap();
    let mut out = dev.alloc::<f32>(&[256]).unwrap();
    kernel.launch(&dev, Grid::new(1u32, 384u32), (&xd, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), x.iter().map(|v| v * 2.0).collect::<Vec<_>>());
    for (line, want) in [
        ("setmaxnreg_inc::<20>();", "`setmaxnreg_inc` sets 24 to 256 registers a thread, a multiple of 8, not 20"),
        ("setmaxnreg_dec::<100>();", "not 100"),
        ("setmaxnreg_inc();", "`setmaxnreg_inc` takes 1 constant generic argument"),
    ] {
        let src = format!("#[kernel]\npub fn bad(x: &[f32]) {{\n    {line}\n}}\n");
        let e = match jit.load_source("bad.rs", &src) {
            Err(e) => e.to_string(),
            Ok(m) => m.kernel("bad").map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains("bad.rs:3:") && e.contains(want), "{line}: {e}");
    }
}
