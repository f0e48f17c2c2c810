//! Tests: wide memory accesses (`codegen/lower/align.rs`, `codegen/aligned.rs`). Threads that
//! handle groups of contiguous elements (`cache-fixtures/kernels/wide_access.rs`) move each group
//! in one 8- or 16-byte access in the kernel's aligned copy, behind a test of the arrays'
//! alignment, beside the code as written; safe launches (checked code) and unchecked ones alike.
//! Results on aligned arrays and misaligned views: the `wide_access` scenario (host backend in
//! `semantics.rs`, CUDA in tests/gpu.rs).

use kache::{Arch, Layout, Specialization, Target};

use crate::common;

fn ptx_for(m: &kache::Module, kernel: &str, arch: &str, checked: bool) -> String {
    let k = m.kernel(kernel).unwrap_or_else(|e| panic!("{e}"));
    let spec = Specialization::uniform(k.program(), Layout::C);
    let target = Target::Nvptx(Arch::parse(arch).unwrap());
    let c = if checked { k.compile(target, &spec) } else { k.compile_unchecked(target, &spec) };
    c.unwrap_or_else(|e| panic!("{kernel}: {e}")).ptx().unwrap().to_string()
}

fn ptx_of(m: &kache::Module, kernel: &str, checked: bool) -> String {
    ptx_for(m, kernel, "sm_90", checked)
}

/// The instructions of a PTX text (its lines without comments), each as its opcode.
fn opcodes(ptx: &str) -> Vec<&str> {
    ptx.lines().map(|l| l.split("//").next().unwrap_or("").trim()).filter_map(|l| l.split_whitespace().next()).collect()
}

fn count(ptx: &str, op: &str) -> usize {
    opcodes(ptx).iter().filter(|o| **o == op).count()
}

/// Whether the PTX tests some value's low bits against `mask` (`and.b64 %rd, %rd, 15;`).
fn tests_low_bits(ptx: &str, mask: u64) -> bool {
    ptx.lines().any(|l| l.trim_start().starts_with("and.b") && l.trim_end().ends_with(&format!(", {mask};")))
}

/// A kernel, the wide accesses of its aligned copy, the accesses of its code as written, and the
/// masks of its alignment test (of the arrays' addresses; of a row length in elements).
type Case = (&'static str, &'static [&'static str], &'static [&'static str], &'static [u64]);

#[test]
fn groups_of_contiguous_accesses_move_in_8_and_16_byte_accesses_beside_the_code_as_written() {
    let jit = common::memory_jit();
    let m = jit.load_file(common::fixture("kernels/wide_access.rs")).unwrap();
    let cases: &[Case] = &[
        ("axpy4", &["ld.global.nc.v4.f32", "ld.global.v4.f32", "st.global.v4.f32"], &["ld.global.nc.f32", "st.global.f32"], &[15]),
        ("row_dot", &["ld.global.nc.v4.f32"], &["ld.global.nc.f32"], &[15, 3]),
        ("row_sums", &["ld.global.nc.v4.f32"], &["ld.global.nc.f32"], &[15, 3]),
        ("quads", &["ld.global.nc.v4.f32", "st.global.v4.f32"], &["ld.global.nc.f32", "st.global.f32"], &[15]),
        ("pairs", &["ld.global.nc.v2.f32", "st.global.v2.f32"], &["ld.global.nc.f32", "st.global.f32"], &[7]),
        ("half_pairs", &["ld.global.nc.u32", "st.global.b32"], &["ld.global.nc.u16", "st.global.b16"], &[3]),
        ("scale_bf16x8", &["ld.global.nc.v4.u32", "st.global.v4.b32"], &["ld.global.nc.u16"], &[15]),
        ("mix_u32x4", &["ld.global.nc.v4.u32", "st.global.v4.u32"], &["ld.global.nc.u32", "st.global.u32"], &[15]),
        ("add_f64x2", &["ld.global.nc.v2.f64", "st.global.v2.f64"], &["ld.global.nc.f64", "st.global.f64"], &[15]),
    ];
    let ptxas = common::ptxas();
    for (arch, checked) in [("sm_90", true), ("sm_90", false), ("sm_80", true), ("sm_70", false)] {
        for (kernel, wide, narrow, masks) in cases {
            let ptx = ptx_for(&m, kernel, arch, checked);
            let what = format!("{kernel} ({arch}, checked: {checked})");
            for op in *wide {
                assert!(count(&ptx, op) >= 1, "{what}: no {op}:\n{ptx}");
            }
            for op in *narrow {
                assert!(count(&ptx, op) >= 1, "{what}: no {op} in the code as written:\n{ptx}");
            }
            for mask in *masks {
                assert!(tests_low_bits(&ptx, *mask), "{what}: no test of the low bits against {mask}:\n{ptx}");
            }
            // The aligned copy ends where its returns are marked.
            assert!(ptx.contains("// aligned"), "{what}: no aligned copy:\n{ptx}");
            if let Some(p) = &ptxas
                && let Err(e) = kache::toolchain::ptxas(p, &ptx, arch)
            {
                panic!("ptxas rejected the PTX of {what}:\n{e}\n--- PTX ---\n{ptx}");
            }
        }
    }
    // The row loops' aligned copies load four elements of both the row and the vector at once
    // in their unrolled body.
    let ptx = ptx_of(&m, "row_dot", false);
    assert!(count(&ptx, "ld.global.nc.v4.f32") >= 2, "{ptx}");
}

#[test]
fn a_kernel_whose_aligned_copy_gains_nothing_has_none() {
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}
#[kernel]
pub fn interleave(a: &[u32], b: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < a.len() {
        out[2 * i] = a[i];
        out[2 * i + 1] = b[i];
    }
}
"#;
    let m = jit.load_source("plain.rs", src).unwrap();
    // One element per thread: nothing to widen, no copy.
    for checked in [true, false] {
        let ptx = ptx_of(&m, "saxpy", checked);
        assert!(!ptx.contains("// aligned") && !tests_low_bits(&ptx, 15), "{ptx}");
    }
    // A pair of stores: in checked code the bounds check of `out[2 * i + 1]` stands between
    // them (the guard says nothing of `out`), so the copy gains nothing and is dropped; without
    // checks the pair is one 8-byte store.
    let checked = ptx_of(&m, "interleave", true);
    assert!(!checked.contains("// aligned") && !tests_low_bits(&checked, 7), "{checked}");
    assert!(count(&checked, "st.global.u32") >= 2 && count(&checked, "st.global.v2.u32") == 0, "{checked}");
    let unchecked = ptx_of(&m, "interleave", false);
    assert!(unchecked.contains("// aligned") && tests_low_bits(&unchecked, 7), "{unchecked}");
    assert_eq!(count(&unchecked, "st.global.v2.u32"), 1, "{unchecked}");
}

/// A thread's consecutive elements of a shared array the kernel declares (an sgemm's 4 + 4
/// values a step of K, a tile read along its rows) are one 16-byte shared load: the array's
/// alignment (1024 bytes) and the index's low bits are known once its accesses are in the shared
/// address space, with no run-time test of the array, in safe and unchecked code; a pair that
/// may start anywhere stays 4-byte loads (and the results, on the host, are the elements).
#[test]
fn consecutive_shared_elements_are_one_wide_shared_load() {
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn tile_sums(x: &[f32], out: &mut [f32], shift: usize) {
    let s = shared_array::<f32, 1024>();
    let t = thread_idx_x() as usize;
    for j in 0..4 {
        s[4 * t + j] = x[4 * t + j];
    }
    sync_threads();
    let mut acc = 0.0f32;
    for k in 0..8 {
        let row = (k * 32 + t % 32) * 4;
        for j in 0..4 {
            acc += s[row + j] * (j as f32 + 1.0);
        }
    }
    let b = (4 * t + shift) % 1024;
    out[t] = acc + s[b] + s[(b + 1) % 1024];
}
"#;
    let m = jit.load_source("shared_wide.rs", src).unwrap();
    for checked in [true, false] {
        let ptx = ptx_of(&m, "tile_sums", checked);
        assert!(count(&ptx, "ld.shared.v4.f32") >= 8, "checked {checked}: the 8 row reads are not v4 loads:\n{ptx}");
    }
    let dev = kache::Device::host();
    let x: Vec<f32> = (0..1024).map(|i| (i % 13) as f32).collect();
    let xd = dev.upload(&x).unwrap();
    let mut out = dev.alloc::<f32>(&[256]).unwrap();
    m.kernel("tile_sums").unwrap().launch(&dev, kache::Grid::new(1u32, 256u32), (&xd, &mut out, 1usize)).unwrap();
    let got = out.download().unwrap();
    for (t, g) in got.iter().enumerate() {
        let mut want = 0.0f32;
        for k in 0..8 {
            let row = (k * 32 + t % 32) * 4;
            for j in 0..4 {
                want += x[row + j] * (j as f32 + 1.0);
            }
        }
        let b = (4 * t + 1) % 1024;
        want += x[b] + x[(b + 1) % 1024];
        assert_eq!(*g, want, "thread {t}");
    }
}
