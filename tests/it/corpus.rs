//! Tests: corpus. Every kernel of `cache-fixtures/kernels/*.rs` compiles to PTX for sm_90 and
//! ptxas accepts it (C layout everywhere, F and A layouts for the N-d kernels); the corpus
//! covers every construct of the language; and the PTX of a few small kernels is pinned by
//! snapshots.

use std::path::PathBuf;

use kache::lang::builtins;
use kache::{Arch, Layout, Specialization, Target};

use crate::common;

fn corpus_files() -> Vec<PathBuf> {
    let dir = common::fixture("kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn sm_90() -> Target {
    Target::Nvptx(Arch::parse("sm_90").expect("sm_90 is supported"))
}

fn load(jit: &kache::Jit, file: &str) -> kache::Module {
    let path = common::fixture("kernels").join(file);
    jit.load_file(&path).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Instances of the corpus's generic kernels that `Module::kernels_to_compile` leaves out (a
/// const parameter, or too many combinations of types), by file.
pub(crate) const NAMED_INSTANCES: &[(&str, &[&str])] = &[
    (
        "generic_conv1d.rs",
        &["conv1d::<f32, 3>", "conv1d::<f64, 5>", "conv1d_tiled::<f32, 7>", "conv1d_tiled::<f16, 3>", "conv1d_tiled::<bf16, 9>"],
    ),
    (
        "generic_matmul_tiled.rs",
        &[
            "matmul_tiled::<8>",
            "matmul_tiled::<16>",
            "matmul_tiled::<32>",
            "matmul_tiled_t::<i64, 16>",
            "matmul_tiled_t::<f64, 8>",
            "matmul_tiled_t::<i8, 32>",
        ],
    ),
    ("generic_dot.rs", &["dot::<i8, i32>", "dot::<u8, u32>", "dot::<f16, f32>", "dot::<f32, f64>"]),
    ("generic_map.rs", &["convert::<u8, f32>", "convert::<f64, i16>", "convert::<i32, u8>", "convert::<f32, bf16>"]),
    (
        "window_const_generic.rs",
        &["moving_average::<4>", "moving_average::<16>", "moving_min::<i32, 3>", "moving_min::<f16, 5>", "moving_min::<u8, 8>"],
    ),
];

/// The kernels and instances of a corpus file to compile: what `Module::kernels_to_compile`
/// lists (every instance of a generic kernel with only type parameters), and the named
/// instances of the others, one at least for each kernel it leaves out.
pub(crate) fn compile_names(m: &kache::Module, file: &str) -> Vec<String> {
    let all = m.kernels_to_compile().unwrap_or_else(|e| panic!("{file}: {e}"));
    let named: Vec<String> =
        NAMED_INSTANCES.iter().filter(|(f, _)| *f == file).flat_map(|(_, n)| n.iter().map(|s| s.to_string())).collect();
    for (sig, why) in &all.left_out {
        let base = sig.split('<').next().unwrap_or(sig);
        assert!(
            named.iter().any(|n| n.starts_with(&format!("{base}::<"))),
            "{file}: generic kernel `{sig}` is left out ({why}) and NAMED_INSTANCES names none of its instances"
        );
    }
    all.names.into_iter().chain(named).collect()
}

/// Whether `kernel` needs libdevice for NVPTX and there is none here: such kernels are skipped
/// with a printed reason (and fail under `KACHE_REQUIRE_PTXAS=1`, like a missing ptxas).
fn lacks_libdevice(m: &kache::Module, kernel: &str) -> bool {
    let Ok(k) = m.kernel(kernel) else { return false };
    if !k.program().uses_libdevice() || kache::toolchain::find_libdevice().is_some() {
        return false;
    }
    if std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
        panic!("{kernel} needs libdevice, which was not found, and KACHE_REQUIRE_PTXAS=1 (`make deps` installs it)");
    }
    eprintln!("skipping {kernel}: it needs libdevice, which was not found (`make deps` installs it, or set KACHE_LIBDEVICE)");
    true
}

/// The PTX of `kernel` with every array parameter in `layout`.
fn ptx(m: &kache::Module, kernel: &str, layout: Layout) -> Result<String, String> {
    let k = m.kernel(kernel).map_err(|e| e.to_string())?;
    let spec = Specialization::uniform(k.program(), layout);
    // sm_90a for a kernel with an instruction only sm_90a has (`wgmma`).
    let target =
        if kache::lang::needs_accelerated(k.program()) { Target::Nvptx(Arch::parse("sm_90a").expect("supported")) } else { sm_90() };
    let c = k.compile(target, &spec).map_err(|e| e.to_string())?;
    c.ptx().map(str::to_owned).ok_or_else(|| "no PTX in an sm_90 artifact".to_string())
}

#[test]
fn corpus_is_large_and_every_file_has_kernels() {
    let files = corpus_files();
    assert!(files.len() >= 30, "the corpus has {} files, expected at least 30", files.len());
    let jit = common::memory_jit();
    let mut kernels = 0;
    for f in &files {
        let name = file_name(f);
        let m = load(&jit, &name);
        let n = m.kernel_names().len();
        assert!(n > 0, "{name} has no #[kernel]");
        if let Err(e) = m.check() {
            panic!("{name} does not type-check:\n{e}");
        }
        kernels += n;
    }
    eprintln!("corpus: {} files, {kernels} kernels", files.len());
}

#[test]
fn every_corpus_kernel_compiles_for_sm_90_and_assembles() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    let mut failures = Vec::new();
    let mut count = 0;
    for f in corpus_files() {
        let name = file_name(&f);
        let m = load(&jit, &name);
        for k in compile_names(&m, &name) {
            count += 1;
            if lacks_libdevice(&m, &k) {
                continue;
            }
            match ptx(&m, &k, Layout::C) {
                Err(e) => failures.push(format!("{name}::{k}: {e}")),
                Ok(text) => {
                    assert!(text.contains(".target sm_90"), "{name}::{k}: PTX is not for sm_90");
                    assert!(
                        text.contains(&format!(".entry {}", kache::abi::symbol_name(&k))),
                        "{name}::{k}: no entry for the kernel in its PTX"
                    );
                    if let Some(p) = &ptxas
                        && let Err(e) = kache::toolchain::ptxas(p, &text, if text.contains(".target sm_90a") { "sm_90a" } else { "sm_90" })
                    {
                        failures.push(format!("{name}::{k}: ptxas rejected the PTX:\n{e}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {count} corpus kernels failed:\n{}", failures.len(), failures.join("\n"));
}

/// Corpus files of the second language (small integers, 16-bit floats, `match` and enums,
/// modules, constant lengths): every kernel compiles for sm_70, sm_80 and sm_90 and ptxas
/// accepts each, since what LLVM emits for `f16`/`bf16` differs by architecture (native
/// instructions from sm_80 and sm_90, `f32` emulation before).
const V2_FILES: &[&str] = &[
    "image_u8.rs",
    "int8_dot.rs",
    "axpy_f16.rs",
    "bf16_elementwise.rs",
    "histogram_small.rs",
    "small_casts.rs",
    "bf16_gemm_tile.rs",
    "state_machine.rs",
    "match_ints.rs",
    "split_kernels.rs",
    "tuples_extremes.rs",
    "welford_tuples.rs",
    "mat3_local_arrays.rs",
    "median_filter_u8.rs",
    "complex_struct.rs",
    "bbox_shared_structs.rs",
    "window_const_generic.rs",
    "nbody_structs.rs",
    // Atomic loads and stores: `ld.volatile`/`st.volatile` on every architecture.
    "atomic_load_store.rs",
];

#[test]
fn v2_corpus_kernels_assemble_for_sm_70_80_and_90() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in V2_FILES {
        let m = load(&jit, file);
        for k in compile_names(&m, file) {
            if lacks_libdevice(&m, &k) {
                continue;
            }
            let kernel = m.kernel(&k).unwrap_or_else(|e| panic!("{file}::{k}: {e}"));
            for arch in ["sm_70", "sm_80", "sm_90"] {
                count += 1;
                let target = Target::Nvptx(Arch::parse(arch).expect("supported"));
                let compiled = kernel.compile(target, &Specialization::uniform(kernel.program(), Layout::C));
                match compiled.map_err(|e| e.to_string()).and_then(|c| c.ptx().map(str::to_owned).ok_or_else(|| "no PTX".into())) {
                    Err(e) => failures.push(format!("{file}::{k} ({arch}): {e}")),
                    Ok(text) => {
                        if let Some(p) = &ptxas
                            && let Err(e) = kache::toolchain::ptxas(p, &text, arch)
                        {
                            failures.push(format!("{file}::{k} ({arch}): ptxas rejected the PTX:\n{e}"));
                        }
                    }
                }
            }
        }
    }
    assert!(count >= 60, "only {count} v2 kernel compiles");
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Kernels with N-d array parameters, compiled with every array in F and in A layout.
const LAYOUT_KERNELS: &[(&str, &str)] = &[
    ("matmul_2d.rs", "matmul"),
    ("matmul_2d.rs", "matmul_tiled"),
    ("matmul_2d.rs", "matvec_i64"),
    ("stencil_3d.rs", "laplacian_7pt"),
    ("stencil_3d.rs", "box_sum_i32"),
    ("transpose.rs", "transpose_naive"),
    ("transpose.rs", "transpose_tiled"),
    ("array_shapes_strides.rs", "describe_1d"),
    ("array_shapes_strides.rs", "describe_3d"),
    ("array_shapes_strides.rs", "describe_4d"),
    ("array_shapes_strides.rs", "sum_last_axis_4d"),
    ("array_shapes_strides.rs", "permute_4d"),
    ("layout_specialised_calls.rs", "weighted_two_layouts"),
    ("layout_specialised_calls.rs", "atomic_counts_2d"),
    ("saxpy.rs", "saxpy"),
    ("array_0d.rs", "write_0d"),
    ("softmax_rows.rs", "softmax_rows"),
    ("operators.rs", "comparisons"),
];

#[test]
fn corpus_kernels_compile_with_f_and_a_layouts() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    for (file, kernel) in LAYOUT_KERNELS {
        let m = load(&jit, file);
        if lacks_libdevice(&m, kernel) {
            continue;
        }
        let c = ptx(&m, kernel, Layout::C).unwrap_or_else(|e| panic!("{file}::{kernel} (C): {e}"));
        for layout in [Layout::F, Layout::A] {
            let text = ptx(&m, kernel, layout).unwrap_or_else(|e| panic!("{file}::{kernel} ({layout}): {e}"));
            if let Some(p) = &ptxas {
                common::assemble(p, &text, &format!("{file}::{kernel} ({layout})"));
            }
            if *kernel == "matmul" && layout == Layout::A {
                assert_ne!(c, text, "matmul: the A specialisation is the same PTX as the C one (strides must come from the arguments)");
            }
        }
    }
}

#[test]
fn corpus_compiles_for_the_host_too() {
    let jit = common::memory_jit();
    let mut failures = Vec::new();
    for f in corpus_files() {
        let name = file_name(&f);
        let m = load(&jit, &name);
        for k in compile_names(&m, &name) {
            let r = m.kernel(&k).and_then(|kk| kk.compile(Target::Host, &Specialization::uniform(kk.program(), Layout::C)));
            if let Err(e) = r {
                failures.push(format!("{name}::{k}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "corpus kernels that do not compile for the host:\n{}", failures.join("\n"));
}

/// Every construct of the language appears somewhere in the corpus (a cheap textual check that
/// keeps the corpus complete as the language grows: new builtins and methods must be added).
#[test]
fn corpus_covers_the_language() {
    let text: String = corpus_files().iter().map(|f| std::fs::read_to_string(f).expect("read corpus file")).collect::<Vec<_>>().join("\n");
    let mut missing = Vec::new();
    let mut need = |what: String, present: bool| {
        if !present {
            missing.push(what);
        }
    };
    for (name, _) in builtins::FUNCTIONS {
        need(format!("builtin `{name}`"), text.contains(&format!("{name}(")) || text.contains(&format!("{name}::<")));
    }
    for m in builtins::METHODS {
        need(format!("method `.{}()`", m.name), text.contains(&format!(".{}(", m.name)));
    }
    for (name, _, _) in builtins::ARRAY_METHODS {
        need(format!("array method `.{name}()`"), text.contains(&format!(".{name}(")));
    }
    for t in ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "usize", "f16", "bf16", "f32", "f64"] {
        need(format!("`&[{t}]`"), text.contains(&format!("&[{t}]")));
        need(format!("`&mut [{t}]`"), text.contains(&format!("&mut [{t}]")));
        need(format!("`{t}` parameter"), text.contains(&format!(": {t},")) || text.contains(&format!(": {t})")));
    }
    for n in 0..=4 {
        need(format!("`&Array<_, {n}>`"), text.contains(&format!(", {n}>")) && text.contains("&Array<"));
        need(format!("`&mut Array<_, {n}>`"), text.contains("&mut Array<") && text.contains(&format!(", {n}>")));
    }
    let constructs = [
        "[[]]",
        "[[i, j]]",
        "[[i, j, k]]",
        "[[p, q, r, l]]",
        "let mut ",
        "let ",
        ": i64 =",
        " as ",
        "mut a: ",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "<<=",
        ">>=",
        "&&",
        "||",
        "!",
        "<<",
        ">>",
        "==",
        "!=",
        "<=",
        ">=",
        "if ",
        "} else {",
        "while ",
        "loop {",
        "break ",
        "for ",
        "..=",
        ").step_by(",
        "'rows:",
        "break 'rows",
        "continue 'cand",
        "continue 'outer",
        "return",
        "const ",
        "static ",
        "[[f64; 2]; 2]",
        "f32::MAX",
        "i32::MIN",
        "f32::consts::PI",
        "as bool",
        "as f32",
        "as f64",
        "as i32",
        "as i64",
        "as u32",
        "as u64",
        "as usize",
        "as i8",
        "as u8",
        "as i16",
        "as u16",
        "as f16",
        "as bf16",
        "f16::MAX",
        "bf16::EPSILON",
        "u8::MAX",
        "i16::MIN",
        "let h: f16 = ",
        "shared_array::<bf16, { TILE * TILE }>",
        "static WEIGHTS: [f32; TAPS]",
        "match ",
        "..=",
        " | ",
        " if ",
        "@ ",
        "enum ",
        "#[repr(u8)]",
        "#[derive(Clone, Copy, PartialEq",
        "use State::*;",
        "mod split_geometry;",
        "use split_geometry::{",
        " as dot2",
        "split_geometry::vector::length2(",
        // Generics.
        "<T: Float>",
        "<T: Int>",
        "<T: Num>",
        "<T: Num, A: Num>",
        "<T: Float, const K: usize>",
        "<const TILE: usize>",
        "where\n",
        "T::ZERO",
        "T::ONE",
        "T::MIN",
        "T::MAX",
        "T::BITS",
        "A::ZERO",
        "as T",
        "as A",
        "as D",
        "shared_array::<T, BLOCK>",
        "shared_array::<f32, { TILE * TILE }>",
        "shared_array::<T, { BLOCK + K - 1 }>",
        "::<T, 3>(",
        "::<T>(",
        "::<_, 2>(",
        "let mut s: T = zero()",
        // Tuples, fixed-size local arrays, structs.
        "-> ((usize, f32), (usize, f32))",
        "let ((i_lo, v_lo), (i_hi, v_hi)) = ",
        "let (row_out, _, col_out) = ",
        "hi.0 = i;",
        ".sin_cos()",
        "let sc: (f64, f64) = ",
        "[[f32; N]; N]",
        "[[0.0f32; N]; N]",
        "for row in m {",
        "for v in win {",
        "[0u8; 9]",
        "mut v: [u8; 9]",
        "[T::MAX; W]",
        "fn min_of<T: Num, const W: usize>(w: [T; W]) -> T",
        "-> [T; W]",
        "min_of(win)",
        "[0.0f32; W]",
        "impl Complex {",
        "fn add(self, ",
        "fn mul(&self, ",
        "fn conj_in_place(&mut self)",
        "-> Self {",
        "Self { re, im }",
        "..Complex::ZERO",
        "const ZERO: Complex = ",
        "shared_array::<Bbox, BLOCK>()",
        "let Bbox { lo, hi, count } = ",
        "lo: Point,",
        "cur: &[Particle], next: &mut [Particle], step: Step",
        "shared_array::<Particle, TILE>()",
        "Particle { mass: 0.0, ..me }",
        "fn advance(&mut self, ",
        "p.advance(acc, step);",
    ];
    for c in constructs {
        need(format!("`{c}`"), text.contains(c));
    }
    assert!(missing.is_empty(), "the corpus does not use: {}", missing.join(", "));
}

/// The PTX of a few small kernels, pinned (LLVM 19, opt level 3, sm_90). A change here is a
/// change of generated code: review it and update with `INSTA_UPDATE=always`.
#[test]
fn ptx_snapshots() {
    let jit = common::memory_jit();
    for (snap, file, kernel) in [
        ("ptx_saxpy", "saxpy.rs", "saxpy"),
        ("ptx_add_i32", "vector_add_ints.rs", "add_i32"),
        ("ptx_histogram_u32", "histogram_atomics.rs", "histogram_u32"),
        ("ptx_scale_by_0d", "array_0d.rs", "scale_by_0d"),
    ] {
        let m = load(&jit, file);
        let text = ptx(&m, kernel, Layout::C).unwrap_or_else(|e| panic!("{file}::{kernel}: {e}"));
        insta::assert_snapshot!(snap, text);
    }
}

// --- Bugs found while writing the corpus (see the `BUG:` reasons) ---

/// The PTX of `kernel` in a module made of `source`.
fn ptx_of_source(source: &str, kernel: &str) -> String {
    let jit = common::memory_jit();
    let m = jit.load_source("bug.rs", source).unwrap_or_else(|e| panic!("{e}"));
    ptx(&m, kernel, Layout::C).unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

/// On NVPTX a device function `step` that calls `step2` (its own name followed by digits) ends
/// up calling itself: LLVM's module linker, for the NVPTX triple, resolves the declaration
/// `__kache_dev_step2` to the already present `__kache_dev_step`. The host backend is not
/// affected. On a GPU `step` hangs in an empty infinite loop, and `norms` of the corpus
/// (`norm` -> `norm2`) recurses until it faults (CUDA_ERROR_ILLEGAL_ADDRESS).
#[test]
fn device_function_names_with_a_digit_suffix_stay_distinct_on_nvptx() {
    let text = ptx_of_source(
        r#"
        fn step2(x: i32) -> i32 { x * 2 }
        fn step(x: i32) -> i32 { step2(x) + 1 }
        #[kernel]
        pub fn k(out: &mut [i32]) {
            let i = global_id_x();
            if i < out.len() { out[i] = step(i as i32); }
        }
        "#,
        "k",
    );
    // The buggy PTX is an empty infinite loop that never stores out[i].
    assert!(text.contains("st.global"), "the kernel no longer stores its result:\n{text}");

    let jit = common::memory_jit();
    let norms = ptx(&load(&jit, "device_functions.rs"), "norms", Layout::C).unwrap();
    // norm2 squares its arguments (square: x * x); the buggy PTX has no multiplication at all.
    assert!(norms.contains("mul.rn.f64"), "norms lost the body of norm2/square:\n{norms}");
}

/// A `let` without a value assigned once on every path (as Rust allows). It was rejected as
/// "cannot assign twice to immutable variable" until the checker stopped counting assignments
/// syntactically; `scopes_shadowing.rs` of the corpus relies on it too.
#[test]
fn deferred_init_in_both_branches_is_accepted() {
    let jit = common::memory_jit();
    let m = jit
        .load_source(
            "deferred.rs",
            r#"
            #[kernel]
            pub fn k(x: &[i32], out: &mut [i32]) {
                let i = global_id_x();
                if i < x.len() {
                    let w;
                    if x[i] > 0 {
                        w = 1;
                    } else {
                        w = 2;
                    }
                    out[i] = w;
                }
            }
            "#,
        )
        .expect("parses");
    let k = m.kernel("k").unwrap_or_else(|e| panic!("a valid kernel was rejected:\n{e}"));
    let dev = kache::Device::host();
    let mut out = dev.alloc::<i32>(&[3]).unwrap();
    k.launch(&dev, kache::Grid::linear(3, 4), (&dev.upload(&[5, -5, 0]).unwrap(), &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1, 2, 2]);
}

/// Definite assignment, as rustc checks it: a `let` without a value must be assigned on every path
/// before it is read (E0381), and, without `mut`, only once on each path (E0384).
#[test]
fn a_let_without_a_value_must_be_assigned_on_every_path_before_it_is_read() {
    let jit = common::memory_jit();
    let check = |body: &str| {
        let src = format!("#[kernel]\npub fn k(out: &mut [i32], c: bool, n: i32) {{\n{body}\n}}\n");
        jit.load_source("deferred.rs", &src).and_then(|m| m.kernel("k")).map(|_| ()).map_err(|e| e.to_string())
    };
    // Read before any assignment, on some path, in a loop's next iteration, by `+=`, after a
    // `while` that may not run, after `&&` whose right side may not run, in a device function.
    for (body, at) in [
        ("let w: i32; out[0] = w + 7;", "deferred.rs:3:22"),
        ("let w: i32; if c { w = 1; } out[0] = w;", "deferred.rs:3:38"),
        ("for i in 0..4 { let w: i32; if i == 0 { w = 1; } out[i] = w; }", "deferred.rs:3:59"),
        ("let mut w: i32; w += 1; out[0] = w;", "deferred.rs:3:17"),
        ("let w: i32; let mut k = 0; while k < n { w = k; k += 1; } out[0] = w;", "deferred.rs:3:68"),
        ("let w: i32; if c && { w = 1; true } { out[0] = 1; } out[1] = w;", "deferred.rs:3:62"),
    ] {
        let e = check(body).expect_err(body);
        assert!(e.contains("used binding `w` isn't initialized") && e.contains(at), "{body}: {e}");
    }
    let e = jit
        .load_source(
            "f.rs",
            "fn f(a: f32) -> f32 { let r: f32; if a > 0.0 { r = a; } r }\n#[kernel]\npub fn k(o: &mut [f32]) { o[0] = f(1.0); }",
        )
        .and_then(|m| m.kernel("k"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("used binding `r` isn't initialized") && e.contains("f.rs:1:57"), "{e}");
    // Assigned on every path: both branches, before every `break` of a `loop`, or the other
    // paths leave (`return`, `continue`); a `loop` left only through `break`.
    for body in [
        "let w: i32; if c { w = 1; } else { w = 2; } out[0] = w;",
        "let w; loop { w = 3; break; } out[0] = w;",
        "let w: i32; if c { w = 1; } else { return; } out[0] = w;",
        "let w: i32; loop { if c { w = 1; break; } else { continue; } } out[0] = w;",
        "let w = if c { let t: i32; t = 5; t } else { 6 }; out[0] = w;",
        "let w: i32; let mut k = 0; while k < n { k += 1; } w = k; out[0] = w;",
    ] {
        check(body).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
    // Without `mut`, assigned once on each path (E0384): not in a loop's next iteration, not
    // after an earlier assignment, not by `+=`; a `let` in a loop body is new each iteration.
    for (body, at) in [
        ("let w; let mut k = 0; while k < 3 { w = k; k += 1; out[0] = w; }", 37),
        ("let w; w = 1; if c { w = 2; } out[0] = w;", 22),
        ("let w: i32; w = 1; w += 1; out[0] = w;", 20),
        ("let w: i32; loop { w = 1; if c { continue; } break; } out[0] = w;", 20),
        ("let w; for i in 0..n { if c { w = i; break; } } w = 0; out[0] = w;", 49),
    ] {
        let e = check(body).expect_err(body);
        assert!(e.contains("cannot assign twice to immutable variable `w`") && e.contains(&format!("deferred.rs:3:{at}")), "{body}: {e}");
    }
    for body in [
        "let w: i32; loop { if c { continue; } w = 1; break; } out[0] = w;",
        "for i in 0..3 { let t; t = i; out[i] = t as i32; }",
        "let mut w; w = 1; w += 1; out[0] = w;",
    ] {
        check(body).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
    // What passes runs: a `let` assigned on each path before it is read.
    let m = jit
        .load_source(
            "paths.rs",
            "#[kernel]\npub fn k(out: &mut [i32]) { let i = global_id_x(); if i < out.len() { let w; if i == 0 { w = 5; } else { w = 7; } out[i] = w; } }",
        )
        .unwrap();
    let dev = kache::Device::host();
    let mut out = dev.alloc::<i32>(&[2]).unwrap();
    m.kernel("k").unwrap().launch(&dev, kache::Grid::linear(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![5, 7]);
}
