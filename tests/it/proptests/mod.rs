//! Tests: proptests. The front end and the code generator never panic: thousands of mutated and
//! generated sources go through `parse_bytes` and `check_module`, each inside `catch_unwind`,
//! and must come back `Ok` or as a typed error with a location. A few hundred of those that
//! check go on through the code generator for the host and for NVPTX, which must return `Ok` or
//! a typed error too (never an internal LLVM error).
//!
//! The seeds are the good kernels of `examples/kernels/` and `cache-fixtures/kernels/` plus a
//! few written here; the mutations delete, duplicate, swap and replace tokens and characters,
//! insert random bytes and truncate. Generated sources are random expression trees (well typed
//! most of the time, ill typed some of the time) and random token soups inside a kernel body.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use kache::ir::Ty;
use kache::lang::{Env, ModuleSummary, check_module, parse_bytes};
use kache::{Arch, CaptureValue, HostArray, IntoCapture, Layout, Scalar, Specialization, Target};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config as ProptestConfig;

use crate::common;

mod generated;
mod mutations;
mod run;
mod seeds;

use generated::*;
use mutations::*;
use run::*;
use seeds::*;

// ---- the tests --------------------------------------------------------------------------------

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, max_shrink_iters: 2000, ..ProptestConfig::default() }
}

/// How many mutated sources that check are also compiled (the rest only check).
const MUTANT_COMPILE_LIMIT: usize = 120;
static MUTANTS_COMPILED: AtomicUsize = AtomicUsize::new(0);

#[test]
fn seeds_check_and_compile() {
    assert!(SEEDS.iter().filter(|s| s.strict).count() > INLINE_SEEDS.len(), "no example kernels found");
    for seed in SEEDS.iter() {
        let origin = &seed.origin;
        match front_end(&seed.bytes, &Env::default()).unwrap_or_else(|e| panic!("{origin}: {e}")) {
            Some(summary) => {
                let compiled = compile_checked(&seed.bytes, &summary, false).unwrap_or_else(|e| panic!("{origin}: {e}"));
                assert!(compiled > 0 || !seed.strict, "{origin}: nothing compiled");
            }
            None if seed.strict => {
                let d = parse_bytes("seed.rs", &seed.bytes).and_then(|m| check_module(&m, &Env::default()).map(|_| m)).err().unwrap();
                panic!("{origin} is rejected:\n{}", d.render(false))
            }
            None => eprintln!("{origin}: does not check without globals; used as a mutation seed only"),
        }
    }
}

proptest! {
    #![proptest_config(config(6000))]

    /// Mutated good kernels: Ok or a located typed error, never a panic.
    #[test]
    fn mutated_kernels_never_panic(src in mutated_source(), globals in any::<bool>()) {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(&src, &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                if MUTANTS_COMPILED.fetch_add(1, Ordering::Relaxed) < MUTANT_COMPILE_LIMIT
                    && let Err(e) = compile_checked(&src, &summary, globals)
                {
                    prop_assert!(false, "{}", e);
                }
            }
            Ok(None) => {}
        }
    }
}

proptest! {
    #![proptest_config(config(1500))]

    /// Arbitrary bytes, and arbitrary bytes after a valid prefix.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), prefix in any::<bool>()) {
        let mut src = if prefix { b"#[kernel]\npub fn k(out: &mut [f32]) {\n".to_vec() } else { Vec::new() };
        src.extend_from_slice(&bytes);
        if let Err(e) = front_end(&src, &Env::default()) {
            prop_assert!(false, "{}", e);
        }
    }

    /// Random tokens inside a kernel body.
    #[test]
    fn token_soup_never_panics(src in token_soup(), globals in any::<bool>()) {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(src.as_bytes(), &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                if let Err(e) = compile_checked(src.as_bytes(), &summary, globals) {
                    prop_assert!(false, "{}", e);
                }
            }
            Ok(None) => {}
        }
    }
}

/// Random expression trees in a kernel body; those that check are compiled for the host and
/// for NVPTX, and a few hundred must get that far.
#[test]
fn generated_expressions_check_and_compile() {
    let mut runner = proptest::test_runner::TestRunner::new(config(600));
    let checked = AtomicUsize::new(0);
    let compiled = AtomicUsize::new(0);
    let strategy = prop_oneof![3 => expr_kernel(false), 1 => expr_kernel(true)];
    let result = runner.run(&strategy, |(src, globals)| {
        let env = if globals { common::globals_env() } else { Env::default() };
        match front_end(src.as_bytes(), &env) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(Some(summary)) => {
                checked.fetch_add(1, Ordering::Relaxed);
                match compile_checked(src.as_bytes(), &summary, globals) {
                    Ok(n) => {
                        compiled.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(e) => prop_assert!(false, "{}", e),
                }
            }
            Ok(None) => {}
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (checked, compiled) = (checked.into_inner(), compiled.into_inner());
    eprintln!("generated expressions: {checked} of 600 checked, {compiled} compilations succeeded");
    assert!(checked >= 300, "only {checked} generated kernels checked");
    assert!(compiled >= 300, "only {compiled} compilations succeeded");
}

/// Random control flow: everything generated is valid (a rejection is a checker bug) and is
/// compiled for the host and for NVPTX.
#[test]
fn generated_control_flow_checks_and_compiles() {
    let mut runner = proptest::test_runner::TestRunner::new(config(250));
    let result = runner.run(&control_flow_kernel(), |src| {
        match front_end(src.as_bytes(), &Env::default()) {
            Err(e) => prop_assert!(false, "{}", e),
            Ok(None) => {
                let d = parse_bytes("fuzz.rs", src.as_bytes()).and_then(|m| check_module(&m, &Env::default()).map(|_| ())).err();
                prop_assert!(false, "valid control flow rejected:\n{}\n{}", src, d.map(|d| d.render(false)).unwrap_or_default());
            }
            Ok(Some(summary)) => {
                let n = compile_checked(src.as_bytes(), &summary, false);
                prop_assert!(matches!(n, Ok(2)), "{:?}", n);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The expression generator is useful only if most of what it writes checks: a guard against
/// the generator (or the checker) silently drifting to rejecting everything.
#[test]
fn generated_expressions_mostly_check() {
    let mut runner = proptest::test_runner::TestRunner::new(config(150));
    let ok = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    let rejected = std::sync::Mutex::new(Vec::<String>::new());
    runner
        .run(&expr_kernel(false), |(src, _)| {
            total.fetch_add(1, Ordering::Relaxed);
            let m = parse_bytes("gen.rs", src.as_bytes()).expect("generated source parses");
            match check_module(&m, &Env::default()) {
                Ok(_) => {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
                Err(d) => rejected.lock().unwrap().push(format!("{src}\n{}", d.render(false))),
            }
            Ok(())
        })
        .unwrap();
    let rejected = rejected.into_inner().unwrap();
    let (ok, total) = (ok.load(Ordering::Relaxed), total.load(Ordering::Relaxed));
    assert!(
        ok * 2 >= total,
        "only {ok} of {total} generated kernels check; first rejections:\n{}",
        rejected.iter().take(3).cloned().collect::<Vec<_>>().join("\n")
    );
}

// ---- bugs found while fuzzing -----------------------------------------------------------------

/// A kernel around `body`, with a device function `f`.
fn never_kernel(body: &str) -> String {
    format!("fn f(v: f32) -> f32 {{\n    v\n}}\n\n#[kernel]\npub fn k(out: &mut [f32], x: f32, b: bool) {{\n    {body}\n}}\n")
}

/// Checks `src` (it must check) and compiles it for the host and NVPTX; panics with what went
/// wrong if the code generator panicked or failed internally.
fn assert_compiles_cleanly(src: &str) {
    let summary = front_end(src.as_bytes(), &Env::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("rejected by the front end:\n{src}"));
    if let Err(e) = compile_checked(src.as_bytes(), &summary, false) {
        panic!("{e}");
    }
}

/// Diverging expressions (`return`, `break`, `loop {}`) used as operands type-check (their type
/// is `!`), but code generation keeps emitting instructions with a placeholder `i32 0` for their
/// value, so LLVM sees invalid IR and inkwell panics (or LLVM reports an internal error).
#[test]
fn bug_diverging_operand_panics_in_codegen() {
    for body in [
        "out[0] = f(return);",
        "out[0] = f(loop {});",
        "let t = b && return;",
        "let t = (return) || b;",
        "atomic_add(&mut out[0], return);",
        "out[0] = x.max(return);",
        "out[0] = (return).max(x);",
    ] {
        assert_compiles_cleanly(&never_kernel(body));
    }
}

/// Same root cause, reported as an internal code generation error rather than a panic.
#[test]
fn bug_break_as_assigned_value_is_an_internal_codegen_error() {
    assert_compiles_cleanly(&never_kernel("loop { out[0] = { break; }; }"));
}

/// Diverging expressions that already compile (kept so a fix of the above keeps them working).
#[test]
fn diverging_expressions_that_compile() {
    for body in [
        "out[0] = if b { return; } else { 1.0 };",
        "let v: f32 = return;",
        "out[0] = (return) as f32;",
        "out[0] = -(return);",
        "let v = { return; 1.0 }; out[0] = v;",
        "loop { let v: f32 = break; }",
        "for q in 0..(return) {}",
        "atomic_add(&mut out[return], 1.0);",
        "let v = loop { break loop { break 3.0; }; }; out[0] = v;",
        "'a: loop { 'b: loop { break 'a; } }",
        "out[0] = loop {};",
        "if b { return } else { return }",
    ] {
        assert_compiles_cleanly(&never_kernel(body));
    }
}
