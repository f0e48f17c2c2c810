//! Tests: the execution-speed suite's dry run (benches/speed/): every kache kernel of the suite
//! compiles for sm_90 (and ptxas accepts it), NVRTC compiles the CUDA twins on the CPU, and
//! every kache kernel gives the reference's answer on the host backend. Speed itself is
//! measured on the GPU only (docs/benchmarks.md).

#[path = "../../benches/speed/suite.rs"]
#[allow(dead_code)]
mod suite;

#[test]
fn the_speed_suite_dry_run_compiles_everything_and_checks_every_kache_kernel() {
    if kache::toolchain::find_ptxas().is_none() && std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
        panic!("ptxas not found and KACHE_REQUIRE_PTXAS=1");
    }
    let opts = suite::Options { dry_run: true, reps: 1, batches: 1, root: crate::common::root(), ptx_dir: None, only: Vec::new() };
    let report = suite::run(&opts).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<(&str, &str)> = report.rows.iter().map(|r| (r.kernel.as_str(), r.implementation.as_str())).collect();
    let mut want = Vec::new();
    for k in ["saxpy", "reduce_block", "reduce_warp", "softmax_rows", "matmul_tiled", "histogram"] {
        // Safe launches (bounds-checked code) and `launch_unchecked`, each checked against the reference.
        want.extend([(k, "kache"), (k, "unchk")]);
    }
    // The scan also without its launch bounds and with 8 elements per thread instead of 16
    // (kache's source with another attribute or SCAN_ITEMS).
    want.extend([("scan", "kache"), ("scan", "unchk"), ("scan", "k-nolb"), ("scan", "k-t2048")]);
    assert_eq!(rows, want);
    let table = suite::table(&report);
    assert!(table.contains("histogram") && table.contains("exact"), "{table}");
}

/// `--only` names the suite's parts; any other name is refused before anything is compiled.
#[test]
fn the_speed_suite_refuses_an_unknown_part() {
    let opts = suite::Options {
        dry_run: true,
        reps: 1,
        batches: 1,
        root: crate::common::root(),
        ptx_dir: None,
        only: vec!["scan".into(), "softmax_rows".into()],
    };
    let e = suite::run(&opts).expect_err("an unknown part is refused");
    assert!(e.contains("--only softmax_rows") && e.contains("softmax"), "{e}");
}

/// Every Python script of benches/speed/experiments/ (at least the eight the docs quote).
fn experiments(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = root.join("benches/speed/experiments");
    let mut all: Vec<_> = std::fs::read_dir(&dir)
        .expect("benches/speed/experiments")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    all.sort();
    assert!(all.len() >= 8, "{all:?}");
    all
}

/// The numba-cuda and Triton twins and the experiments run only on the GPU machine; here they
/// must at least parse.
#[test]
fn the_python_twins_parse() {
    let root = crate::common::root();
    let o = std::process::Command::new("python3")
        .args(["-c", "import ast, sys\nfor p in sys.argv[1:]: ast.parse(open(p).read(), p)"])
        .arg(root.join("benches/speed/numba_speed.py"))
        .arg(root.join("benches/speed/triton_speed.py"))
        .args(experiments(&root))
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
