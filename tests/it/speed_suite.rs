//! Tests: the execution-speed suite's dry run (benches/speed/): every kache kernel of the suite
//! compiles for sm_90 (and ptxas accepts it), NVRTC compiles the CUDA twins on the CPU, and
//! every kache kernel gives the reference's answer on the host backend. Speed itself is
//! measured on the GPU only (docs/benchmarks.md).

#[path = "../../benches/speed/suite.rs"]
#[allow(dead_code)]
mod suite;

/// The corpus's kernels (issue 33) beyond the suite's first ones, in the order they run.
const CORPUS: [&str; 17] = [
    "transpose_naive",
    "transpose_tiled",
    "gemv",
    "spmv_csr",
    "conv2d",
    "layernorm",
    "rmsnorm",
    "softmax3",
    "topk_rows",
    "stencil2d",
    "stencil3d",
    "bitonic_step",
    "radix_hist",
    "compact",
    "nbody",
    "black_scholes",
    "mandelbrot",
];

/// The tensor-core rows at the dry run's sizes, after `mma_peak`, in the order they run.
const TENSOR: [&str; 20] = [
    "gemm_bf16_128",
    "gemm_f16_128",
    "gemm_bias_gelu_bf16_128",
    "gemm_tf32_128",
    "gemm_wg_bf16_256",
    "gemm_wg_f16_256",
    "gemm_wg_bias_gelu_bf16_256",
    "sgemm_128",
    "gemm_tma_bf16_256",
    "gemm_tma_f16_256",
    "gemm_tma_bias_gelu_bf16_256",
    "gemm_ws_bf16_256",
    "gemm_ws_f16_256",
    "gemm_ws_bias_gelu_bf16_256",
    "gemm_tma_tf32_256",
    "gemm_ws_tf32_256",
    "attn_d64",
    "attn_d64_causal",
    "attn_d128",
    "attn_d128_causal",
];

#[test]
fn the_speed_suite_dry_run_compiles_everything_and_checks_every_kache_kernel() {
    if kache::toolchain::find_ptxas().is_none() && std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
        panic!(
            "ptxas not found and KACHE_REQUIRE_PTXAS=1: `make deps` installs it (the nvidia-cuda-nvcc-cu12 wheel, into target/toolchain/), and the Makefile sets KACHE_PTXAS"
        );
    }
    let opts =
        suite::Options { dry_run: true, reps: 1, batches: 1, root: crate::common::root(), ptx_dir: None, only: Vec::new(), small: false };
    let report = suite::run(&opts).unwrap_or_else(|e| panic!("{e}"));
    let failed: Vec<_> = report.failures().collect();
    assert!(failed.is_empty(), "failed rows: {failed:#?}");
    let rows: Vec<(&str, &str)> = report.rows.iter().map(|r| (r.kernel.as_str(), r.implementation.as_str())).collect();
    let mut want = Vec::new();
    for k in ["saxpy", "reduce_block", "reduce_warp", "reduce_while", "softmax_rows", "matmul_tiled", "histogram"] {
        // Safe launches (bounds-checked code) and `launch_unchecked`, each checked against the reference.
        want.extend([(k, "kache"), (k, "unchk")]);
        if k == "saxpy" {
            // Saxpy with 4 contiguous elements per thread (16-byte accesses), a safe launch.
            want.push((k, "k-vec4"));
        }
    }
    // The scan also without its launch bounds and with 8 elements per thread instead of 16
    // (kache's source with another attribute or SCAN_ITEMS).
    want.extend([("scan", "kache"), ("scan", "unchk"), ("scan", "k-nolb"), ("scan", "k-t2048")]);
    // The corpus (benches/speed/kernels/): every kernel, safe and unchecked.
    for k in CORPUS {
        want.extend([(k, "kache"), (k, "unchk")]);
    }
    // The tensor cores (benches/speed/kernels/gemm.rs, attention.rs) at the host's sizes: each
    // GEMM's row carries its size, as the GPU's two sizes need.
    want.push(("mma_peak", "kache"));
    for k in TENSOR {
        want.extend([(k, "kache"), (k, "unchk")]);
    }
    assert_eq!(rows, want);
    // Every kernel of the kache sources has its rows (a GEMM's carry its element type and
    // size after its name): none is compiled and never run.
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    for file in suite::KACHE_SOURCES {
        for name in jit.load_file(crate::common::root().join(file)).unwrap().kernel_names() {
            assert!(rows.iter().any(|(k, _)| *k == name || k.starts_with(&format!("{name}_"))), "{file}: kernel {name} has no row");
        }
    }
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
        small: false,
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

/// The Python side of the suite: the numba-cuda and Triton twins, what they share, the table
/// script and any experiments.
const PYTHON: [&str; 10] = [
    "numba_speed.py",
    "numba_base.py",
    "numba_corpus.py",
    "triton_speed.py",
    "triton_base.py",
    "triton_corpus.py",
    "triton_tensor.py",
    "tensor_table.py",
    "speed_common.py",
    "table.py",
];

/// The numba-cuda and Triton twins and any experiments run only on the GPU machine; here they
/// must at least parse, and the twins' parts must be the Rust suite's (`--list` needs neither
/// numba nor Triton).
#[test]
fn the_python_twins_parse_and_have_the_suites_parts() {
    let root = crate::common::root();
    let dir = root.join("benches/speed");
    let files: Vec<_> = PYTHON.iter().map(|f| dir.join(f)).collect();
    for f in &files {
        assert!(f.is_file(), "{} is missing", f.display());
    }
    let o = std::process::Command::new("python3")
        .args(["-c", "import ast, sys\nfor p in sys.argv[1:]: ast.parse(open(p).read(), p)"])
        .args(&files)
        .args(experiments(&root))
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rust: Vec<&str> = suite::PARTS.iter().map(|p| p.name).collect();
    for twin in ["numba_speed.py", "triton_speed.py"] {
        let o = std::process::Command::new("python3").arg(dir.join(twin)).arg("--list").output().expect("python3 runs");
        assert!(o.status.success(), "{twin} --list: {}", String::from_utf8_lossy(&o.stderr));
        let listed = String::from_utf8_lossy(&o.stdout).into_owned();
        assert_eq!(listed.lines().collect::<Vec<_>>(), rust, "{twin}'s parts");
    }
}

/// The Python twins' runner (speed_common.py): a part that hangs past its time limit and a part
/// whose process dies are each one failed row, and the parts before and after them still run.
#[test]
fn a_python_part_that_hangs_or_dies_is_one_failed_row() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fake_twin.py");
    let common = crate::common::root().join("benches/speed");
    std::fs::write(
        &script,
        format!(
            r#"import os, sys, time
sys.path.insert(0, {common:?})
import speed_common as s

def ok(name):
    return lambda ctx: ctx.row(name, lambda: None, lambda: "exact", bytes_=1.0)

def load():
    return {{"first": ok("first"), "hang": lambda ctx: time.sleep(60), "die": lambda ctx: os._exit(9), "last": ok("last")}}

def make_ctx(out):
    return s.Ctx("fake", out, lambda: None, None, lambda: None)

sys.exit(s.main("fake", ["first", "hang", "die", "last"], load, lambda: None, make_ctx))
"#
        ),
    )
    .unwrap();
    let json = dir.path().join("rows.json");
    let o = std::process::Command::new("python3")
        .arg(&script)
        .args(["--check-only", "--part-timeout", "1", "--json"])
        .arg(&json)
        .output()
        .expect("python3 runs");
    assert_eq!(o.status.code(), Some(1), "a failed row makes the status 1: {}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let got: Vec<(&str, bool)> = rows.iter().map(|r| (r["kernel"].as_str().unwrap(), r["ok"].as_bool().unwrap())).collect();
    assert_eq!(got, [("first", true), ("hang", false), ("die", false), ("last", true)], "{rows:#?}");
    assert!(rows[1]["check"].as_str().unwrap().contains("ran past 1 s"), "{rows:#?}");
    assert!(rows[2]["check"].as_str().unwrap().contains("status 9"), "{rows:#?}");
}

/// table.py, the complete table run.sh prints last: memory- and compute-bound rows against
/// their rooflines, NVRTC's time over each implementation's, the geometric means, skipped rows
/// apart from failed ones, and a part that wrote nothing as a failed row.
#[test]
fn the_complete_table_compares_every_row_with_nvrtc_and_its_roofline() {
    let dir = tempfile::tempdir().unwrap();
    let row = |kernel: &str, imp: &str, ms: f64, gbs: Option<f64>, gflops: Option<f64>| serde_json::json!({"kernel": kernel, "implementation": imp, "median_ms": ms, "min_ms": ms, "gbs": gbs, "gflops": gflops, "check": "exact", "ok": true});
    let rust = serde_json::json!({"device": "test GPU", "copy_gbs": 1000.0, "fma_tflops": 50.0, "rows": [
        row("copyish", "kache", 2.0, Some(950.0), None),
        row("copyish", "nvrtc", 2.2, Some(864.0), None),
        row("flopsy", "kache", 4.0, None, Some(25000.0)),
        row("flopsy", "nvrtc", 2.0, None, Some(50000.0)),
    ]});
    std::fs::write(dir.path().join("speed-rust-a.json"), rust.to_string()).unwrap();
    let numba = serde_json::json!([row("copyish", "numba", 4.4, Some(432.0), None),
        {"kernel": "flopsy", "implementation": "numba", "median_ms": 0.0, "min_ms": 0.0, "gbs": null, "gflops": null, "check": "skipped: not natural", "ok": true, "skipped": true}]);
    std::fs::write(dir.path().join("speed-numba.json"), numba.to_string()).unwrap();
    let o = std::process::Command::new("python3")
        .arg(crate::common::root().join("benches/speed/table.py"))
        .arg(dir.path())
        .args(["a", "b"])
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "part b and Triton wrote nothing: failed rows\n{text}");
    for want in [
        "copyish          kache    mem",
        "95.0%",
        "1.100x",
        "flopsy           kache    comp",
        "50.0%",
        "0.500x",
        "summary: kache vs nvrtc (nvrtc's time over its own): geomean 0.742x over 2 kernels, lowest 0.500x (flopsy); memory-bound 1.100x over 1; compute-bound 0.500x over 1",
        "summary: numba vs nvrtc (nvrtc's time over its own): geomean 0.500x over 1 kernels",
        "memory-bound kache kernels at >= 90% of the copy roofline: 1 of 1",
        "skipped rows: flopsy (numba)",
        "failed rows: b (-), * (triton)",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
    assert!(dir.path().join("all.json").is_file());
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

/// ptxas, where it and nvdisasm (which benches/speed/sass.py runs) are installed; without them
/// `None` after saying why, or a failure under `KACHE_REQUIRE_PTXAS=1`.
fn sass_tools() -> Option<std::path::PathBuf> {
    let nvdisasm = crate::common::root().join("target/toolchain/nvdisasm/nvidia/cu13/bin/nvdisasm");
    let ptxas = kache::toolchain::find_ptxas().filter(|_| nvdisasm.is_file());
    if ptxas.is_none() {
        assert!(
            std::env::var("KACHE_REQUIRE_PTXAS").as_deref() != Ok("1"),
            "ptxas or nvdisasm missing and KACHE_REQUIRE_PTXAS=1: `make deps` installs both under target/toolchain/"
        );
        eprintln!("skipping: ptxas or nvdisasm not found (`make deps` installs them)");
    }
    ptxas
}

/// benches/speed/sass.py, the offline SASS reader the speed notes cite: it assembles kache's PTX
/// of a grid-strided sum with ptxas, disassembles it with nvdisasm (both from `make deps`) and
/// finds the sum's loop with its global loads.
#[test]
fn the_sass_reader_finds_a_kernels_loops_and_their_loads() {
    let root = crate::common::root();
    let Some(ptxas) = sass_tools() else { return };
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    let k = jit.load_file(root.join("benches/speed/kernels.rs")).unwrap().kernel("reduce_while").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ptx = dir.path().join("kache-reduce_while.ptx");
    std::fs::write(&ptx, suite_ptx(&k)).unwrap();
    let o = std::process::Command::new("python3")
        .arg(root.join("benches/speed/sass.py"))
        .arg(&ptx)
        .env("KACHE_PTXAS", ptxas)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}{text}", String::from_utf8_lossy(&o.stderr));
    let line = text.lines().find(|l| l.trim_start().starts_with("kache ")).unwrap_or_else(|| panic!("no kache line in\n{text}"));
    assert!(text.starts_with("reduce_while\n") && line.contains("regs "), "{text}");
    // Each loop is (instructions, LDG, STG, LDS): the sum's loops load from global memory.
    let loops = line.split_once("LDS): ").map(|(_, l)| l).unwrap_or_default();
    let loads: Vec<usize> = loops.split('(').skip(1).filter_map(|t| t.split(", ").nth(1)?.parse().ok()).collect();
    assert!(loads.iter().any(|n| *n > 0), "no loop with a global load: {line}");
}

/// A loop unrolled by 4 whose step is a constant is unrolled again by ptxas, as NVIDIA's is,
/// when its latch is a conditional back edge (`codegen/latches.rs`): the unchecked code of the
/// corpus's row loops keeps NVRTC's loads in flight (H100 run 2: layernorm's and rmsnorm's
/// unchecked code had 4 loads a trip against NVRTC's 16, and ran at 0.904x).
#[test]
fn block_strided_loops_keep_nvrtcs_loads_in_flight() {
    let root = crate::common::root();
    let Some(ptxas) = sass_tools() else { return };
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    let m = jit.load_file(root.join("benches/speed/kernels/rows.rs")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // NVRTC's SASS of the same sources: 16 loads a trip in each row pass's first loop.
    for (name, want) in [("layernorm", 16), ("rmsnorm", 16), ("softmax3", 16)] {
        let k = m.kernel(name).unwrap();
        let target = kache::Target::Nvptx(kache::Arch::parse("sm_90").unwrap());
        let c = k.compile_unchecked(target, &kache::Specialization::uniform(k.program(), kache::Layout::C)).unwrap();
        let ptx = dir.path().join(format!("kache-{name}-unchecked.ptx"));
        std::fs::write(&ptx, c.ptx().unwrap()).unwrap();
        let o = std::process::Command::new("python3")
            .arg(root.join("benches/speed/sass.py"))
            .arg(&ptx)
            .env("KACHE_PTXAS", &ptxas)
            .output()
            .expect("python3 runs");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}{text}", String::from_utf8_lossy(&o.stderr));
        let line = text.lines().find(|l| l.trim_start().starts_with("unchk ")).unwrap_or_else(|| panic!("no unchk line in\n{text}"));
        let loops = line.split_once("LDS): ").map(|(_, l)| l).unwrap_or_default();
        let most = loops.split('(').skip(1).filter_map(|t| t.split(", ").nth(1)?.parse::<usize>().ok()).max().unwrap_or(0);
        assert!(most >= want, "{name}: at most {most} loads a trip, NVRTC's has {want}: {line}");
    }
}

/// kache's bounds-checked PTX of `k` for sm_90 with C layouts.
fn suite_ptx(k: &kache::Kernel) -> String {
    let target = kache::Target::Nvptx(kache::Arch::parse("sm_90").unwrap());
    let c = k.compile(target, &kache::Specialization::uniform(k.program(), kache::Layout::C)).unwrap();
    c.ptx().unwrap().to_string()
}
