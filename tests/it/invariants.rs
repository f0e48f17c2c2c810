//! The architecture's layering, checked on the source tree: which layer may do IO, which may
//! touch LLVM, cudarc or a store.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            v.push(p);
        }
    }
    v
}

/// Code lines of a file (comments stripped, so documentation may name anything).
fn code(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn src() -> PathBuf {
    crate::common::root().join("src")
}

fn offenders(files: &[PathBuf], needles: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let c = code(f);
        for n in needles {
            if c.contains(n) {
                out.push(format!("{} uses `{n}`", f.display()));
            }
        }
    }
    out
}

#[test]
fn front_end_does_no_io_and_no_llvm() {
    let files = rust_files(&src().join("lang"));
    assert!(files.len() >= 5);
    let bad = offenders(
        &files,
        &[
            "std::fs",
            "std::io",
            "std::net",
            "std::process",
            "std::env",
            "File::open",
            "File::create",
            "OpenOptions",
            "inkwell",
            "llvm_sys",
            "cudarc",
            "sled",
            "redis",
            "crate::codegen",
            "crate::runtime",
            "crate::cache",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn only_codegen_touches_inkwell() {
    let files: Vec<PathBuf> = rust_files(&src()).into_iter().filter(|p| !p.starts_with(src().join("codegen"))).collect();
    let bad = offenders(&files, &["inkwell", "llvm_sys"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn runtime_target_and_abi_need_neither_the_compiler_nor_the_front_end() {
    let mut files = rust_files(&src().join("runtime"));
    assert!(files.len() >= 3);
    files.extend([src().join("target.rs"), src().join("abi.rs")]);
    let bad = offenders(&files, &["crate::codegen", "crate::lang", "inkwell", "llvm_sys"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn only_runtime_cuda_touches_cudarc() {
    let files: Vec<PathBuf> = rust_files(&src()).into_iter().filter(|p| !p.ends_with("runtime/cuda.rs")).collect();
    let bad = offenders(&files, &["cudarc"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn only_cache_touches_a_store() {
    let files: Vec<PathBuf> = rust_files(&src()).into_iter().filter(|p| !p.starts_with(src().join("cache"))).collect();
    let bad = offenders(&files, &["sled::", "redis::"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn only_the_catalogue_names_sled() {
    // The cache offers operations; its catalogue, and so sled, stays private to the store.
    let catalogue = src().join("cache/store/catalogue.rs");
    assert!(code(&catalogue).contains("sled::"));
    let files: Vec<PathBuf> = rust_files(&src()).into_iter().filter(|p| *p != catalogue).collect();
    let bad = offenders(&files, &["sled"]);
    assert!(bad.is_empty(), "{bad:#?}");
    let public: Vec<String> =
        code(&catalogue).lines().filter(|l| l.trim_start().starts_with("pub ") && l.contains("sled")).map(str::to_string).collect();
    assert!(public.is_empty(), "{public:#?}");
}

#[test]
fn nothing_unwraps_in_library_code_outside_tests() {
    // No `unwrap()`/`expect(` on anything a user can influence: the library code has none at
    // all outside #[cfg(test)] modules.
    let mut bad = Vec::new();
    for f in rust_files(&src()) {
        let text = std::fs::read_to_string(&f).unwrap();
        let body = match text.find("#[cfg(test)]") {
            Some(i) => &text[..i],
            None => &text,
        };
        for (n, line) in body.lines().enumerate() {
            let l = line.split("//").next().unwrap_or("");
            if l.contains(".unwrap()") || l.contains(".expect(") {
                bad.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
