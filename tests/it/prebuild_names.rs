//! The prebuild step under awkward names. A property test generates kernel files whose file,
//! kernel and parameter names include every keyword, the names the generated code itself
//! uses, names alike after the mapping, and non-ASCII ones; runs the real build step; and
//! type-checks the generated code with rustc (`--emit=metadata`, against the kache rlib this
//! test binary links, so a case takes a second or two) under `#![deny(warnings)]` and
//! `#![warn(missing_docs)]`, naming every launch function and accessor by the path that
//! docs/prebuild.md ("Names") gives.

// A failed unwrap in a helper is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

/// Every keyword of every edition (strict, reserved, weak).
const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "gen",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "macro_rules",
    "raw",
    "safe",
    "union",
];

/// Keywords that not even a raw identifier can spell: no kernel or parameter has these names.
const UNSPELLABLE: &[&str] = &["self", "Self", "super", "crate"];

/// Kernel and parameter names that are not keywords but meet the names generated code writes
/// or reads, the prelude, primitive types, or each other after the mapping.
const AWKWARD: &[&str] = &[
    "source",
    "prebuilt",
    "KERNEL",
    "TEXT",
    "KACHE_GLOBALS",
    "kache_device",
    "kache_grid",
    "kache_device_",
    "kache_grid_",
    "arg0",
    "arg1",
    "arg2",
    "arg0_",
    "kache",
    "std",
    "core",
    "f32",
    "u32",
    "str",
    "bool",
    "Result",
    "Device",
    "Grid",
    "Prebuilt",
    "Some",
    "None",
    "Ok",
    "Err",
    "main",
    "Fill",
    "fill",
    "fill_kernel",
    "FILL",
    "café",
    "caf_u00e9",
    "ℝ",
    "µ",
    "_x",
    "x_",
    "__",
    "self_",
    "Self_",
    "launch_with",
    "include_str",
    "global_id_x",
];

/// File names (without `.rs`) beyond the kernel names.
const AWKWARD_FILES: &[&str] = &["my-kernels", "2d", "a.b", "with space", "-", "--x", "日本", "r#loop", "_", "x.rs", "kache_kernels"];

/// Parameter types: the kernel-language spelling and the launch function's Rust type.
const TYPES: &[(&str, &str)] = &[
    ("f32", "f32"),
    ("f64", "f64"),
    ("i32", "i32"),
    ("i64", "i64"),
    ("u32", "u32"),
    ("u64", "u64"),
    ("usize", "usize"),
    ("bool", "bool"),
    ("&[f32]", "&::kache::DeviceArray<f32>"),
    ("&mut [f32]", "&mut ::kache::DeviceArray<f32>"),
    ("&[u32]", "&::kache::DeviceArray<u32>"),
    ("&mut [bool]", "&mut ::kache::DeviceArray<bool>"),
    ("&[i64]", "&::kache::DeviceArray<i64>"),
];

/// The Rust name docs/prebuild.md gives a file stem, kernel or parameter name (without `r#`).
fn documented_name(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        match c {
            c if c.is_ascii_alphanumeric() || c == '_' => s.push(c),
            '-' => s.push('_'),
            c => write!(s, "_u{:04x}", c as u32).unwrap(),
        }
    }
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if ["self", "Self", "super", "crate", "_"].contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// A path segment for a documented name: raw where it is a keyword.
fn segment(rust: &str) -> String {
    if KEYWORDS.contains(&rust) { format!("r#{rust}") } else { rust.to_string() }
}

/// A name as kernel source spells it.
fn spelled(name: &str) -> String {
    if KEYWORDS.contains(&name) { format!("r#{name}") } else { name.to_string() }
}

#[derive(Clone, Debug)]
struct Kernel {
    name: String,
    params: Vec<(String, usize)>,
}

#[derive(Clone, Debug)]
struct File {
    stem: String,
    kernels: Vec<Kernel>,
}

fn kernel_name() -> impl Strategy<Value = String> {
    let keywords: Vec<&str> = KEYWORDS.iter().copied().filter(|k| !UNSPELLABLE.contains(k)).collect();
    prop_oneof![
        proptest::sample::select(keywords).prop_map(str::to_string),
        proptest::sample::select(AWKWARD).prop_map(str::to_string),
        "[a-zA-Z_][a-zA-Z0-9_]{0,6}".prop_filter("`_` names no kernel", |s| s != "_" && !UNSPELLABLE.contains(&s.as_str())),
    ]
}

fn param_name() -> impl Strategy<Value = String> {
    prop_oneof![4 => kernel_name(), 1 => Just("_".to_string())]
}

fn kernel() -> impl Strategy<Value = Kernel> {
    // Up to 14 parameters: more than the 12 a tuple of arguments holds.
    // Parameter names are distinct (`_` aside), as Rust requires (E0415; kache says so too).
    (kernel_name(), proptest::collection::vec((param_name(), 0..TYPES.len()), 0..15)).prop_map(|(name, params)| {
        let mut seen = std::collections::HashSet::new();
        let params = params.into_iter().filter(|(n, _)| n == "_" || seen.insert(n.clone())).collect();
        Kernel { name, params }
    })
}

fn file_stem() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => kernel_name(),
        1 => proptest::sample::select(UNSPELLABLE).prop_map(str::to_string),
        2 => proptest::sample::select(AWKWARD_FILES).prop_map(str::to_string),
        1 => "[a-zA-Z0-9_+ -][a-zA-Z0-9_.+ -]{0,7}",
    ]
}

/// Files with names distinct after the mapping, each with kernels (none, at times) whose names
/// are distinct after the mapping (alike names are an error, tested below).
fn files() -> impl Strategy<Value = Vec<File>> {
    proptest::collection::vec((file_stem(), proptest::collection::vec(kernel(), 0..5)), 1..9).prop_map(|files| {
        let mut modules = BTreeSet::new();
        let mut out = Vec::new();
        for (stem, kernels) in files {
            if !modules.insert(documented_name(&stem)) {
                continue;
            }
            let mut names = BTreeSet::new();
            let kernels = kernels.into_iter().filter(|k| names.insert(documented_name(&k.name))).collect();
            out.push(File { stem, kernels });
        }
        out
    })
}

fn write_kernels(dir: &Path, files: &[File]) {
    std::fs::create_dir_all(dir).unwrap();
    for f in files {
        // A file without kernels still has an item: the language rejects an empty file.
        let mut src = String::from("fn helper() -> f32 {\n    1.0\n}\n\n");
        for k in &f.kernels {
            let params: Vec<String> = k.params.iter().map(|(n, t)| format!("{}: {}", spelled(n), TYPES[*t].0)).collect();
            writeln!(src, "#[kernel]\npub fn {}({}) {{}}\n", spelled(&k.name), params.join(", ")).unwrap();
        }
        std::fs::write(dir.join(format!("{}.rs", f.stem)), src).unwrap();
    }
}

/// The crate that type-checks the generated file: it includes it, and names every function by
/// its documented path with its documented type.
fn check_crate(generated: &Path, files: &[File]) -> String {
    let mut uses = String::new();
    for f in files {
        let module = segment(&documented_name(&f.stem));
        for k in &f.kernels {
            let function = segment(&documented_name(&k.name));
            let types: String = k.params.iter().map(|(_, t)| format!(", {}", TYPES[*t].1)).collect();
            writeln!(
                uses,
                "        let _: fn(&::kache::Device, ::kache::Grid{types}) -> ::kache::Result<()> = super::generated::{module}::{function};"
            )
            .unwrap();
            writeln!(
                uses,
                "        let _: fn() -> &'static ::kache::prebuild::Prebuilt = super::generated::{module}::prebuilt::{function};"
            )
            .unwrap();
        }
    }
    format!(
        "//! Generated code under awkward names.\n#![deny(warnings)]\n#![warn(missing_docs)]\nextern crate kache;\n\
         /// The generated code.\npub mod generated {{\n    include!({:?});\n}}\n\
         /// Every function, by its documented path and type.\npub mod uses {{\n    /// Names them all.\n    pub fn all() {{\n{uses}    }}\n}}\n",
        generated.display().to_string()
    )
}

/// The kache rlib this test binary was linked with, and its dependencies' folder.
fn kache_rlib() -> (PathBuf, PathBuf) {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let rlib = std::fs::read_dir(&deps)
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("libkache-") && name.ends_with(".rlib")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no libkache-*.rlib in {}", deps.display()))
        .path();
    (rlib, deps)
}

/// Type-checks `lib.rs` with rustc as a library of `edition`; `Err` holds rustc's output.
pub(crate) fn rustc_check(lib: &Path, edition: &str) -> Result<(), String> {
    let (rlib, deps) = kache_rlib();
    let out = lib.with_extension("rmeta");
    let o = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--edition", edition, "--crate-type", "lib", "--crate-name", "names_check", "--emit=metadata", "-o"])
        .arg(&out)
        .arg("--extern")
        .arg(format!("kache={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg(lib)
        .output()
        .unwrap();
    if o.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&o.stderr).into_owned()) }
}

fn builder(kernels: &Path, out: &Path) -> kache::prebuild::Builder {
    kache::prebuild::Builder::new()
        .kernels_dir(kernels)
        .out_dir(out)
        .arch("sm_80")
        // PTX, host object code and the generated file are what names reach; ptxas would only
        // make the cases slower.
        .cubins(kache::prebuild::Cubins::Never)
        .config(kache::Config::in_memory())
        .global("GAIN", 2.0f32)
        .global("TAPS", vec![0.25f32, 0.5, 0.25])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, max_shrink_iters: 50, ..ProptestConfig::default() })]

    /// Whatever the names, the generated code compiles warning-free in every edition, and each
    /// function is where the documentation says.
    #[test]
    fn generated_code_compiles_whatever_the_names(files in files(), edition in proptest::sample::select(&["2015", "2018", "2021", "2024"][..])) {
        let tmp = tempfile::tempdir().unwrap();
        let (kernels, out) = (tmp.path().join("kernels"), tmp.path().join("out"));
        write_kernels(&kernels, &files);
        let generated = builder(&kernels, &out).build().map_err(|e| TestCaseError::fail(format!("build step failed: {e}")))?;
        let lib = tmp.path().join("lib.rs");
        std::fs::write(&lib, check_crate(&generated, &files)).unwrap();
        if let Err(e) = rustc_check(&lib, edition) {
            let code = std::fs::read_to_string(&generated).unwrap();
            prop_assert!(false, "edition {edition}:\n{e}\n--- generated:\n{code}");
        }
    }
}

#[test]
fn files_alike_after_the_mapping_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (kernels, out) = (tmp.path().join("kernels"), tmp.path().join("out"));
    std::fs::create_dir_all(&kernels).unwrap();
    for f in ["my-kernels.rs", "my_kernels.rs"] {
        std::fs::write(kernels.join(f), "#[kernel]\npub fn k(x: &mut [f32]) {\n    x[0] = 1.0;\n}\n").unwrap();
    }
    let e = builder(&kernels, &out).build().unwrap_err().to_string();
    assert!(e.contains("my-kernels.rs") && e.contains("my_kernels.rs") && e.contains("module `my_kernels`"), "{e}");
    assert!(!out.join("kache_kernels.rs").exists());
}

#[test]
fn kernels_alike_after_the_mapping_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (kernels, out) = (tmp.path().join("kernels"), tmp.path().join("out"));
    std::fs::create_dir_all(&kernels).unwrap();
    std::fs::write(kernels.join("k.rs"), "#[kernel]\npub fn café() {}\n#[kernel]\npub fn caf_u00e9() {}\n").unwrap();
    let e = builder(&kernels, &out).build().unwrap_err().to_string();
    assert!(e.contains("kernels `café` and `caf_u00e9` both become the Rust function `caf_u00e9`"), "{e}");
    assert!(!out.join("kache_kernels.rs").exists());
}
