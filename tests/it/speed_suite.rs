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
        panic!(
            "ptxas not found and KACHE_REQUIRE_PTXAS=1: `make deps` installs it (the nvidia-cuda-nvcc-cu12 wheel, into target/toolchain/), and the Makefile sets KACHE_PTXAS"
        );
    }
    let opts = suite::Options { dry_run: true, reps: 1, batches: 1, root: crate::common::root(), ptx_dir: None, only: Vec::new() };
    let report = suite::run(&opts).unwrap_or_else(|e| panic!("{e}"));
    let failed: Vec<_> = report.failures().collect();
    assert!(failed.is_empty(), "failed rows: {failed:#?}");
    let rows: Vec<(&str, &str)> = report.rows.iter().map(|r| (r.kernel.as_str(), r.implementation.as_str())).collect();
    let mut want = Vec::new();
    for k in ["saxpy", "reduce_block", "reduce_warp", "reduce_while", "softmax_rows", "matmul_tiled", "histogram"] {
        // Safe launches (bounds-checked code) and `launch_unchecked`, each checked against the reference.
        want.extend([(k, "kache"), (k, "unchk")]);
    }
    // The scan also without its launch bounds and with 8 elements per thread instead of 16
    // (kache's source with another attribute or SCAN_ITEMS).
    want.extend([("scan", "kache"), ("scan", "unchk"), ("scan", "k-nolb"), ("scan", "k-t2048")]);
    assert_eq!(rows, want);
    let table = suite::table(&report);
    assert!(table.contains("histogram") && table.contains("exact") && table.contains("failed rows: none"), "{table}");
}

/// A part that fails is a failed row in the report and the table, and the parts after it
/// still run: a broken benchmark never hides the others' figures.
#[test]
fn a_failing_row_is_reported_and_the_rest_still_run() {
    let failed = suite::Row::failed("gemv", "kache", "launch: out of bounds".into());
    let fine = suite::Row { ok: true, check: "exact".into(), ..suite::Row::failed("saxpy", "kache", String::new()) };
    let report = suite::Report { rows: vec![failed, fine], ..Default::default() };
    assert_eq!(report.failures().map(|r| r.kernel.as_str()).collect::<Vec<_>>(), ["gemv"]);
    let table = suite::table(&report);
    assert!(table.contains("FAILED: launch: out of bounds") && table.contains("failed rows: gemv (kache)"), "{table}");
    // Every part of the table runs on its own under run.sh (`speed --only PART`), so a part
    // that crashes the process or faults the GPU fails alone: the part names are `--only`'s.
    let names: Vec<&str> = suite::PARTS.iter().map(|p| p.name).collect();
    assert!(names.len() >= 6 && names.iter().all(|n| !n.contains(',') && !n.contains(' ')), "{names:?}");
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
    assert!(e.contains("--only softmax_rows") && e.contains("the suite's parts are") && e.contains("softmax"), "{e}");
}

/// Every Python script of benches/speed/experiments/, if the folder exists: experiments leave the
/// tree once they have answered their question (their history is in docs/results/), so it may
/// hold none, or not be there at all.
fn experiments(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = root.join("benches/speed/experiments");
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    let mut all: Vec<_> =
        entries.map(|e| e.expect("a directory entry").path()).filter(|p| p.extension().is_some_and(|x| x == "py")).collect();
    all.sort();
    all
}

/// The numba-cuda and Triton twins and any experiments run only on the GPU machine; here they
/// must at least parse.
#[test]
fn the_python_twins_parse() {
    let root = crate::common::root();
    let twins = [root.join("benches/speed/numba_speed.py"), root.join("benches/speed/triton_speed.py")];
    for t in &twins {
        assert!(t.is_file(), "{} is missing", t.display());
    }
    let o = std::process::Command::new("python3")
        .args(["-c", "import ast, sys\nfor p in sys.argv[1:]: ast.parse(open(p).read(), p)"])
        .args(&twins)
        .args(experiments(&root))
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Under CI's `KACHE_REQUIRE_PTXAS=1` (where `make test` runs), every NVIDIA piece a test loads
/// is the one `make deps` installed under `target/toolchain/`: a ptxas, libdevice or libnvrtc
/// installed by hand elsewhere on the machine cannot stand in for a missing set-up step.
#[test]
fn the_toolchain_the_tests_use_is_the_one_the_set_up_installs() {
    if std::env::var("KACHE_REQUIRE_PTXAS").as_deref() != Ok("1") {
        eprintln!("skipping: KACHE_REQUIRE_PTXAS is not 1 (CI sets it; `make deps` installs the toolchain)");
        return;
    }
    let prefix = crate::common::root().join("target/toolchain");
    let prefix = prefix.canonicalize().unwrap_or_else(|e| panic!("{}: {e}: run `make deps`", prefix.display()));
    for (what, found) in [
        ("ptxas", kache::toolchain::find_ptxas()),
        ("libdevice", kache::toolchain::find_libdevice()),
        ("libnvrtc", kache::toolchain::find_nvrtc()),
    ] {
        let path = found.unwrap_or_else(|| panic!("{what} not found: run `make deps`"));
        let real = path.canonicalize().unwrap_or_else(|e| panic!("{what} at {}: {e}: run `make deps`", path.display()));
        assert!(real.starts_with(&prefix), "{what} is {}, not under {} (run the tests with `make test`)", real.display(), prefix.display());
    }
}
