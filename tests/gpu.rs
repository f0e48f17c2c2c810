//! The semantic tests on a real GPU (CUDA): the corpus scenarios, every `f32` reciprocal
//! against IEEE's, the capture scenarios (with kache and foreign arrays, baked and
//! relocatable), the cubin tier, device captures leaving
//! nothing persisted, a relocatable device-capturing kernel hitting in a second process, and
//! the cost of relocatable captures against baked ones (printed, never asserted), the speed
//! suite's GEMMs and attention at small sizes against their float64 references; and on two
//! GPUs, one cached kernel launched on both from two threads (compiled and its cubin built or
//! fetched once) and a capture of GPU 0 refused on GPU 1.
//! Each test skips with a printed reason where there is no driver or device, and fails instead
//! under `KACHE_REQUIRE_GPU=1`; the two-GPU tests skip where there is one GPU, and fail instead
//! under `KACHE_REQUIRE_GPUS=2`. Run on a GPU machine with `../shared/tools/stage-gpu`, then
//! `bash .gpu/run.sh`.

// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use kache::cache::Tier;
use kache::{Config, Device, Grid, Jit, Layout, Origin, Specialization};

#[path = "shared/capture_scenarios.rs"]
mod capture_scenarios;
#[path = "shared/foreign.rs"]
mod foreign;
#[path = "shared/math_check.rs"]
mod math_check;
#[path = "shared/scenarios/mod.rs"]
mod scenarios;
#[path = "../benches/speed/suite.rs"]
#[allow(dead_code)]
mod suite;
#[path = "shared/tma_boxes.rs"]
mod tma_boxes;

fn gpu() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("KACHE_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("no usable GPU and KACHE_REQUIRE_GPU=1: {e}");
            }
            eprintln!("skipping: no usable GPU ({e}); set KACHE_REQUIRE_GPU=1 to make this a failure");
            None
        }
    }
}

/// The GPU, where it is sm_90 or later (the tensor copy); `None`, saying so, on an older one.
fn hopper() -> Option<Device> {
    let d = gpu()?;
    if d.compute_capability().is_some_and(|(major, _)| major < 9) {
        eprintln!("skipping: the tensor copy needs sm_90, this GPU is {}", d.describe());
        return None;
    }
    Some(d)
}

#[test]
fn device_is_described() {
    let Some(d) = gpu() else { return };
    eprintln!("GPU: {}", d.describe());
    assert!(d.is_cuda());
    assert!(matches!(Device::cuda(4096), Err(kache::Error::NoCudaDevice { ordinal: 4096, .. })));
}

#[test]
fn corpus_scenarios_on_cuda() {
    let Some(d) = gpu() else { return };
    let mut failures = Vec::new();
    for (name, f) in scenarios::ALL {
        match std::panic::catch_unwind(|| f(&d)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(format!("{name}: {e}")),
            Err(_) => failures.push(format!("{name}: panicked")),
        }
    }
    eprintln!("corpus scenarios on CUDA: {} of {} passed", scenarios::ALL.len() - failures.len(), scenarios::ALL.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every float method on the GPU (libdevice) within the bound `docs/language.md` documents,
/// plus one ulp for Rust's own rounding; the worst error per method is printed. Integer
/// methods and float tests exactly.
/// A thread that fails a check before its tensor copy ends the launch with the fault, on the
/// GPU too: the threads waiting on the copy's mbarrier see the launch's fault and end instead
/// of waiting for ever (a misaligned destination here, in thread 0, the one that copies).
#[test]
fn a_fault_before_a_copy_ends_the_launch_instead_of_its_waiters_hanging() {
    let Some(d) = hopper() else { return };
    let src = r#"
#[kernel]
pub fn k(map: &TensorMap<f32, 32, 4, 128>, at: usize, out: &mut [f32]) {
    let tile = shared_array::<f32, 1024>();
    let bar = shared_array::<u64, 1>();
    if thread_idx_x() == 0 {
        mbarrier_init(&mut bar[0], 1);
        fence_proxy_async();
        mbarrier_arrive_expect_tx(&mut bar[0], 512);
        cp_async_bulk_tensor_2d(&mut tile[at], map, 0, 0, &mut bar[0]);
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    out[thread_idx_x() as usize] = tile[thread_idx_x() as usize];
}
"#;
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("hang.rs", src).unwrap().kernel("k").unwrap();
    let data: Vec<f32> = (0..64 * 32).map(|i| i as f32).collect();
    let a = d.upload(&data).unwrap();
    let map = kache::TensorMap::tiled(&a.view(0, &[64, 32], &[32, 1]).unwrap(), 32, 4, 128).unwrap();
    let mut out = d.alloc::<f32>(&[128]).unwrap();
    let g = Grid::new(1u32, 128u32);
    k.launch(&d, g, (&map, 0usize, &mut out)).unwrap();
    // The launch returns before the GPU runs it; the download that waits for it reports (and
    // would wait for ever if the waiting threads hung).
    k.launch(&d, g, (&map, 4usize, &mut out)).unwrap();
    let e = out.download().unwrap_err().to_string();
    assert!(e.contains("not aligned to 1024 bytes") && e.contains("hang.rs:"), "{e}");
    // The device is usable after it.
    k.launch(&d, g, (&map, 0usize, &mut out)).unwrap();
}

/// The tensor memory accelerator's boxes (sm_90 on): every swizzle, several element types,
/// boxes across and outside the array's edges, equal to the reference the host backend meets.
/// Every GEMM of the speed suite (mma.sync, wgmma by `cp_async`, by tensor copies and
/// warp-specialised, 16-bit and tf32, with and without the fused epilogue, and the FMA sgemm)
/// and the attention kernels (head dims 64 and 128, causal or not), on the GPU at the dry run's
/// sizes, safe and unchecked: each row's result checked against its float64 reference.
#[test]
fn the_speed_suites_gemms_and_attention_on_cuda_equal_their_references() {
    let Some(_) = hopper() else { return };
    let root = scenarios::helpers::root();
    let opts = suite::Options {
        dry_run: false,
        small: true,
        reps: 1,
        batches: 1,
        root,
        ptx_dir: None,
        only: vec!["gemm".into(), "attention".into()],
    };
    let report = suite::run(&opts).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", suite::table(&report));
    let failed: Vec<_> = report.failures().collect();
    assert!(failed.is_empty(), "failed rows: {failed:#?}");
    let kache_rows = |prefix: &str| report.rows.iter().filter(|r| r.kernel.starts_with(prefix) && r.implementation == "kache").count();
    // 4 mma.sync rows, 3 of each wgmma kind, 2 tf32 wgmma, sgemm; 4 attention rows.
    assert_eq!((kache_rows("gemm_"), kache_rows("sgemm_"), kache_rows("attn_")), (4 + 9 + 2, 1, 4), "{:#?}", report.rows);
}

#[test]
fn tensor_copies_on_cuda_equal_the_host_backends_boxes() {
    let Some(d) = hopper() else { return };
    tma_boxes::all_boxes(&d, &Jit::new(Config::in_memory()).unwrap());
}

#[test]
fn math_methods_on_cuda_within_the_documented_ulps() {
    let Some(d) = gpu() else { return };
    // Rust's own result may be an ulp off the exact one, two where it comes from the libm
    // crate (erf, erfc, exp10: musl's algorithms), and the GPU's may be off the other way.
    let slack = |name: &str| if matches!(name, "erf" | "erfc" | "exp10") { 2 } else { 1 };
    let bound = |name: &str, f32: bool| {
        let (_, b) = math_check::GPU_ULPS.iter().find(|(n, _)| *n == name)?;
        b.map(|(a, b)| if f32 { a as u64 } else { b as u64 } + slack(name))
    };
    math_check::check_float_methods(&d, bound).unwrap_or_else(|e| panic!("{e}"));
    math_check::check_float_tests(&d).unwrap();
    for r in [
        math_check::check_i32(&d),
        math_check::check_i64(&d),
        math_check::check_u32(&d),
        math_check::check_u64(&d),
        math_check::check_usize(&d),
    ] {
        r.unwrap();
    }
}

/// kache's `f32` reciprocal on the GPU (`1.0 / x` is computed in `f64` and rounded once, not
/// by `rcp.rn.f32`: `reciprocals_through_f64` in codegen/pipeline.rs) gives IEEE's result, the
/// bits of Rust's `1.0 / x` (any NaN for NaN), for every one of the 2^32 inputs.
#[test]
fn every_f32_reciprocal_on_cuda_is_ieee() {
    let Some(d) = gpu() else { return };
    let jit = Jit::new(Config::in_memory()).unwrap();
    let src = "#[kernel] pub fn recip(x: &[f32], y: &mut [f32]) { let i = global_id_x(); if i < x.len() { y[i] = 1.0 / x[i]; } }";
    let k = jit.load_source("recip.rs", src).unwrap().kernel("recip").unwrap();
    const CHUNK: u32 = 1 << 28;
    let (mut wrong, mut first) = (0u64, Vec::new());
    for c in 0..16u32 {
        let x: Vec<f32> = (0..CHUNK).map(|i| f32::from_bits(c * CHUNK + i)).collect();
        let xd = d.upload(&x).unwrap();
        let mut yd = d.alloc::<f32>(&[CHUNK as usize]).unwrap();
        k.launch(&d, Grid::linear(CHUNK as usize, 256), (&xd, &mut yd)).unwrap();
        for (x, y) in x.iter().zip(yd.download().unwrap()) {
            let want = 1.0 / *x;
            if y.to_bits() != want.to_bits() && !(y.is_nan() && want.is_nan()) {
                wrong += 1;
                if first.len() < 16 {
                    first.push((x.to_bits(), y.to_bits(), want.to_bits()));
                }
            }
        }
    }
    assert_eq!(wrong, 0, "(input, GPU, IEEE) bits where they differ, the first: {first:#x?}");
}

#[test]
fn capture_scenarios_on_cuda() {
    let Some(d) = gpu() else { return };
    let mut failures = Vec::new();
    let mut n = 0;
    for (name, f) in capture_scenarios::ALL {
        for w in [capture_scenarios::Wrap::Kache, capture_scenarios::Wrap::Foreign] {
            n += 1;
            match std::panic::catch_unwind(|| f(&d, w)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{name} ({w:?}): {e}")),
                Err(_) => failures.push(format!("{name} ({w:?}): panicked")),
            }
        }
    }
    eprintln!("capture scenarios on CUDA: {} of {n} passed", n - failures.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn relocatable_capture_scenarios_on_cuda() {
    let Some(d) = gpu() else { return };
    let mut failures = Vec::new();
    for (name, f) in capture_scenarios::ALL {
        for w in [capture_scenarios::Wrap::Kache, capture_scenarios::Wrap::Foreign] {
            match std::panic::catch_unwind(|| capture_scenarios::with_relocatable_jit(|| f(&d, w))) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failures.push(format!("{name} ({w:?}): {e}")),
                Err(_) => failures.push(format!("{name} ({w:?}): panicked")),
            }
        }
    }
    eprintln!(
        "relocatable capture scenarios on CUDA: {} of {} passed",
        2 * capture_scenarios::ALL.len() - failures.len(),
        2 * capture_scenarios::ALL.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

const TOTALS: &str = r#"
fn price(i: usize) -> f32 { PRICES[i % 3] }
#[kernel] pub fn totals(q: &[f32], out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = q[i] * price(i); } }
"#;

/// What `a_relocatable_device_capturing_kernel_hits_in_a_second_process` runs in each child
/// process (nothing on its own): a JIT from the environment (`KACHE_CAPTURES=relocatable`), its
/// own array of prices, one launch checked, and what it saw, printed.
#[test]
#[ignore = "run in a child process by a_relocatable_device_capturing_kernel_hits_in_a_second_process"]
fn relocatable_child() {
    let d = Device::cuda(0).unwrap();
    let prices: Vec<f32> = std::env::var("KACHE_TEST_PRICES").unwrap().split(',').map(|v| v.parse().unwrap()).collect();
    let prices = d.upload(&prices).unwrap();
    let q = d.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut out = d.alloc::<f32>(&[4]).unwrap();
    d.synchronize().unwrap();
    let t0 = std::time::Instant::now();
    let jit = Jit::from_env().unwrap();
    let k = jit.load_source("shop.rs", TOTALS).unwrap().with_global("PRICES", &prices).unwrap().kernel("totals").unwrap();
    let c = k.compile_for(&d).unwrap();
    k.launch(&d, Grid::linear(4, 32), (&q, &mut out)).unwrap();
    d.synchronize().unwrap();
    let first_ms = t0.elapsed().as_secs_f64() * 1e3;
    let p = prices.download().unwrap();
    assert_eq!(out.download().unwrap(), vec![p[0], 2.0 * p[1], 3.0 * p[2], 4.0 * p[0]]);
    let s = jit.cache().stats();
    println!(
        "\nkey={}\norigin={:?}\ncubin={:?}\nnot_persisted={}\nptr={}\nfirst_ms={first_ms:.3}",
        c.key(),
        c.origin(),
        c.cubin_origin(),
        s.not_persisted,
        prices.device_ptr()
    );
}

#[test]
fn a_relocatable_device_capturing_kernel_hits_in_a_second_process() {
    let Some(_) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = |prices: &str| {
        let o = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "relocatable_child", "--nocapture", "--test-threads=1"])
            .env("KACHE_CAPTURES", "relocatable")
            .env("KACHE_DIR", dir.path())
            .env("KACHE_TEST_PRICES", prices)
            .env_remove("KACHE_REMOTE")
            .env_remove("KACHE_STRICT")
            .output()
            .unwrap();
        let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
        assert!(o.status.success() && out.contains("1 passed"), "child failed:\n{out}\n{err}");
        assert!(!err.contains("not cached on disk"), "a warning in relocatable mode: {err}");
        out
    };
    let field = |out: &str, name: &str| -> String {
        out.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("no {name} in {out}")).to_string()
    };
    let first = run("10,25,5");
    let second = run("1,2,3");
    let third = run("7,7,7");
    assert!(field(&first, "origin").starts_with("Compiled"), "{first}");
    for later in [&second, &third] {
        assert_eq!(field(later, "origin"), "Cache(Local)", "{later}");
        assert_eq!(field(later, "cubin"), "Some(Local)", "the cubin tier serves it too: {later}");
        assert_eq!(field(later, "key"), field(&first, "key"));
    }
    for out in [&first, &second, &third] {
        assert_eq!(field(out, "not_persisted"), "0");
    }
    eprintln!(
        "relocatable device-capturing kernel, first launch in a fresh process (Jit::new to the end of the launch): miss {} ms, hit {} ms, {} ms",
        field(&first, "first_ms"),
        field(&second, "first_ms"),
        field(&third, "first_ms")
    );
    for out in [&first, &second, &third] {
        scan(dir.path(), field(out, "ptr").parse().unwrap());
    }
}

#[test]
fn a_serialised_relocatable_kernel_binds_its_slots_on_cuda() {
    let Some(d) = gpu() else { return };
    let jit = Jit::new(Config::in_memory().relocatable_captures(true)).unwrap();
    let prices = d.upload(&[10.0f32, 25.0, 5.0]).unwrap();
    let bytes = jit.load_source("shop.rs", TOTALS).unwrap().with_global("PRICES", &prices).unwrap().kernel("totals").unwrap();
    let bytes = bytes.serialize(d.target()).unwrap();
    let q = d.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut out = d.alloc::<f32>(&[4]).unwrap();
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let unbound = unsafe { kache::CompiledKernel::deserialize(&bytes) }.unwrap();
    assert!(matches!(unbound.launch(&d, Grid::linear(4, 32), (&q, &mut out)), Err(kache::Error::UnboundCapture { .. })));
    let mine = d.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let k = unsafe { kache::CompiledKernel::deserialize(&bytes) }.unwrap().bind("PRICES", &mine).unwrap();
    k.launch(&d, Grid::linear(4, 32), (&q, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1.0, 4.0, 9.0, 4.0]);
    // Rebinding after a launch loads the module again with the new address.
    let k = k.bind("PRICES", &prices).unwrap();
    k.launch(&d, Grid::linear(4, 32), (&q, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![10.0, 50.0, 15.0, 40.0]);
}

/// The cost of reading a captured array's address from its slot against having it in the code:
/// the same kernel, reading a captured table in a loop, launched in both modes; results checked,
/// times printed (speed goals live in `docs/benchmarks.md`).
#[test]
fn relocatable_and_baked_captures_cost_per_launch() {
    let Some(d) = gpu() else { return };
    let src = r#"
        fn weight(i: usize) -> f32 { TABLE[i % 256] }
        #[kernel] pub fn weigh(x: &[f32], y: &mut [f32]) {
            let i = global_id_x();
            if i < y.len() {
                let mut acc = 0.0f32;
                for k in 0..64 { acc += weight(i + k) * x[i]; }
                y[i] = acc;
            }
        }
    "#;
    let n = 1 << 20;
    let table = d.upload(&vec![0.5f32; 256]).unwrap();
    let x = d.upload(&vec![1.0f32; n]).unwrap();
    let mut y = d.alloc::<f32>(&[n]).unwrap();
    let mut report = Vec::new();
    for relocatable in [false, true] {
        let jit = Jit::new(Config::in_memory().relocatable_captures(relocatable)).unwrap();
        let k = jit.load_source("weigh.rs", src).unwrap().with_global("TABLE", &table).unwrap().kernel("weigh").unwrap();
        let grid = Grid::linear(n, 256);
        k.launch(&d, grid, (&x, &mut y)).unwrap();
        d.synchronize().unwrap();
        assert!(y.download().unwrap().iter().all(|v| *v == 32.0));
        let reps = 2000;
        let t = std::time::Instant::now();
        for _ in 0..reps {
            k.launch(&d, grid, (&x, &mut y)).unwrap();
        }
        d.synchronize().unwrap();
        let us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
        report.push(format!("{}: {us:.2} us per launch", if relocatable { "relocatable" } else { "baked" }));
    }
    eprintln!("captured table read 64 times per thread, 2^20 threads: {}", report.join(", "));
}

#[test]
fn a_dlpack_tensor_in_cuda_memory_is_an_argument_and_a_capture() {
    use dlpark::ffi::{DLDevice, DLDeviceType, DLManagedTensorVersioned};
    let Some(d) = gpu() else { return };
    // CUDA memory exported through DLPack by "another library" (here: kache's own array, kept
    // alive below; the tensor's deleter frees only the ndarray that carries its metadata).
    let memory = d.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut init: dlpark::allocation::dynamic::Initialized<DLManagedTensorVersioned> =
        Box::new(ndarray::arr1(&[0.0f32; 3])).try_into().unwrap();
    init.set_data(memory.device_ptr() as *mut std::ffi::c_void);
    init.set_device(DLDevice { device_type: DLDeviceType::CUDA, device_id: 0 });
    // SAFETY: the metadata describes `memory`, which outlives every use below.
    let tensor = unsafe { init.finish() };
    // SAFETY: nothing else touches `memory` while kernels use it.
    let t = unsafe { kache::DlpackArray::new(tensor) }.unwrap();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let src = "#[kernel] pub fn k(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < 3 { o[i] = x[i] + 10.0 * T[i]; } }";
    let k = jit.load_source("t.rs", src).unwrap().with_global("T", &t).unwrap().kernel("k").unwrap();
    let mut out = d.alloc::<f32>(&[3]).unwrap();
    k.launch(&d, Grid::linear(3, 32), (&t, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![11.0, 22.0, 33.0]);
    drop(memory);
}

const SAXPY: &str = include_str!("../examples/kernels/saxpy.rs");

fn run_saxpy(jit: &Jit, d: &Device) -> std::sync::Arc<kache::CompiledKernel> {
    let k = jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap();
    let n = 1000;
    let x = d.upload(&vec![1.0f32; n]).unwrap();
    let mut y = d.upload(&vec![2.0f32; n]).unwrap();
    k.launch(d, Grid::linear(n, 128), (3.0f32, &x, &mut y)).unwrap();
    assert!(y.download().unwrap().iter().all(|v| *v == 5.0));
    k.compile(d.target(), &Specialization::uniform(k.program(), Layout::C)).unwrap()
}

/// A cubin from `kache compile --emit cubin` for `arch`: staged beside the test binary by
/// `scripts/gpu-stage.sh` (GPU machines have no ptxas), else assembled with ptxas here.
fn staged_cubin(arch: kache::Arch) -> Vec<u8> {
    let root = scenarios::helpers::root();
    let staged = root.join(".gpu").join(format!("saxpy-{arch}.cubin"));
    if let Ok(b) = std::fs::read(&staged) {
        return b;
    }
    let ptxas =
        kache::toolchain::find_ptxas().unwrap_or_else(|| panic!("{} is not staged and no ptxas is here to build it", staged.display()));
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap();
    let c = k.compile(kache::Target::Nvptx(arch), &Specialization::uniform(k.program(), Layout::C)).unwrap();
    kache::toolchain::ptxas(&ptxas, c.ptx().unwrap(), &arch.to_string()).unwrap()
}

#[test]
fn a_cubin_from_kache_compile_runs_and_a_foreign_arch_is_refused() {
    let Some(d) = gpu() else { return };
    let kache::Target::Nvptx(arch) = d.target() else { unreachable!() };
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap();
    // SAFETY: `kache compile --emit cubin` of this very kernel, with its default (checked) options.
    let c = unsafe { k.with_cubin(arch, staged_cubin(arch)) }.unwrap();
    let n = 1000;
    let x = d.upload(&vec![1.0f32; n]).unwrap();
    let mut y = d.upload(&vec![2.0f32; n]).unwrap();
    c.launch(&d, Grid::linear(n, 128), (3.0f32, &x, &mut y)).unwrap();
    assert!(y.download().unwrap().iter().all(|v| *v == 5.0));
    // Machine code of another major architecture does not run here: the driver's reason.
    let other = kache::Arch::parse(if arch.sm / 10 == 8 { "sm_90" } else { "sm_80" }).unwrap();
    // SAFETY: as above, for another architecture (the driver refuses it).
    let c = unsafe { k.with_cubin(other, staged_cubin(other)) }.unwrap();
    let e = c.launch(&d, Grid::linear(n, 128), (3.0f32, &x, &mut y)).unwrap_err();
    eprintln!("foreign cubin refused: {e}");
    assert!(e.to_string().contains(&format!("built for {other}")), "{e}");
}

#[test]
fn cubin_tier_serves_a_later_process() {
    let Some(d) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = run_saxpy(&Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap(), &d);
    assert!(matches!(first.origin(), Origin::Compiled { .. }));
    assert_eq!(first.cubin_origin(), None, "the first load builds the cubin from PTX");
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let second = run_saxpy(&jit, &d);
    assert_eq!(second.origin(), Origin::Cache(Tier::Local));
    assert_eq!(second.cubin_origin(), Some(Tier::Local), "the second process loads the cached cubin");
    let s = jit.cache().stats();
    assert_eq!(s.entries, 2, "a PTX entry and a cubin entry");
    // One lookup per kernel and process (the first missed, the second hit); the cubin's in
    // the cubin tier's own figures.
    assert_eq!((s.misses, s.hits, s.cubin_misses, s.cubin_hits), (1, 1, 1, 1), "{s:?}");
}

#[test]
fn a_corrupt_cached_cubin_is_dropped_and_rebuilt_from_ptx() {
    let Some(d) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    run_saxpy(&Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap(), &d);
    // Damage the cubin inside a well-formed envelope (so only the driver can tell).
    let store = kache::cache::LocalStore::new(dir.path(), std::time::Duration::from_secs(5), 1 << 30).unwrap();
    for r in store.records() {
        let b = store.get(&r.key).unwrap();
        let (meta, payload) = kache::cache::envelope::decode(&b, Some(&r.key)).unwrap();
        if meta.kind == kache::cache::ArtifactKind::Cubin {
            let mut bad = payload.to_vec();
            for x in bad.iter_mut().skip(64).take(256) {
                *x = 0xff;
            }
            store.write_object(&r.key, &kache::cache::envelope::encode(&meta, &bad)).unwrap();
        }
    }
    let c = run_saxpy(&Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap(), &d);
    assert_eq!(c.cubin_origin(), None, "the damaged cubin was used");
}

fn scan(dir: &Path, ptr: u64) {
    fn walk(d: &Path, out: &mut Vec<u8>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() { walk(&p, out) } else { out.extend(std::fs::read(&p).unwrap_or_default()) }
        }
    }
    let mut all = Vec::new();
    walk(dir, &mut all);
    for needle in [ptr.to_le_bytes().to_vec(), ptr.to_string().into_bytes(), format!("{ptr:x}").into_bytes()] {
        assert!(!all.windows(needle.len()).any(|w| w == needle), "device pointer {ptr:#x} found in the store");
    }
}

#[test]
fn a_device_capturing_kernel_leaves_nothing_at_either_tier() {
    let Some(d) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let prices = d.upload(&[10.0f32, 25.0, 5.0]).unwrap();
    let src = r#"
        fn price(i: usize) -> f32 { PRICES[i] }
        #[kernel] pub fn totals(q: &[f32], out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = q[i] * price(i); } }
    "#;
    let k = jit.load_source("shop.rs", src).unwrap().with_global("PRICES", &prices).unwrap().kernel("totals").unwrap();
    let q = d.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut out = d.alloc::<f32>(&[3]).unwrap();
    k.launch(&d, Grid::linear(3, 32), (&q, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![10.0, 50.0, 15.0]);
    let s = jit.cache().stats();
    assert_eq!((s.entries, s.not_persisted), (0, 1), "{s:?}");
    drop(jit);
    scan(dir.path(), prices.device_ptr());
}

#[test]
fn rejected_ptx_reaches_the_user_with_the_jit_log() {
    let Some(d) = gpu() else { return };
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap();
    let bytes = k.serialize(d.target()).unwrap();
    // Break one instruction of the PTX inside the serialised kernel, and seal it again in a
    // valid envelope so that only the driver can refuse it.
    let (meta, payload) = kache::cache::envelope::decode(&bytes, None).unwrap();
    let text = String::from_utf8_lossy(payload).into_owned();
    let at = text.find("ld.global").expect("the PTX loads from global memory");
    let mut ptx = payload.to_vec();
    ptx[at..at + 9].copy_from_slice(b"ld.glxbal");
    let broken = kache::cache::envelope::encode(&meta, &ptx);
    // SAFETY: kache's own PTX with one instruction misspelt, which the driver refuses.
    let c = unsafe { kache::CompiledKernel::deserialize(&broken) }.unwrap();
    let x = d.upload(&[1.0f32]).unwrap();
    let mut y = d.upload(&[1.0f32]).unwrap();
    let e = c.launch(&d, Grid::linear(1, 32), (1.0f32, &x, &mut y)).unwrap_err();
    let msg = e.to_string();
    eprintln!("rejected PTX: {msg}");
    assert!(msg.contains("CUDA error"), "{msg}");
    assert!(msg.lines().count() >= 2 || msg.to_lowercase().contains("glxbal"), "the JIT's log is missing: {msg}");
}

#[test]
fn an_out_of_bounds_index_on_the_gpu_is_reported_once_by_the_next_wait() {
    let Some(d) = gpu() else { return };
    let jit = Jit::new(Config::in_memory()).unwrap();
    let src = "#[kernel] pub fn copy(x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    y[i] = x[i];\n}\n\
               #[kernel] pub fn fill(y: &mut [f32]) { let i = global_id_x(); if i < y.len() { y[i] = 9.0; } }";
    let m = jit.load_source("oob.rs", src).unwrap();
    let (copy, fill) = (m.kernel("copy").unwrap(), m.kernel("fill").unwrap());
    let x = d.upload(&[1.0f32; 4]).unwrap();
    let mut y = d.alloc::<f32>(&[8]).unwrap();
    // The launch returns before the GPU has run it; the download that waits for it reports.
    copy.launch(&d, Grid::linear(8, 8), (&x, &mut y)).unwrap();
    let fault = |e: kache::Error| match e {
        kache::Error::Launch { kernel, array, index, len, location } => (kernel, array, index, len, location),
        other => panic!("expected Error::Launch, got {other}"),
    };
    let (kernel, array, index, len, location) = fault(y.download().unwrap_err());
    assert_eq!((kernel.as_str(), array.as_str(), len, location.as_deref()), ("copy", "parameter `x`", 4, Some("oob.rs:3:12")));
    assert!((4..8).contains(&index), "{index}");
    // Reported once; the threads in bounds ran.
    assert_eq!(&y.download().unwrap()[..4], &[1.0; 4]);
    // Another checked kernel runs between the fault and the wait: the fault names its kernel.
    copy.launch(&d, Grid::linear(8, 8), (&x, &mut y)).unwrap();
    fill.launch(&d, Grid::linear(8, 8), (&mut y,)).unwrap();
    assert_eq!(fault(d.synchronize().unwrap_err()).0, "copy");
    d.synchronize().unwrap();
    assert_eq!(y.download().unwrap(), vec![9.0; 8]);
    // Unchecked code in bounds leaves nothing to report.
    // SAFETY: 4 threads, each index below 4 = x.len() <= y.len().
    unsafe { copy.launch_unchecked(&d, Grid::linear(4, 4), (&x, &mut y)) }.unwrap();
    assert_eq!(y.download().unwrap(), [vec![1.0f32; 4], vec![9.0; 4]].concat());
}

#[test]
fn cudarc_views_and_borrowed_slices_are_arguments_and_slice_views_are_captures() {
    use std::sync::Arc;
    let Some(d) = gpu() else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let n = 1 << 22;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let jit = Jit::new(Config::in_memory()).unwrap();
    // A range of a slice captured: the kernel holds the Arc, the user's handle is gone.
    let table = Arc::new(stream.clone_htod(&data).unwrap());
    let half = jit
        .load_source("v.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = G[i] * 2.0; } }")
        .unwrap()
        .with_global("G", kache::CudaSliceView::new(&table, n / 2..).unwrap())
        .unwrap()
        .kernel("k")
        .unwrap();
    assert!(kache::CudaSliceView::new(&table, n / 2..n + 1).is_err(), "a range past the slice");
    drop(table);
    let mut out = d.alloc::<f32>(&[n / 2]).unwrap();
    half.launch(&d, Grid::linear(n / 2, 256), (&mut out,)).unwrap();
    assert!(out.download().unwrap().iter().enumerate().all(|(i, v)| *v == 2.0 * (i + n / 2) as f32));
    // Borrowed slices and views as arguments, the slice dropped right after the launch: freed
    // on its stream after the kernel.
    let plus = jit
        .load_source(
            "p.rs",
            "#[kernel] pub fn k(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i] + 1.0; } }",
        )
        .unwrap()
        .kernel("k")
        .unwrap();
    let mut out = d.alloc::<f32>(&[n / 2]).unwrap();
    for round in 0..8 {
        let x = stream.clone_htod(&data).unwrap();
        if round % 2 == 0 {
            plus.launch(&d, Grid::linear(n / 2, 256), (&x.slice(n / 2..), &mut out)).unwrap();
        } else {
            let y = stream.clone_htod(&data[n / 2..]).unwrap();
            plus.launch(&d, Grid::linear(n / 2, 256), (&y, &mut out)).unwrap();
            drop(y);
        }
        drop(x);
        let _noise = stream.clone_htod(&vec![-1.0f32; n]).unwrap();
    }
    assert!(out.download().unwrap().iter().enumerate().all(|(i, v)| *v == (i + n / 2) as f32 + 1.0));
    // A mutable view written, then read on the slice's stream.
    let mut w = stream.alloc_zeros::<f32>(n).unwrap();
    let fill = jit
        .load_source("f.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = 3.0; } }")
        .unwrap()
        .kernel("k")
        .unwrap();
    fill.launch(&d, Grid::linear(n / 2, 256), (&mut w.slice_mut(..n / 2),)).unwrap();
    let back = stream.clone_dtoh(&w).unwrap();
    assert!(back[..n / 2].iter().all(|v| *v == 3.0) && back[n / 2..].iter().all(|v| *v == 0.0));
}

#[test]
fn cudarc_slices_held_by_an_arc_outlive_the_kernels_that_use_them() {
    use std::sync::Arc;
    let Some(d) = gpu() else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    // A non-blocking stream: nothing orders it with kache's legacy stream but the launches.
    let stream = ctx.new_stream().unwrap();
    let n = 1 << 22;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let jit = Jit::new(Config::in_memory()).unwrap();
    // Captured: the kernel holds the Arc; the user's handle is gone before the launch.
    let table = Arc::new(stream.clone_htod(&data).unwrap());
    let doubled = jit
        .load_source("c.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = G[i] * 2.0; } }")
        .unwrap()
        .with_global("G", &table)
        .unwrap()
        .kernel("k")
        .unwrap();
    drop(table);
    let mut out = d.alloc::<f32>(&[n]).unwrap();
    doubled.launch(&d, Grid::linear(n, 256), (&mut out,)).unwrap();
    assert!(out.download().unwrap().iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
    // An argument dropped right after the (asynchronous) launch: freed on its stream after it.
    let plus = jit
        .load_source(
            "a.rs",
            "#[kernel] pub fn k(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i] + 1.0; } }",
        )
        .unwrap()
        .kernel("k")
        .unwrap();
    for _ in 0..8 {
        let x = Arc::new(stream.clone_htod(&data).unwrap());
        plus.launch(&d, Grid::linear(n, 256), (&x, &mut out)).unwrap();
        drop(x);
        // New allocations on that stream would reuse freed memory the kernel still reads.
        let _noise = stream.clone_htod(&vec![-1.0f32; n]).unwrap();
    }
    assert!(out.download().unwrap().iter().enumerate().all(|(i, v)| *v == i as f32 + 1.0));
    // A writable argument: the slice's stream waits for the kernel before it reads.
    let mut w = Arc::new(stream.alloc_zeros::<f32>(n).unwrap());
    let fill = jit
        .load_source("w.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = 3.0; } }")
        .unwrap()
        .kernel("k")
        .unwrap();
    fill.launch(&d, Grid::linear(n, 256), (&mut w,)).unwrap();
    assert!(stream.clone_dtoh(&*w).unwrap().iter().all(|v| *v == 3.0));
}

/// GPUs 0 and 1, or `None` with a printed reason where there are fewer: a failure instead where
/// `KACHE_REQUIRE_GPUS` asks for at least two (scripts/gpu-run.sh sets it where `nvidia-smi -L`
/// lists two), or where there is no GPU at all under `KACHE_REQUIRE_GPU=1`.
fn two_gpus() -> Option<(Device, Device)> {
    let required: usize = std::env::var("KACHE_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let any_required = std::env::var("KACHE_REQUIRE_GPU").as_deref() == Ok("1");
    let count = Device::cuda_count();
    let n = *count.as_ref().unwrap_or(&0);
    if n < 2 {
        let why = match &count {
            Ok(n) => format!("{n} GPU here"),
            Err(e) => format!("no usable GPU ({e})"),
        };
        assert!(required < 2 && !(any_required && n == 0), "{why}, and KACHE_REQUIRE_GPUS={required}, KACHE_REQUIRE_GPU={any_required}");
        eprintln!("skipping: {why}, this test needs 2 (set KACHE_REQUIRE_GPUS=2 to make this a failure)");
        return None;
    }
    Some((Device::cuda(0).unwrap(), Device::cuda(1).unwrap()))
}

#[test]
fn every_gpu_opens_and_an_ordinal_past_them_is_no_cuda_device() {
    let Some(_) = gpu() else { return };
    let count = Device::cuda_count().unwrap();
    assert!(count >= 1);
    for n in 0..count {
        let d = Device::cuda(n).unwrap();
        eprintln!("GPU {n}: {}", d.describe());
        assert_eq!(d.location(), kache::Location::Cuda(n));
        assert_eq!(Device::cuda(n).unwrap(), d);
    }
    match Device::cuda(count) {
        Err(kache::Error::NoCudaDevice { ordinal, reason }) => {
            assert_eq!(ordinal, count);
            assert!(reason.contains(&format!("{count} device")), "{reason}");
        }
        other => panic!("expected NoCudaDevice for ordinal {count}, got {other:?}"),
    }
}

/// saxpy on `d` with data of its own (`seed`), checked against the reference computed here.
fn saxpy_on(k: &kache::Kernel, d: &Device, seed: usize) {
    let n = 100_000;
    let x: Vec<f32> = (0..n).map(|i| ((i * (seed + 3)) % 1000) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 17) as f32 - seed as f32).collect();
    let a = 1.5 + seed as f32;
    let xa = d.upload(&x).unwrap();
    let mut ya = d.upload(&y).unwrap();
    k.launch(d, Grid::linear(n, 256), (a, &xa, &mut ya)).unwrap();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    assert_eq!(ya.download().unwrap(), want, "saxpy on {}", d.describe());
}

/// saxpy launched on both GPUs at the same moment from two threads through one `Jit`; the
/// compiled kernel and how it was loaded on each.
fn saxpy_on_both(jit: &Jit, d0: &Device, d1: &Device) -> (std::sync::Arc<kache::CompiledKernel>, Vec<kache::ModuleLoad>) {
    let k = jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap();
    let start = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = [d0.clone(), d1.clone()]
        .into_iter()
        .enumerate()
        .map(|(seed, d)| {
            let (k, start) = (k.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                saxpy_on(&k, &d, seed);
                k.compile_for(&d).unwrap()
            })
        })
        .collect();
    let compiled: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(std::sync::Arc::ptr_eq(&compiled[0], &compiled[1]), "one compiled kernel for both GPUs");
    let c = compiled[0].clone();
    let mut loads: Vec<kache::ModuleLoad> = [d0, d1].iter().map(|d| c.loaded_on(d).expect("loaded on each GPU")).collect();
    loads.sort_by_key(|l| format!("{l:?}"));
    (c, loads)
}

/// The counters that changed between two readings: (misses, hits, cubin misses, cubin hits).
fn counted(before: &kache::cache::Stats, after: &kache::cache::Stats) -> (u64, u64, u64, u64) {
    (after.misses - before.misses, after.hits - before.hits, after.cubin_misses - before.cubin_misses, after.cubin_hits - before.cubin_hits)
}

/// The same kernel on GPU 0 and GPU 1 from two threads at once, through one `Jit`, results
/// checked: compiled (or fetched) once, its cubin built (or fetched) once, and the other GPU's
/// first launch only loads that cubin. First with an empty cache (a miss), then from the cache
/// in a second `Jit` (a hit, as in a fresh process).
#[test]
fn one_cached_kernel_runs_on_two_gpus_from_two_threads_compiled_once() {
    use kache::ModuleLoad;
    let Some((d0, d1)) = two_gpus() else { return };
    eprintln!("GPU 0: {}\nGPU 1: {}", d0.describe(), d1.describe());
    let same_machine = d0.compute_capability() == d1.compute_capability();
    let dir = tempfile::tempdir().unwrap();
    // An empty cache: one compile to PTX, one driver JIT, the other GPU reuses its cubin.
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let before = jit.cache().stats();
    let (c, loads) = saxpy_on_both(&jit, &d0, &d1);
    let after = jit.cache().stats();
    eprintln!("miss: origin {:?}, loads {loads:?}, counted {:?}", c.origin(), counted(&before, &after));
    assert!(matches!(c.origin(), Origin::Compiled { .. }));
    if same_machine {
        assert_eq!(loads, [ModuleLoad::DriverJit, ModuleLoad::Reused]);
        assert_eq!(counted(&before, &after), (1, 0, 1, 0), "one compile, one cubin built: {after:?}");
    } else {
        assert_eq!(loads, [ModuleLoad::DriverJit, ModuleLoad::DriverJit], "one cubin per compute capability");
        assert_eq!(counted(&before, &after), (1, 0, 2, 0), "{after:?}");
    }
    // Either GPU, from this thread, in turns: each launch in its own device's context.
    for round in 0..3 {
        saxpy_on(&jit.load_source("saxpy.rs", SAXPY).unwrap().kernel("saxpy").unwrap(), if round % 2 == 0 { &d1 } else { &d0 }, round);
    }
    drop((c, jit));
    // A later Jit on the same cache: the PTX and the cubin are hits, fetched once for both GPUs.
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let before = jit.cache().stats();
    let (c, loads) = saxpy_on_both(&jit, &d0, &d1);
    let after = jit.cache().stats();
    eprintln!("hit: origin {:?}, loads {loads:?}, counted {:?}", c.origin(), counted(&before, &after));
    assert_eq!(c.origin(), Origin::Cache(Tier::Local));
    if same_machine {
        assert_eq!(loads, [ModuleLoad::CachedCubin(Tier::Local), ModuleLoad::Reused]);
        assert_eq!(counted(&before, &after), (0, 1, 0, 1), "one lookup of each, no compile: {after:?}");
    }
}

/// A kernel that captured an array of GPU 0 does not run on GPU 1 (baked or relocatable), an
/// argument of GPU 1 is refused by a launch on GPU 0 (a kache array or a cudarc slice of GPU
/// 1's context), each with `Error::WrongDevice` naming the kernel, the array and both GPUs; the
/// kernel still runs on GPU 0, its captured array kept alive by the kernel alone.
#[test]
fn a_capture_from_gpu_0_is_refused_on_gpu_1() {
    let Some((d0, d1)) = two_gpus() else { return };
    let wrong = |e: kache::Error| match e {
        kache::Error::WrongDevice { kernel, array, array_on, launch_on } => (kernel, array, array_on, launch_on),
        other => panic!("expected Error::WrongDevice, got {other}"),
    };
    let (on0, on1) = (kache::Location::Cuda(0), kache::Location::Cuda(1));
    let src = "#[kernel] pub fn scaled(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i] * TABLE[i]; } }";
    for relocatable in [false, true] {
        let jit = Jit::new(Config::in_memory().relocatable_captures(relocatable)).unwrap();
        let table = d0.upload(&[2.0f32, 3.0, 4.0]).unwrap();
        let k = jit.load_source("t.rs", src).unwrap().with_global("TABLE", &table).unwrap().kernel("scaled").unwrap();
        drop(table);
        let (x1, mut o1) = (d1.upload(&[1.0f32; 3]).unwrap(), d1.alloc::<f32>(&[3]).unwrap());
        let e = k.launch(&d1, Grid::linear(3, 32), (&x1, &mut o1)).unwrap_err();
        eprintln!("refused: {e}");
        assert_eq!(wrong(e), ("scaled".into(), "captured array global 'TABLE'".into(), on0, on1), "relocatable: {relocatable}");
        let (x0, mut o0) = (d0.upload(&[1.0f32, 2.0, 3.0]).unwrap(), d0.alloc::<f32>(&[3]).unwrap());
        // An argument of GPU 1 on GPU 0.
        let e = k.launch(&d0, Grid::linear(3, 32), (&x1, &mut o0)).unwrap_err();
        assert_eq!(wrong(e), ("scaled".into(), "argument `x`".into(), on1, on0));
        k.launch(&d0, Grid::linear(3, 32), (&x0, &mut o0)).unwrap();
        assert_eq!(o0.download().unwrap(), vec![2.0, 6.0, 12.0]);
        assert_eq!(o1.download().unwrap(), vec![0.0; 3], "nothing ran on GPU 1");
    }
    // A cudarc slice of GPU 1's context, on GPU 0.
    let ctx1 = cudarc::driver::CudaContext::new(1).unwrap();
    let x = std::sync::Arc::new(ctx1.default_stream().clone_htod(&[1.0f32; 3]).unwrap());
    let k = Jit::new(Config::in_memory())
        .unwrap()
        .load_source("c.rs", "#[kernel] pub fn copy(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i]; } }")
        .unwrap()
        .kernel("copy")
        .unwrap();
    let mut o0 = d0.alloc::<f32>(&[3]).unwrap();
    assert_eq!(wrong(k.launch(&d0, Grid::linear(3, 32), (&x, &mut o0)).unwrap_err()), ("copy".into(), "argument `x`".into(), on1, on0));
    let mut o1 = d1.alloc::<f32>(&[3]).unwrap();
    k.launch(&d1, Grid::linear(3, 32), (&x, &mut o1)).unwrap();
    assert_eq!(o1.download().unwrap(), vec![1.0; 3]);
}
