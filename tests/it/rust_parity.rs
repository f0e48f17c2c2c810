//! Tests: the language Rust users expect, read against rustc. The kernel files of the language
//! corpus (`cache-fixtures/kernels/lang_*.rs`: traits, operator traits, generic structs,
//! `Option` and enums with fields, closures, associated constants and `const fn`) are valid
//! Rust: with `#[kernel]` taken away and a small prelude that gives `global_id_x()` and its
//! friends, rustc compiles them. One rustc run builds every file into one program that runs
//! each kernel over its grid, one thread after another, and prints the results; kache's host
//! backend must give the same, to the bit (contraction off: Rust never contracts).

use std::fmt::Write as _;
use std::process::Command;

use kache::{Device, Grid};

use super::common;

/// The element type of a case's `(x: &[T], out: &mut [T])`.
#[derive(Clone, Copy, Debug)]
enum Elem {
    F32,
    I32,
}

impl Elem {
    fn rust(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::I32 => "i32",
        }
    }
}

/// Every kernel read against rustc: its file, its name, and its element type. Each takes
/// `(x: &[T], out: &mut [T])` and writes `out[i]` for `i < out.len()`.
const CASES: &[(&str, &str, Elem)] = &[
    ("lang_traits.rs", "shapes", Elem::F32),
    ("lang_traits.rs", "activations", Elem::F32),
    ("lang_traits.rs", "zeros_and_doubles", Elem::I32),
    ("lang_ops.rs", "vectors", Elem::F32),
    ("lang_ops.rs", "ints", Elem::I32),
    ("lang_ops.rs", "mandelbrot", Elem::F32),
    ("lang_ops.rs", "magnitudes", Elem::F32),
    ("lang_option.rs", "options", Elem::F32),
    ("lang_option.rs", "question_mark", Elem::I32),
    ("lang_option.rs", "shapes_enum", Elem::F32),
    ("lang_closures.rs", "closures", Elem::F32),
    ("lang_closures.rs", "stateful", Elem::I32),
    ("lang_generic_structs.rs", "ranges", Elem::F32),
    ("lang_refs_iter.rs", "vec3_refs", Elem::F32),
    ("lang_refs_iter.rs", "places", Elem::F32),
    ("lang_refs_iter.rs", "for_loops", Elem::F32),
    ("lang_refs_iter.rs", "chains", Elem::F32),
    ("lang_refs_iter.rs", "chosen_slices", Elem::F32),
    ("lang_mixed.rs", "generic_more", Elem::F32),
    ("lang_mixed.rs", "traits_more", Elem::F32),
    ("lang_mixed.rs", "options_more", Elem::F32),
    ("lang_porting.rs", "k", Elem::F32),
    ("lang_porting.rs", "k2", Elem::F32),
];

/// Threads per case (two blocks of 32).
const N: usize = 64;

/// The input of element `i`: small values, exact in every type.
fn input_f32(i: usize) -> f32 {
    ((i * 37) % 101) as f32 * 0.125 - 3.0
}

fn input_i32(i: usize) -> i32 {
    ((i * 37) % 101) as i32 - 50
}

/// What the kernels of a file call that is not Rust's: the thread's indices.
const PRELUDE: &str = r#"
    use std::cell::Cell;
    thread_local! { pub static GID: Cell<usize> = const { Cell::new(0) }; }
    pub fn global_id_x() -> usize { GID.with(|g| g.get()) }
    pub fn thread_idx_x() -> u32 { (global_id_x() % 32) as u32 }
    pub fn block_idx_x() -> u32 { (global_id_x() / 32) as u32 }
    pub fn block_dim_x() -> u32 { 32 }
    pub fn grid_dim_x() -> u32 { 2 }
    // Block-level builtins: the files compile natively; no case read against rustc calls them.
    pub fn sync_threads() {}
    pub fn shared_array<T, const N: usize>() -> &'static mut [T] { unimplemented!("shared memory is not emulated") }
"#;

/// The native program: each file a module (its `#[kernel]` lines taken away), and a `main`
/// that runs every case and prints `case index: bits bits ..`.
fn native_program() -> String {
    let mut files: Vec<&str> = CASES.iter().map(|(f, _, _)| *f).collect();
    files.dedup();
    let mut src = String::from("#![allow(warnings)]\nmod prelude {\n");
    src.push_str(PRELUDE);
    src.push_str("}\n");
    for (k, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(common::fixture(&format!("kernels/{f}"))).unwrap();
        let body: String = text.lines().filter(|l| l.trim() != "#[kernel]").map(|l| format!("{l}\n")).collect();
        writeln!(src, "#[allow(warnings)]\nmod file_{k} {{\n    use super::prelude::*;\n{body}\n}}").unwrap();
    }
    src.push_str(
        "fn run<T: Copy + Default>(f: fn(&[T], &mut [T]), x: &[T]) -> Vec<T> {\n    let mut out = vec![T::default(); x.len()];\n    for i in 0..x.len() {\n        prelude::GID.with(|g| g.set(i));\n        f(x, &mut out);\n    }\n    out\n}\nfn main() {\n",
    );
    for (c, (f, kernel, elem)) in CASES.iter().enumerate() {
        let k = files.iter().position(|x| x == f).unwrap();
        let t = elem.rust();
        let input = match elem {
            Elem::F32 => "((i * 37) % 101) as f32 * 0.125 - 3.0",
            Elem::I32 => "((i * 37) % 101) as i32 - 50",
        };
        let bits = match elem {
            Elem::F32 => "v.to_bits()",
            _ => "*v as u32",
        };
        writeln!(
            src,
            "    {{ let x: Vec<{t}> = (0..{N}).map(|i: usize| {input}).collect(); let out = run(file_{k}::{kernel}, &x); \
             println!(\"{c}: {{}}\", out.iter().map(|v| format!(\"{{:08x}}\", {bits})).collect::<Vec<_>>().join(\" \")); }}"
        )
        .unwrap();
    }
    src.push_str("}\n");
    src
}

/// The native program's output, by case.
fn native_results() -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("parity.rs");
    std::fs::write(&main, native_program()).unwrap();
    let exe = tmp.path().join("parity");
    let o = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--edition", "2024", "-O", "-o"])
        .arg(&exe)
        .arg(&main)
        .output()
        .unwrap();
    assert!(o.status.success(), "rustc rejected the language corpus:\n{}", String::from_utf8_lossy(&o.stderr));
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "the native program failed:\n{}", String::from_utf8_lossy(&run.stderr));
    let text = String::from_utf8(run.stdout).unwrap();
    let mut out = vec![String::new(); CASES.len()];
    for line in text.lines() {
        let (c, rest) = line.split_once(": ").unwrap();
        out[c.parse::<usize>().unwrap()] = rest.to_string();
    }
    out
}

/// kache's host backend's result of case `c`, as the native program prints it.
fn kache_result(jit: &kache::Jit, c: usize) -> Result<String, String> {
    let (file, kernel, elem) = CASES[c];
    let m = jit.load_file(common::fixture(&format!("kernels/{file}"))).map_err(|e| e.to_string())?;
    let k = m.kernel(kernel).map_err(|e| e.to_string())?;
    let dev = Device::host();
    let grid = Grid::linear(N, 32);
    let join = |v: Vec<u32>| v.iter().map(|b| format!("{b:08x}")).collect::<Vec<_>>().join(" ");
    Ok(match elem {
        Elem::F32 => {
            let x = dev.upload(&(0..N).map(input_f32).collect::<Vec<_>>()).unwrap();
            let mut out = dev.alloc::<f32>(&[N]).unwrap();
            k.launch(&dev, grid, (&x, &mut out)).map_err(|e| e.to_string())?;
            join(out.download().unwrap().iter().map(|v| v.to_bits()).collect())
        }
        Elem::I32 => {
            let x = dev.upload(&(0..N).map(input_i32).collect::<Vec<_>>()).unwrap();
            let mut out = dev.alloc::<i32>(&[N]).unwrap();
            k.launch(&dev, grid, (&x, &mut out)).map_err(|e| e.to_string())?;
            join(out.download().unwrap().iter().map(|v| *v as u32).collect())
        }
    })
}

#[test]
fn the_language_corpus_computes_what_rustc_computes() {
    let native = native_results();
    let jit = kache::Jit::new(kache::Config::in_memory().fmad(false)).unwrap();
    let mut failures = Vec::new();
    for (c, want) in native.iter().enumerate() {
        let (file, kernel, _) = CASES[c];
        match kache_result(&jit, c) {
            Ok(got) if got == *want => {}
            Ok(got) => failures.push(format!("{file}::{kernel}:\n  rustc: {want}\n  kache: {got}")),
            Err(e) => failures.push(format!("{file}::{kernel}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{} of {} cases differ from rustc:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}
