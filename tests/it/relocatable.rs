//! Relocatable captures: device arrays captured through slots (a hidden parameter of each CUDA
//! launch, a variable of the host module), so the code and its key hold no address. Keys, PTX (checked by ptxas), the store (no pointer, no
//! `not_persisted`), a second process that hits with the same key, serialisation with slots
//! bound by name, and the rough edges of captures: every array named, one warning per kernel
//! per process, `Module::persist(false)`, pinned entries freed with their kernel.

use std::path::Path;
use std::process::Command;

use kache::cache::Tier;
use kache::{Arch, CompiledKernel, Config, Device, Grid, Jit, Layout, Origin, Specialization, Target};

use crate::cache::{all_store_bytes, assert_no_pointer};
use crate::capture_scenarios as scenarios;
use crate::common::{assemble, ptxas};

const SM90: Target = Target::Nvptx(Arch { sm: 90, accelerated: false });

const SHOP: &str = r#"
fn price(i: usize) -> f32 { PRICES[i] }
#[kernel]
pub fn totals(q: &[f32], out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = q[i] * price(i); } }
"#;

fn relocatable(dir: Option<&Path>) -> Jit {
    let c = Config::in_memory().relocatable_captures(true);
    Jit::new(match dir {
        Some(d) => c.with_cache_dir(d),
        None => c,
    })
    .unwrap()
}

fn totals(jit: &Jit, prices: &kache::DeviceArray<f32>) -> kache::Kernel {
    jit.load_source("shop.rs", SHOP).unwrap().with_global("PRICES", prices).unwrap().kernel("totals").unwrap()
}

fn run_totals(k: &kache::Kernel, dev: &Device) -> Vec<f32> {
    let q = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    k.launch(dev, Grid::linear(3, 32), (&q, &mut out)).unwrap();
    out.download().unwrap()
}

#[test]
fn the_key_holds_no_address_but_the_type_and_shape_and_the_mode() {
    let dev = Device::host();
    let spec = |k: &kache::Kernel| Specialization::uniform(k.program(), Layout::C);
    let (a, b) = (dev.upload(&[1.0f32, 2.0, 3.0]).unwrap(), dev.upload(&[9.0f32, 8.0, 7.0]).unwrap());
    let jit = relocatable(None);
    let (ka, kb) = (totals(&jit, &a), totals(&jit, &b));
    let key = |k: &kache::Kernel| k.explain(Target::Host, &spec(k)).unwrap().key;
    assert_eq!(key(&ka), key(&kb), "two arrays of one type and shape share the code");
    let longer = dev.upload(&[1.0f32; 4]).unwrap();
    assert_ne!(key(&ka), key(&totals(&jit, &longer)), "the extent is compiled in");
    let baked = Jit::new(Config::in_memory()).unwrap();
    let (ba, bb) = (totals(&baked, &a), totals(&baked, &b));
    assert_ne!(key(&ba), key(&bb), "baked keys tell arrays apart");
    assert_ne!(key(&ka), key(&ba), "the modes never share a key");
    // Still two kernels, each on its own array.
    assert_eq!(run_totals(&ka, &dev), vec![1.0, 4.0, 9.0]);
    assert_eq!(run_totals(&kb, &dev), vec![9.0, 16.0, 21.0]);
    assert_eq!(run_totals(&ka, &dev), vec![1.0, 4.0, 9.0]);
    assert!(matches!(kb.compile_for(&dev).unwrap().origin(), Origin::Cache(Tier::Memory)), "the second binding hit memory");
    assert!(matches!(&ka.captures()[0], kache::CaptureValue::Device(d) if d.ptr() == a.device_ptr()), "captures() reports the array");
}

/// Two captured arrays, one read in a device function and one in the kernel.
const TWO: &str = r#"
fn price(i: usize) -> f32 { PRICES[i] }
#[kernel]
pub fn totals(q: &[f32], out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = q[i] * price(i) + TAX[i]; } }
"#;

/// The `.param` lines of the PTX's entry.
fn entry_params(ptx: &str) -> usize {
    let entry = &ptx[ptx.find(".entry").expect("an entry")..];
    entry[..entry.find(')').expect("the parameter list ends")].matches(".param").count()
}

#[test]
fn ptx_takes_each_captured_address_as_a_parameter_and_ptxas_accepts_it() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let tax = dev.upload(&[0.5f32, 0.5, 0.5]).unwrap();
    let kernel = |jit: &Jit| {
        jit.load_source("two.rs", TWO)
            .unwrap()
            .with_global("PRICES", &a)
            .unwrap()
            .with_global("TAX", &tax)
            .unwrap()
            .kernel("totals")
            .unwrap()
    };
    let k = kernel(&relocatable(None));
    let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    let ptx = c.ptx().unwrap();
    // No module variable: loading the module fills nothing, the launch passes the addresses.
    assert!(!ptx.contains("__kache_capture_slot"), "{ptx}");
    assert!(!ptx.contains(".const") && !ptx.contains(".global .align"), "a module variable: {ptx}");
    for d in [&a, &tax] {
        for form in [d.device_ptr().to_string(), format!("{:x}", d.device_ptr())] {
            assert!(!ptx.contains(&form), "the address is in the PTX");
        }
    }
    if let Some(p) = ptxas() {
        assemble(&p, ptx, "a relocatable capture");
    }
    let baked = kernel(&Jit::new(Config::in_memory()).unwrap());
    let b = baked.compile(SM90, &Specialization::uniform(baked.program(), Layout::C)).unwrap();
    assert!(!b.ptx().unwrap().contains("__kache_capture_slot"), "baked mode has no slot");
    assert_eq!(entry_params(ptx), entry_params(b.ptx().unwrap()) + 2, "one hidden parameter per captured array");
    assert_eq!(c.capture_slots().len(), 2, "two slots");
}

#[test]
fn every_capture_scenario_relocatable_is_persisted_without_a_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let jit = relocatable(Some(dir.path()));
    scenarios::JIT.with(|j| *j.borrow_mut() = Some(jit.clone()));
    scenarios::POINTERS.with(|p| p.borrow_mut().clear());
    for (name, f) in scenarios::ALL {
        for w in [scenarios::Wrap::Kache, scenarios::Wrap::Foreign] {
            f(&dev, w).unwrap_or_else(|e| panic!("{name} ({w:?}): {e}"));
        }
    }
    scenarios::JIT.with(|j| *j.borrow_mut() = None);
    let ptrs = scenarios::POINTERS.with(|p| p.borrow().clone());
    assert!(ptrs.len() > 30, "scenarios recorded {} pointers", ptrs.len());
    // The GPU target too.
    let a = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let k = totals(&jit, &a);
    k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    let stats = jit.cache().stats();
    assert_eq!(stats.not_persisted, 0, "{stats:?}");
    assert!(stats.entries > 20, "device-capturing kernels were persisted: {stats:?}");
    drop(jit);
    let mut ptrs = ptrs;
    ptrs.push(a.device_ptr());
    assert_no_pointer(&all_store_bytes(dir.path()), &ptrs);
}

/// Runs this test binary's `relocatable::child_process` in a new process with `env`; returns
/// its stdout and stderr.
fn child(role: &str, dir: &Path, env: &[(&str, &str)]) -> (String, String) {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "relocatable::child_process", "--nocapture", "--test-threads=1"])
        .env("KACHE_TEST_CHILD", role)
        .env("KACHE_DIR", dir);
    for v in ["KACHE_REMOTE", "KACHE_QUIET", "KACHE_LOG", "KACHE_STRICT", "KACHE_CAPTURES", "KACHE_DISABLE"] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "child {role} failed:\n{out}\n{err}");
    assert!(out.contains("1 passed"), "the child test did not run:\n{out}");
    (out, err)
}

fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("no {name} in:\n{out}"))
}

/// What the parent tests run in a fresh process (nothing on its own).
#[test]
#[ignore = "run in a child process by the tests of this module"]
fn child_process() {
    let dev = Device::host();
    match std::env::var("KACHE_TEST_CHILD").as_deref() {
        Ok("relocatable") => {
            // A fresh process: its own array (values from the parent), from_env's JIT.
            let values: Vec<f32> =
                field(&std::env::var("KACHE_TEST_VALUES").unwrap(), "v").split(',').map(|v| v.parse().unwrap()).collect();
            let jit = Jit::from_env().unwrap();
            assert!(jit.config().relocatable_captures);
            let prices = dev.upload(&values).unwrap();
            let k = totals(&jit, &prices);
            let c = k.compile_for(&dev).unwrap();
            let got = run_totals(&k, &dev);
            assert_eq!(got, vec![values[0], 2.0 * values[1], 3.0 * values[2]]);
            let s = jit.cache().stats();
            println!("\nkey={}\norigin={:?}\nnot_persisted={}\nptr={}", c.key(), c.origin(), s.not_persisted, prices.device_ptr());
        }
        Ok("warnings") => {
            // Baked: one warning per kernel per process, whatever the number of JITs; none for
            // a module that opted out of persisting.
            for _ in 0..3 {
                let jit = Jit::from_env().unwrap();
                let prices = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
                run_totals(&totals(&jit, &prices), &dev);
                let quiet = jit.load_source("quiet.rs", SHOP).unwrap().persist(false).with_global("PRICES", &prices).unwrap();
                run_totals(&quiet.kernel("totals").unwrap(), &dev);
            }
            println!("\ndone=1");
        }
        Ok(other) => panic!("unknown child role {other}"),
        Err(_) => panic!("run by the parent tests only"),
    }
}

#[test]
fn a_second_process_hits_with_the_same_key_and_binds_its_own_array() {
    let dir = tempfile::tempdir().unwrap();
    let env = |v: &'static str| [("KACHE_CAPTURES", "relocatable"), ("KACHE_TEST_VALUES", v)];
    let (first, err1) = child("relocatable", dir.path(), &env("v=10,20,30"));
    assert!(field(&first, "origin").starts_with("Compiled"), "{first}");
    let (second, err2) = child("relocatable", dir.path(), &env("v=1,2,4"));
    assert_eq!(field(&second, "origin"), format!("{:?}", Origin::Cache(Tier::Local)));
    assert_eq!(field(&first, "key"), field(&second, "key"));
    for (out, err) in [(&first, &err1), (&second, &err2)] {
        assert_eq!(field(out, "not_persisted"), "0");
        assert!(!err.contains("not cached on disk"), "a warning in relocatable mode: {err}");
    }
    let ptrs: Vec<u64> = [&first, &second].iter().map(|o| field(o, "ptr").parse().unwrap()).collect();
    assert_no_pointer(&all_store_bytes(dir.path()), &ptrs);
}

#[test]
fn an_unknown_capture_mode_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "relocatable::child_process", "--test-threads=1"])
        .env("KACHE_TEST_CHILD", "relocatable")
        .env("KACHE_TEST_VALUES", "v=1,2,3")
        .env("KACHE_DIR", dir.path())
        .env("KACHE_CAPTURES", "by-pointer")
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success());
    assert!(all.contains("KACHE_CAPTURES=by-pointer is neither `baked` nor `relocatable`"), "{all}");
}

#[test]
fn the_not_cached_warning_appears_once_per_kernel_per_process_and_never_with_persist_false() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err) = child("warnings", dir.path(), &[]);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("not cached on disk")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("kernel 'totals'") && lines[0].contains("KACHE_CAPTURES=relocatable"), "{err}");
}

#[test]
fn serialised_slots_are_bound_by_name_and_a_launch_without_one_names_it() {
    let dev = Device::host();
    let jit = relocatable(None);
    let src = r#"
        fn scaled(i: usize) -> f32 { TABLE[i] * SCALE[0] }
        #[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < 3 { o[i] = scaled(i); } }
    "#;
    let (table, scale) = (dev.upload(&[1.0f32, 2.0, 3.0]).unwrap(), dev.upload(&[10.0f32]).unwrap());
    let k = jit.load_source("t.rs", src).unwrap().with_global("TABLE", &table).unwrap().with_global("SCALE", &scale).unwrap();
    let bytes = k.kernel("k").unwrap().serialize(Target::Host).unwrap();
    assert_no_pointer(&bytes, &[table.device_ptr(), scale.device_ptr()]);
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let fresh = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap();
    let names: Vec<(&str, bool)> = fresh.capture_slots().iter().map(|s| (s.name(), s.is_bound())).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&("TABLE", false)) && names.contains(&("SCALE", false)), "{names:?}");
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    // One slot bound, the other not: the launch names the missing one, and nothing runs.
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let half = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("TABLE", &table).unwrap();
    match half.launch(&dev, Grid::linear(3, 32), (&mut out,)) {
        Err(e @ kache::Error::UnboundCapture { .. }) => assert!(e.to_string().contains("'SCALE' (global 'SCALE')"), "{e}"),
        other => panic!("expected UnboundCapture, got {other:?}"),
    }
    assert_eq!(out.download().unwrap(), vec![0.0; 3]);
    // Wrong name, type, shape or a read-only array for a written slot: typed errors.
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let e = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("PRICES", &table).unwrap_err().to_string();
    assert!(e.contains("no capture slot of that name") && e.contains("'TABLE'") && e.contains("'SCALE'"), "{e}");
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let e =
        unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("TABLE", &dev.upload(&[1i32, 2, 3]).unwrap()).unwrap_err().to_string();
    assert!(e.contains("`f32`"), "{e}");
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let e = unsafe { CompiledKernel::deserialize(&bytes) }
        .unwrap()
        .bind("SCALE", &dev.upload(&[1.0f32, 2.0]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("shape [1]"), "{e}");
    // Both bound: it runs on this process's arrays, and keeps them alive.
    let k2 = {
        let (t, s) = (dev.upload(&[4.0f32, 5.0, 6.0]).unwrap(), dev.upload(&[0.5f32]).unwrap());
        // SAFETY: the bytes are `serialize`'s output, from this process.
        unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("TABLE", &t).unwrap().bind("SCALE", &s).unwrap()
    };
    k2.launch(&dev, Grid::linear(3, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0, 2.5, 3.0]);
    // Rebinding a slot of a kernel already run reloads it with the new address.
    let k3 = k2.bind("SCALE", &scale).unwrap();
    k3.launch(&dev, Grid::linear(3, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![40.0, 50.0, 60.0]);
}

#[test]
fn a_written_slot_refuses_a_read_only_array() {
    let dev = Device::host();
    let log = dev.upload(&[0i32; 2]).unwrap();
    let src = "#[kernel] pub fn k() { let i = global_id_x(); if i < 2 { LOG[i] = 7; } }";
    let bytes = relocatable(None).load_source("w.rs", src).unwrap().with_global("LOG", &log).unwrap().kernel("k").unwrap();
    let bytes = bytes.serialize(Target::Host).unwrap();
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let e = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("LOG", &log.read_only()).unwrap_err().to_string();
    assert!(e.contains("read-only"), "{e}");
    // SAFETY: the bytes are `serialize`'s output, from this process.
    let k = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("LOG", &log).unwrap();
    k.launch(&dev, Grid::linear(2, 32), ()).unwrap();
    assert_eq!(log.download().unwrap(), vec![7, 7]);
}

#[test]
fn closure_slots_take_the_parameter_name_or_factory_qualified() {
    let dev = Device::host();
    let src = r#"
        pub fn make(table: &[f32]) -> impl Kernel {
            let read = move |i: usize| table[i];
            move |o: &mut [f32]| { let i = global_id_x(); if i < 2 { o[i] = read(i) + 1.0; } }
        }
    "#;
    let t = dev.upload(&[1.0f32, 2.0]).unwrap();
    let bytes = relocatable(None).load_source("c.rs", src).unwrap().closure("make", (&t,)).unwrap().serialize(Target::Host).unwrap();
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    for name in ["table", "make::table"] {
        // SAFETY: the bytes are `serialize`'s output, from this process.
        let k = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind(name, &dev.upload(&[5.0f32, 6.0]).unwrap()).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
        assert_eq!(out.download().unwrap(), vec![6.0, 7.0], "bound as {name}");
    }
}

#[test]
fn serialisation_refusal_names_every_captured_array() {
    let dev = Device::host();
    let (a, b) = (dev.upload(&[1.0f32]).unwrap(), dev.upload(&[2.0f32]).unwrap());
    let src = "fn f() -> f32 { B[0] } #[kernel] pub fn k(o: &mut [f32]) { o[0] = A[0] + f(); }";
    let k = Jit::new(Config::in_memory()).unwrap().load_source("s.rs", src).unwrap();
    let k = k.with_global("A", &a).unwrap().with_global("B", &b).unwrap().kernel("k").unwrap();
    let e = k.serialize(Target::Host).unwrap_err().to_string();
    assert!(e.contains("device arrays 'A' (global) and 'B' (global, via device function 'f')"), "{e}");
}

#[test]
fn persist_false_writes_nothing_and_strict_mode_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let jit = Jit::new(Config { strict: true, ..Config::in_memory().with_cache_dir(dir.path()) }).unwrap();
    let prices = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let m = jit.load_source("shop.rs", SHOP).unwrap().persist(false);
    assert_eq!(run_totals(&m.with_global("PRICES", &prices).unwrap().kernel("totals").unwrap(), &dev), vec![1.0, 4.0, 9.0]);
    let host_only = "#[kernel] pub fn k(o: &mut [f32]) { o[0] = 1.0; }";
    let k = jit.load_source("h.rs", host_only).unwrap().persist(false).kernel("k").unwrap();
    assert!(matches!(k.compile_for(&dev).unwrap().origin(), Origin::Compiled { .. }));
    drop(k);
    let again = jit.load_source("h.rs", host_only).unwrap().persist(false).kernel("k").unwrap();
    assert!(matches!(again.compile_for(&dev).unwrap().origin(), Origin::Cache(Tier::Memory)), "kept in memory");
    assert_eq!(jit.cache().stats().entries, 0, "nothing on disk");
    // The same module persisting, in strict mode: the device-capturing kernel is an error.
    let e = jit.load_source("shop.rs", SHOP).unwrap().with_global("PRICES", &prices).unwrap().kernel("totals").unwrap();
    let q = dev.upload(&[1.0f32; 3]).unwrap();
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    assert!(matches!(e.launch(&dev, Grid::linear(3, 32), (&q, &mut out)), Err(kache::Error::NotPersisted(_))));
}

#[test]
fn pinned_memory_entries_go_with_the_last_kernel_using_them() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let m = jit.load_source("shop.rs", SHOP).unwrap();
    let before = jit.cache().memory_entries();
    for round in 0..20 {
        let prices = dev.upload(&[round as f32, 1.0, 1.0]).unwrap();
        let k = m.with_global("PRICES", &prices).unwrap().kernel("totals").unwrap();
        assert_eq!(run_totals(&k, &dev)[0], round as f32);
        assert_eq!(jit.cache().memory_entries(), before + 1, "one pinned entry while its kernel lives");
    }
    assert_eq!(jit.cache().memory_entries(), before, "every pinned entry is gone with its kernel");
    assert_eq!(jit.cache().stats().not_persisted, 20);
}
