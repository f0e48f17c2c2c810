//! Tests: diagnostics. Every bad input gives a typed error at `file:line:col` (never a panic, a
//! stack overflow or an LLVM abort), and its rendered text is snapshotted so message quality is
//! reviewed when it changes.
//!
//! The inputs are `cache-fixtures/bad/*.rs`, one mistake per file, plus pathological sources
//! generated here (too large to keep as files). A fixture whose text contains
//! `// test-env: globals` is checked with the globals `PRICES` (a read-only device `&[f32]`) and
//! `RATE` (an `f32`) bound; every other one with no globals.

use std::path::{Path, PathBuf};
use std::process::Command;

use kache::lang::{Diagnostics, Env, check_module, parse_bytes};

use crate::common;

const GLOBALS_MARKER: &str = "// test-env: globals";

fn env_for(bytes: &[u8]) -> Env {
    let text = String::from_utf8_lossy(bytes);
    if text.contains(GLOBALS_MARKER) { common::globals_env() } else { Env::default() }
}

/// Parses and checks every item; `Ok(())` when the source is valid.
fn front_end(name: &str, bytes: &[u8], env: &Env) -> Result<(), Diagnostics> {
    let module = parse_bytes(name, bytes)?;
    check_module(&module, env)?;
    Ok(())
}

fn bad_dir() -> PathBuf {
    common::fixture("bad")
}

/// `(stem, bytes)` of every fixture in `cache-fixtures/bad`, sorted by name.
fn bad_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(bad_dir())
        .expect("cache-fixtures/bad")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, std::fs::read(&p).expect("read fixture"))
        })
        .collect();
    v.sort();
    v
}

/// `n` copies of `unit`, one per line, so a snapshot shows a short source line.
fn lines(unit: &str, n: usize) -> String {
    let mut s = String::with_capacity((unit.len() + 1) * n);
    for _ in 0..n {
        s.push_str(unit);
        s.push('\n');
    }
    s
}

/// A kernel whose body assigns `expr` to `out[0]`.
fn kernel_with(expr: &str) -> String {
    format!("#[kernel]\npub fn k(out: &mut [f32], x: f32) {{\n    out[0] =\n{expr};\n}}\n")
}

/// Pathological sources: `(name, source)`.
fn generated() -> Vec<(&'static str, String)> {
    vec![
        ("gen_nested_parens_5000", kernel_with(&format!("{}x{}", lines("(", 5000), lines(")", 5000)))),
        ("gen_nested_brackets_300", kernel_with(&format!("{}x{}", lines("[", 300), lines("]", 300)))),
        ("gen_unary_minus_100000", kernel_with(&format!("{}x", lines("-", 100_000)))),
        ("gen_unary_minus_5000", kernel_with(&format!("{}x", lines("-", 5000)))),
        ("gen_unary_not_2000", kernel_with(&format!("{}x", lines("!", 2000)))),
        ("gen_plus_chain_5000", kernel_with(&format!("x{}", lines(" + x", 4999)))),
        ("gen_plus_chain_2000", kernel_with(&format!("x{}", lines(" + x", 1999)))),
        (
            "gen_nested_blocks_300",
            format!("#[kernel]\npub fn k(out: &mut [f32]) {{\n{}out[0] = 1.0;\n{}}}\n", lines("{", 300), lines("}", 300)),
        ),
        (
            "gen_nested_ifs_300",
            format!("#[kernel]\npub fn k(out: &mut [f32]) {{\n{}out[0] = 1.0;\n{}}}\n", lines("if out.len() > 0 {", 300), lines("}", 300)),
        ),
        (
            "gen_long_statement_list",
            format!(
                "#[kernel]\npub fn k(out: &mut [f32]) {{\n    let mut a = 0.0;\n{}    out[0] = a\n}}\n",
                lines("    a += 1.0;", 20_000)
            ),
        ),
        ("gen_many_casts_3000", kernel_with(&format!("x{}", lines(" as f32", 3000)))),
        ("gen_method_chain_3000", kernel_with(&format!("x{}", lines(".abs()", 3000)))),
        ("gen_index_chain_2000", kernel_with(&format!("out{}", lines("[0]", 2000)))),
        (
            "gen_too_large",
            format!("#[kernel]\npub fn k(out: &mut [f32]) {{ }}\n{}", lines("// padding padding padding padding padding padding", 170_000)),
        ),
    ]
}

/// Every bad input: fixtures and generated ones, with the environment to check it in.
fn all_bad_inputs() -> Vec<(String, Vec<u8>, Env)> {
    let mut v: Vec<(String, Vec<u8>, Env)> = bad_fixtures()
        .into_iter()
        .map(|(stem, bytes)| {
            let env = env_for(&bytes);
            (stem, bytes, env)
        })
        .collect();
    for (stem, text) in generated() {
        if stem == "gen_long_statement_list" {
            // Valid: many short statements are fine (the budget is per statement).
            continue;
        }
        v.push((stem.to_string(), text.into_bytes(), Env::default()));
    }
    v
}

/// Asserts `loc` is `name:line:col` with line and col >= 1.
fn assert_location(name: &str, loc: &str) {
    let rest = loc
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or_else(|| panic!("location `{loc}` does not start with `{name}:`"));
    let parts: Vec<&str> = rest.split(':').collect();
    assert_eq!(parts.len(), 2, "location `{loc}` is not `{name}:line:col`");
    for p in parts {
        let n: usize = p.parse().unwrap_or_else(|_| panic!("location `{loc}`: `{p}` is not a number"));
        assert!(n >= 1, "location `{loc}` has a zero line or column");
    }
}

/// The diagnostics of one bad input (failing the test if it is accepted), with every location
/// checked.
fn diagnose(stem: &str, bytes: &[u8], env: &Env) -> Diagnostics {
    let name = format!("bad/{stem}.rs");
    let d = match front_end(&name, bytes, env) {
        Ok(()) => panic!("bad input `{stem}` was accepted"),
        Err(d) => d,
    };
    assert!(!d.items().is_empty(), "{stem}: empty diagnostics");
    assert_location(&name, &d.location());
    for item in d.items() {
        assert_location(&name, &d.file().location(item.span));
        assert!(!item.message.trim().is_empty(), "{stem}: empty message");
    }
    let display = d.to_string();
    assert!(display.starts_with(&d.location()), "{stem}: Display `{display}` does not start with the location");
    d
}

#[test]
fn there_are_enough_bad_fixtures() {
    let n = bad_fixtures().len();
    assert!(n >= 30, "only {n} fixtures in cache-fixtures/bad");
}

#[test]
fn every_bad_input_is_a_located_error() {
    for (stem, bytes, env) in all_bad_inputs() {
        diagnose(&stem, &bytes, &env);
    }
}

#[test]
fn bad_inputs_give_distinct_diagnostics() {
    let mut seen: Vec<(String, String)> = Vec::new();
    for (stem, bytes, env) in all_bad_fixtures_only() {
        let d = diagnose(&stem, &bytes, &env);
        let r = d.render(false).replace(&format!("bad/{stem}.rs"), "FILE");
        if let Some((other, _)) = seen.iter().find(|(_, x)| *x == r) {
            panic!("`{stem}` and `{other}` give the same diagnostic:\n{r}");
        }
        seen.push((stem, r));
    }
}

fn all_bad_fixtures_only() -> Vec<(String, Vec<u8>, Env)> {
    bad_fixtures()
        .into_iter()
        .map(|(stem, bytes)| {
            let env = env_for(&bytes);
            (stem, bytes, env)
        })
        .collect()
}

/// Long generated sources are shown by their diagnostic's headline and location only (the
/// rendered source line is not interesting and the file is huge).
fn snapshot_text(stem: &str, d: &Diagnostics) -> String {
    let rendered = d.render(false);
    if rendered.len() > 20_000 {
        return format!("{}\n(rendered text of {} bytes elided)\n", d, rendered.len());
    }
    let _ = stem;
    rendered
}

#[test]
fn diagnostics_snapshots() {
    let mut count = 0;
    for (stem, bytes, env) in all_bad_inputs() {
        let d = diagnose(&stem, &bytes, &env);
        let rendered = snapshot_text(&stem, &d);
        insta::assert_snapshot!(stem.as_str(), rendered);
        count += 1;
    }
    assert!(count >= 25);
}

/// A color rendering exists and carries the same text.
#[test]
fn colored_rendering_has_the_message() {
    let bytes = std::fs::read(bad_dir().join("mismatch_f32_f64.rs")).unwrap();
    let d = diagnose("mismatch_f32_f64", &bytes, &Env::default());
    let colored = d.render(true);
    assert!(colored.contains("mismatched types"), "{colored}");
}

#[test]
fn valid_generated_sources_are_accepted() {
    for (stem, text) in generated() {
        if stem == "gen_long_statement_list" {
            front_end(stem, text.as_bytes(), &Env::default()).unwrap_or_else(|d| panic!("{stem} rejected:\n{}", d.render(false)));
        }
    }
}

/// Globals named in the fixtures are resolved when bound through the JIT as well, and the
/// unresolved-name message lists the bound globals.
#[test]
fn unresolved_name_lists_globals_through_the_jit() {
    let src = "#[kernel]\npub fn k(out: &mut [f32]) {\n    out[0] = RAT * 2.0;\n}\n";
    let m = common::memory_jit().load_source("jit_unresolved.rs", src).unwrap().with_global("RATE", 0.5f32).unwrap();
    let e = m.check().expect_err("RAT is not bound");
    let text = match &e {
        kache::Error::Source(d) => {
            assert_location("jit_unresolved.rs", &d.location());
            d.render(false)
        }
        other => panic!("expected a source error, got {other}"),
    };
    assert!(text.contains("RAT"), "{text}");
    assert!(text.contains("RATE"), "the bound global is not suggested:\n{text}");
    let ok = src.replace("RAT *", "RATE *");
    let m = common::memory_jit().load_source("jit_ok.rs", &ok).unwrap().with_global("RATE", 0.5f32).unwrap();
    m.check().expect("RATE is bound");
}

/// Non-UTF-8 input written from the test (not only the stored fixture).
#[test]
fn non_utf8_bytes_are_a_located_error() {
    for bytes in [
        &b"\xff\xfe#[kernel] pub fn k(out: &mut [f32]) {}"[..],
        &b"#[kernel]\npub fn k(out: &mut [f32]) {\n    out[0] = 1.0; \xc3\x28\n}\n"[..],
        &b"#[kernel]\npub fn k(out: &mut [f32]) { out[0] = 1.0; } // \xe2\x82"[..],
        &b"\x80"[..],
    ] {
        let Err(d) = parse_bytes("bytes.rs", bytes) else { panic!("invalid UTF-8 accepted") };
        assert_location("bytes.rs", &d.location());
        assert!(d.render(false).contains("UTF-8"), "{}", d.render(false));
    }
}

// ---- the CLI ----------------------------------------------------------------------------------

fn kache_in(dir: &Path) -> Command {
    let mut c = Command::new(common::kache_bin());
    c.current_dir(dir).env("NO_COLOR", "1").env("KACHE_DISABLE", "1").env_remove("KACHE_ARCH");
    c
}

const CLI_SAMPLES: &[&str] = &[
    "syntax_missing_semicolon",
    "mismatch_f32_f64",
    "write_readonly_param",
    "recursion_mutual",
    "unresolved_name",
    "non_utf8",
    "empty",
    "shared_array_too_large",
];

#[test]
fn cli_check_reports_bad_files() {
    let root = common::fixture("");
    for stem in CLI_SAMPLES {
        let rel = format!("bad/{stem}.rs");
        let out = kache_in(&root).args(["check", &rel]).output().expect("run kache");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "kache check {rel}: status {:?}\nstderr:\n{stderr}", out.status);
        assert!(!stderr.contains("panicked"), "kache check {rel} panicked:\n{stderr}");
        let loc_prefix = format!("{rel}:");
        let line = stderr.lines().find(|l| l.contains(&loc_prefix)).unwrap_or_else(|| panic!("no `{rel}:line:col` on stderr:\n{stderr}"));
        let loc = &line[line.find(&loc_prefix).unwrap()..];
        let loc = loc.split_whitespace().next().unwrap();
        assert_location(&rel, loc);
        // The same diagnostic as the library renders.
        let bytes = std::fs::read(root.join(&rel)).unwrap();
        let lib = front_end(&rel, &bytes, &Env::default()).expect_err("bad input accepted").render(false);
        assert_eq!(stderr.trim_end(), lib.trim_end(), "kache check {rel} differs from the library's diagnostic");
    }
}

#[test]
fn cli_check_reports_generated_pathological_files() {
    let dir = tempfile::tempdir().unwrap();
    for (stem, text) in generated() {
        if stem == "gen_long_statement_list" {
            continue;
        }
        let file = format!("{stem}.rs");
        std::fs::write(dir.path().join(&file), &text).unwrap();
        let out = kache_in(dir.path()).args(["check", &file]).output().expect("run kache");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "kache check {file}: status {:?}\nstderr:\n{}",
            out.status,
            &stderr[..stderr.len().min(4000)]
        );
        assert!(!stderr.contains("panicked"), "kache check {file} panicked");
        assert!(stderr.contains(&format!("{file}:")), "no location for {file}");
    }
}

#[test]
fn cli_check_accepts_a_good_file() {
    let out = kache_in(&common::root()).args(["check", "examples/kernels/saxpy.rs"]).output().expect("run kache");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn cli_compile_rejects_bad_files() {
    let root = common::fixture("");
    let out_dir = tempfile::tempdir().unwrap();
    for stem in ["mismatch_f32_f64", "syntax_unclosed_brace", "kernel_return_type", "device_fn_returns_array", "recursion_direct"] {
        let rel = format!("bad/{stem}.rs");
        let out = kache_in(&root)
            .env("KACHE_DIR", out_dir.path().join("cache"))
            .args(["compile", &rel, "--arch", "sm_90", "-o"])
            .arg(out_dir.path().join("out"))
            .output()
            .expect("run kache");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "kache compile {rel}: status {:?}\nstderr:\n{stderr}", out.status);
        assert!(!stderr.contains("panicked"), "kache compile {rel} panicked:\n{stderr}");
        assert!(stderr.contains(&format!("{rel}:")), "no location on stderr:\n{stderr}");
    }
    assert!(!out_dir.path().join("out").exists(), "compile wrote output for a bad file");
}

// ---- bugs found while writing these tests -------------------------------------------------------

/// The front end on `src` must give a located error and not panic.
fn assert_located_error_without_panic(what: &str, src: &str) {
    let name = format!("{what}.rs");
    let r = std::panic::catch_unwind(|| front_end(&name, src.as_bytes(), &Env::default()));
    match r {
        Err(_) => panic!("the front end panicked on `{what}`:\n{src}"),
        Ok(Ok(())) => panic!("`{what}` was accepted:\n{src}"),
        Ok(Err(d)) => assert_location(&name, &d.location()),
    }
}

/// `-170141183460469231731687303715884105728` is -2^127: the checker computes `-(v as i128)`
/// before it checks that `v` fits, and the negation overflowed (in `src/lang/check/`: `lit` in
/// expr.rs, `resolve_inner` in resolve.rs, `lit_value` in consts.rs).
#[test]
fn bug_negated_literal_2_pow_127_panics() {
    let lit = "170141183460469231731687303715884105728";
    assert_located_error_without_panic("neg_suffixed", &format!("#[kernel]\npub fn k(out: &mut [i64]) {{\n    out[0] = -{lit}i64;\n}}\n"));
    assert_located_error_without_panic("neg_unsuffixed", &format!("#[kernel]\npub fn k(out: &mut [i64]) {{\n    out[0] = -{lit};\n}}\n"));
    assert_located_error_without_panic(
        "neg_const",
        &format!("const X: i64 = -{lit};\n\n#[kernel]\npub fn k(out: &mut [i64]) {{\n    out[0] = X;\n}}\n"),
    );
}

/// The same overflow in `parse_scalar_literal`, which `kache check/compile --define` uses.
#[test]
fn bug_define_negated_2_pow_127_panics() {
    let lit = "-170141183460469231731687303715884105728";
    let r = std::panic::catch_unwind(|| kache::lang::parse_scalar_literal(lit));
    assert!(matches!(r, Ok(Err(_))), "parse_scalar_literal({lit}) should be an error, not a panic or a value");
    let out = kache_in(&common::root())
        .args(["check", "examples/kernels/saxpy.rs", "--define"])
        .arg(format!("X={lit}"))
        .output()
        .expect("run kache");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "status {:?}\n{stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The element count of a `static` array is `shape.iter().product()`, which overflows `usize`
/// (before the 64 Mi element limit is checked) for large nested lengths.
#[test]
fn bug_static_array_shape_overflow_panics() {
    assert_located_error_without_panic(
        "static_shape_overflow",
        "static T: [[f32; 4294967296]; 4294967296] = [[0.0; 4294967296]; 4294967296];\n\n#[kernel]\npub fn k(out: &mut [f32]) {\n    out[0] = T[[0, 0]];\n}\n",
    );
}

/// Each `shared_array` is checked against the 48 KiB static shared memory limit, but not their
/// total: two 48 KiB arrays in one kernel check and compile to PTX that ptxas rejects ("uses too
/// much shared data"), and `kache compile --emit cubin` exits 2 with no source location.
#[test]
fn bug_total_shared_memory_is_not_checked() {
    assert_located_error_without_panic(
        "shared_total",
        "#[kernel]\npub fn k(o: &mut [f32]) {\n    let t = shared_array::<f32, 12288>();\n    let u = shared_array::<f32, 12288>();\n    let i = thread_idx_x() as usize;\n    t[i] = o[i];\n    u[i] = o[i + 1];\n    sync_threads();\n    o[i] = t[(i + 1) % 12288] + u[(i + 7) % 12288];\n}\n",
    );
}

/// What `kache check` rejects, nothing else accepts: for every bad fixture, every kernel the
/// file names fails through the JIT (with a located error), and `kache compile` of the file
/// exits 1, even where the wrong item is one no kernel uses (a recursive struct, a generic
/// body missing a bound, an `impl` of an unknown type: six fixtures compiled before).
#[test]
fn what_check_rejects_no_kernel_of_the_file_compiles() {
    let root = common::fixture("");
    let jit = common::memory_jit();
    let mut unused_only = 0;
    for (stem, bytes) in bad_fixtures() {
        let name = format!("bad/{stem}.rs");
        let Err(d) = front_end(&name, &bytes, &Env::default()) else { panic!("check accepts {name}") };
        let Ok(m) = jit.load_bytes(&name, &bytes) else { continue };
        for k in m.kernel_names() {
            let e = m.kernel(&k).map(|_| ()).expect_err(&format!("{name}: kernel `{k}` was given though check rejects the file:\n{d}"));
            assert!(e.to_string().starts_with(&format!("{name}:")), "{name}: {e}");
        }
        if stem.contains("recursive") || stem.contains("missing_bound") || stem == "impl_block" {
            unused_only += 1;
        }
        let out = kache_in(&root).args(["compile", &name, "-o", "/dev/null"]).output().expect("run kache");
        assert_eq!(out.status.code(), Some(1), "kache compile {name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(unused_only >= 3, "the fixtures whose wrong item no kernel uses are gone");
}
