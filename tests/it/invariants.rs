//! The architecture's invariants that the source tree itself shows (docs/architecture.md, which
//! names the test of each): which layer may do IO or touch LLVM, cudarc or a store, which way
//! imports go, how the library prints, the size and the `//!` of every source file.
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
            "crate::logging",
            "crate::build_script",
            "print!(",
            "println!(",
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
    // The CUDA runtime, and the conversions of cudarc's own arrays (launch arguments, captures).
    let files: Vec<PathBuf> =
        rust_files(&src()).into_iter().filter(|p| !p.ends_with("runtime/cuda.rs") && !p.ends_with("runtime/cudarc_arrays.rs")).collect();
    let bad = offenders(&files, &["cudarc::"]);
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

/// `docs/architecture.md`, whose "Layers" block and tables these tests hold to.
fn architecture() -> String {
    std::fs::read_to_string(crate::common::root().join("docs/architecture.md")).unwrap()
}

/// The layers of `docs/architecture.md`, top first: the module names of each line of the first
/// `text` block under "## Layers" (names, then two spaces, then what they are).
fn layers() -> Vec<Vec<String>> {
    let doc = architecture();
    let section = &doc[doc.find("\n## Layers\n").expect("docs/architecture.md has a Layers section")..];
    let start = section.find("```text\n").expect("the Layers section has a text block") + "```text\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    block.lines().map(|l| l.split("  ").next().unwrap_or("").split_whitespace().map(str::to_string).collect()).collect()
}

/// The modules `src/lib.rs` declares, and the module each name it re-exports comes from.
fn crate_root() -> (Vec<String>, std::collections::HashMap<String, String>) {
    let lib = code(&src().join("lib.rs"));
    let mut modules = Vec::new();
    let mut reexports = std::collections::HashMap::new();
    for line in lib.lines().map(str::trim) {
        if let Some(m) = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod ")) {
            modules.push(m.trim_end_matches(';').to_string());
        } else if let Some(u) = line.strip_prefix("pub use ") {
            let Some((module, names)) = u.trim_end_matches(';').split_once("::") else { continue };
            for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
                reexports.insert(name.trim().to_string(), module.to_string());
            }
        }
    }
    (modules, reexports)
}

/// The crate modules a piece of code names through `crate::` paths (`crate::cache::Key`,
/// `crate::{Arch, Jit}`, `crate::Result`), each mapped to the top-level module it belongs to.
fn modules_named(code: &str, reexports: &std::collections::HashMap<String, String>) -> Result<Vec<String>, String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let names: Vec<String> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())].split(',').map(|n| ident(n.trim())).collect(),
            None => vec![ident(rest)],
        };
        for name in names.into_iter().filter(|n| !n.is_empty()) {
            match reexports.get(&name) {
                Some(m) => out.push(m.clone()),
                None if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) => out.push(name),
                None => return Err(format!("`crate::{name}` is neither a module nor a re-export of lib.rs")),
            }
        }
    }
    Ok(out)
}

/// A line with the contents of its string literals removed (messages may quote paths).
fn without_strings(line: &str) -> String {
    let mut out = String::new();
    let (mut inside, mut escaped) = (false, false);
    for c in line.chars() {
        match (inside, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (_, '"') => {
                inside = !inside;
                out.push(c);
            }
            (true, _) => {}
            (false, _) => out.push(c),
        }
    }
    out
}

#[test]
fn no_import_runs_back_up_a_layer() {
    let layers = layers();
    let rank = |m: &str| layers.iter().position(|l| l.iter().any(|n| n == m));
    let (modules, reexports) = crate_root();
    assert!(modules.len() >= 15, "lib.rs declares {modules:?}");
    let unplaced: Vec<&String> = modules.iter().filter(|m| rank(m).is_none()).collect();
    assert!(unplaced.is_empty(), "modules missing from the layers of docs/architecture.md: {unplaced:?}");
    let unknown: Vec<&String> = layers.iter().flatten().filter(|m| !modules.contains(m)).collect();
    assert!(unknown.is_empty(), "the layers of docs/architecture.md name modules lib.rs does not declare: {unknown:?}");
    let mut bad = Vec::new();
    let mut edges = 0;
    for f in rust_files(&src()) {
        let rel = f.strip_prefix(src()).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        if first == "bin" || first == "lib.rs" {
            continue;
        }
        let from = first.trim_end_matches(".rs").to_string();
        let text = code(&f).lines().map(without_strings).collect::<Vec<_>>().join("\n");
        // Test modules may reach anywhere to build what they test.
        let text = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
        for to in modules_named(text, &reexports).unwrap_or_else(|e| panic!("{}: {e}", rel.display())) {
            if to == from {
                continue;
            }
            edges += 1;
            match (rank(&from), rank(&to)) {
                (Some(a), Some(b)) if b > a => {}
                _ => bad.push(format!("{} ({from}) imports {to}", rel.display())),
            }
        }
    }
    assert!(edges > 100, "only {edges} imports between modules found: is the scan broken?");
    assert!(bad.is_empty(), "imports that run up a layer or across one (docs/architecture.md, Layers): {bad:#?}");
}

#[test]
fn the_cli_is_a_thin_layer() {
    let files = rust_files(&src().join("bin"));
    assert!(!files.is_empty());
    let bad = offenders(
        &files,
        &["kache::codegen", "kache::abi", "kache::runtime", "kache::toolchain", "inkwell", "llvm_sys", "cudarc", "sled", "redis"],
    );
    assert!(bad.is_empty(), "the CLI reaches past the library's operations: {bad:#?}");
}

#[test]
fn the_library_prints_only_through_logging() {
    // logging.rs is the printer; build_script.rs writes cargo's instructions on stdout; the
    // prebuild step's error report is the failed build's result, not a log record.
    let allowed = [src().join("logging.rs"), src().join("build_script.rs")];
    let files: Vec<PathBuf> =
        rust_files(&src()).into_iter().filter(|p| !p.starts_with(src().join("bin")) && !allowed.contains(p)).collect();
    let mut bad = offenders(&files, &["println!(", "print!(", "eprintln!(", "std::io::stderr", "std::io::stdout", "dbg!("]);
    let report = "src/prebuild/builder.rs uses `print!(`";
    assert_eq!(code(&src().join("prebuild/builder.rs")).matches("eprint!(").count(), 1, "the error report prints once");
    bad.retain(|b| !b.replace('\\', "/").ends_with(report));
    assert!(bad.is_empty(), "print through crate::logging instead: {bad:#?}");
}

/// The Rust sources of the repository: the library, its tests, benchmarks, examples, fuzz
/// targets and build scripts (kernel sources, in `kernels/` and `kernels-*/` folders and
/// `cache-fixtures/`, are the kernel language, not Rust modules).
fn repository_sources() -> Vec<PathBuf> {
    let root = crate::common::root();
    let mut out = vec![root.join("build.rs")];
    let mut dirs: Vec<PathBuf> = ["src", "tests", "benches", "examples", "fuzz/fuzz_targets"].iter().map(|d| root.join(d)).collect();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if !["kernels", "snapshots", "target"].contains(&name.as_str()) && !name.starts_with("kernels-") {
                    dirs.push(p);
                }
            } else if name.ends_with(".rs") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn source_files_are_small_and_say_their_job() {
    let files = repository_sources();
    assert!(files.len() > 100, "only {} source files found", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines = text.lines().count();
        if lines > 1000 {
            bad.push(format!("{}: {lines} lines (at most 1,000: split it by job)", f.display()));
        }
        if !text.trim_start().starts_with("//!") {
            bad.push(format!("{}: does not start with a `//!` saying its one job", f.display()));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn the_architecture_doc_names_tests_that_exist() {
    // Every `path::to::a_function` the document names (a name with an underscore) is defined
    // somewhere in the code or the tests, so the table of invariants cannot point at nothing.
    let doc = architecture();
    let defined: String = repository_sources().iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    let mut missing = Vec::new();
    let mut named = 0;
    for quoted in doc.split('`').skip(1).step_by(2) {
        let Some((_, last)) = quoted.rsplit_once("::") else { continue };
        if !last.contains('_') || !last.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            continue;
        }
        named += 1;
        if !defined.contains(&format!("fn {last}(")) && !defined.contains(&format!("fn {last}<")) {
            missing.push(quoted.to_string());
        }
    }
    assert!(named > 30, "only {named} functions named: is the scan broken?");
    assert!(missing.is_empty(), "docs/architecture.md names functions that do not exist: {missing:#?}");
}
