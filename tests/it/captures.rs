//! Captures: globals and closures, host constants and device pointers, code libraries that keep
//! them alive, bindings as values, serialisation that refuses device pointers.

use std::sync::atomic::Ordering;

use kache::{CaptureValue, CompiledKernel, Device, Grid, IntoCapture, Target};

use crate::capture_scenarios as scenarios;
use crate::foreign::ForeignArray;
use scenarios::Wrap;

macro_rules! scenario_tests {
    ($($name:ident),* $(,)?) => {
        mod kache_array {
            use super::*;
            $(#[test] fn $name() { scenarios::$name(&Device::host(), Wrap::Kache).unwrap(); })*
        }
        mod foreign_array {
            use super::*;
            $(#[test] fn $name() { scenarios::$name(&Device::host(), Wrap::Foreign).unwrap(); })*
        }
        /// The same scenarios with relocatable captures: the same semantics.
        mod relocatable {
            use super::*;
            $(#[test] fn $name() {
                scenarios::with_relocatable_jit(|| {
                    scenarios::$name(&Device::host(), Wrap::Kache)?;
                    scenarios::$name(&Device::host(), Wrap::Foreign)
                }).unwrap();
            })*
        }
    };
}

scenario_tests!(
    read_through_device_function,
    compute_with_it,
    direct_access_from_kernel,
    write_into_captured_array,
    two_arrays_summed,
    c_order_2d_through_device_function,
    f_order_2d_captured,
    strided_captured,
    zero_d_array,
    every_scalar_type,
    read_only_device_array,
    host_values_are_constants,
    device_array_changed_in_place,
    closure_device_closure_captured_by_kernel_closure,
    closure_two_arrays,
    closure_write,
    closure_zero_d,
    closure_2d_layouts,
    closure_host_values_are_constants,
    closure_read_only,
);

#[test]
fn every_scenario_is_listed_as_a_test() {
    // The macro above names scenarios by hand; keep it in step with the list GPU tests use.
    assert_eq!(scenarios::ALL.len(), 20);
}

const SHARED_FN: &str = r#"
fn price(i: usize) -> f32 { PRICES[i] }
#[kernel]
pub fn first(out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = price(i) + 1.0; } }
#[kernel]
pub fn second(out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = price(i) * 3.0; } }
"#;

#[test]
fn compiled_kernel_keeps_captured_array_alive_after_the_user_drops_it() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32, 2.0]).unwrap();
    let f = ForeignArray::wrap(&a);
    let dropped = f.drop_flag();
    let m = crate::common::memory_jit().load_source("shared.rs", SHARED_FN).unwrap().with_global("PRICES", f.iface()).unwrap();
    let k = m.kernel("first").unwrap();
    drop(f);
    drop(a);
    drop(m);
    assert!(!dropped.load(Ordering::SeqCst), "the array was freed while a kernel references it");
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    k.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0, 3.0]);
    drop(k);
    assert!(dropped.load(Ordering::SeqCst), "the array outlived the last kernel that references it");
}

#[test]
fn device_function_capture_linked_into_two_kernels_lives_until_both_are_gone() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32, 2.0]).unwrap();
    let f = ForeignArray::wrap(&a);
    let dropped = f.drop_flag();
    let m = crate::common::memory_jit().load_source("shared.rs", SHARED_FN).unwrap().with_global("PRICES", f.iface()).unwrap();
    let k1 = m.kernel("first").unwrap();
    let k2 = m.kernel("second").unwrap();
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    k1.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0, 3.0]);
    k2.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![3.0, 6.0]);
    // Both kernels' libraries link `price`'s library, which references PRICES.
    for k in [&k1, &k2] {
        let lib = k.library();
        assert_eq!(lib.linked().len(), 1);
        assert_eq!(lib.linked()[0].name(), "price");
        assert_eq!(lib.referenced()[0].describe(), "'PRICES' (global, via device function 'price')");
    }
    drop((f, a, m));
    drop(k1);
    assert!(!dropped.load(Ordering::SeqCst), "freed while the second kernel still references it");
    k2.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![3.0, 6.0]);
    drop(k2);
    assert!(dropped.load(Ordering::SeqCst), "not freed after the last kernel was dropped");
}

#[test]
fn library_reports_every_referenced_object_with_its_path() {
    let dev = Device::host();
    let src = r#"
        static BONUS: [f32; 2] = [1.0, 2.0];
        fn inner(i: usize) -> f32 { PRICES[i] + BONUS[i] }
        fn outer(i: usize) -> f32 { inner(i) * SCALE }
        #[kernel]
        pub fn k(out: &mut [f32]) { let i = global_id_x(); if i < 2 { out[i] = outer(i) + DIRECT[i]; } }
    "#;
    let p = dev.upload(&[1.0f32, 2.0]).unwrap();
    let d = dev.upload(&[0.5f32, 0.5]).unwrap();
    let m = crate::common::memory_jit()
        .load_source("refs.rs", src)
        .unwrap()
        .with_global("PRICES", &p)
        .unwrap()
        .with_global("DIRECT", &d)
        .unwrap()
        .with_global("SCALE", 2.0f32)
        .unwrap();
    let lib = m.kernel("k").unwrap().library();
    let described: Vec<String> = lib.referenced().iter().map(|r| r.describe()).collect();
    assert!(described.contains(&"'DIRECT' (global)".to_string()), "{described:?}");
    assert!(described.contains(&"'PRICES' (global, via device function 'outer', device function 'inner')".to_string()), "{described:?}");
    assert!(described.contains(&"'BONUS' (static, via device function 'outer', device function 'inner')".to_string()), "{described:?}");
    let device: Vec<String> = lib.device_references().iter().map(|r| r.object.name().to_string()).collect();
    assert_eq!(device.len(), 2, "{device:?}");
    assert!(lib.persistable().is_err());
    let refs = lib.referenced();
    let prices = refs.iter().find(|r| r.object.name() == "PRICES").unwrap();
    assert!(prices.object.keeps_alive());
    assert_eq!(prices.object.ptr, p.device_ptr());
    let bonus = refs.iter().find(|r| r.object.name() == "BONUS").unwrap();
    assert!(!bonus.object.keeps_alive(), "host arrays are copied in, not kept alive");
}

#[test]
fn closure_library_paths_name_the_factory() {
    let dev = Device::host();
    let t = dev.upload(&[1.0f32]).unwrap();
    let src = r#"
        pub fn make(table: &[f32]) -> impl Kernel {
            let read = move |i: usize| table[i];
            move |out: &mut [f32]| { out[0] = read(0); }
        }
    "#;
    let k = crate::common::memory_jit().load_source("f.rs", src).unwrap().closure("make", (&t,)).unwrap();
    let lib = k.library();
    assert_eq!(lib.referenced()[0].describe(), "'table' (closure variable of factory 'make', via closure 'make::read')");
}

#[test]
fn bindings_are_values_rebinding_never_changes_a_compiled_kernel() {
    let dev = Device::host();
    let src = "#[kernel] pub fn k(out: &mut [f32]) { out[0] = RATE; }";
    let m1 = crate::common::memory_jit().load_source("rate.rs", src).unwrap().with_global("RATE", 1.0f32).unwrap();
    let k1 = m1.kernel("k").unwrap();
    let m2 = m1.with_global("RATE", 2.0f32).unwrap();
    let k2 = m2.kernel("k").unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    k1.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1.0]);
    k2.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0]);
    // The old module still gives the old binding.
    m1.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1.0]);
    assert_eq!(m1.globals().len(), 1);
    // Device arrays too: rebinding to another array leaves the first kernel on the first array.
    let a = dev.upload(&[5.0f32]).unwrap();
    let b = dev.upload(&[6.0f32]).unwrap();
    let src = "#[kernel] pub fn k(out: &mut [f32]) { out[0] = A[0]; }";
    let ma = crate::common::memory_jit().load_source("a.rs", src).unwrap().with_global("A", &a).unwrap();
    let ka = ma.kernel("k").unwrap();
    let kb = ma.with_global("A", &b).unwrap().kernel("k").unwrap();
    ka.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![5.0]);
    kb.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![6.0]);
}

fn not_serializable(r: kache::Result<Vec<u8>>) -> String {
    match r {
        Err(e @ kache::Error::NotSerializable { .. }) => e.to_string(),
        Err(other) => panic!("expected NotSerializable, got {other}"),
        Ok(_) => panic!("a kernel that captured a device array was serialised"),
    }
}

#[test]
fn serialising_a_kernel_that_captured_a_device_array_fails_for_every_path() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32]).unwrap();
    let jit = crate::common::memory_jit();
    // Direct global.
    let m = jit.load_source("s.rs", "#[kernel] pub fn k(o: &mut [f32]) { o[0] = G[0]; }").unwrap().with_global("G", &a).unwrap();
    let msg = not_serializable(m.kernel("k").unwrap().serialize(Target::Host));
    assert!(msg.contains("cannot serialise kernel 'k'") && msg.contains("'G' (global)") && msg.contains("kernel argument"), "{msg}");
    assert!(!msg.contains("cache"), "the message speaks of serialisation, not caching: {msg}");
    // Through a device function.
    let m = jit
        .load_source("s2.rs", "fn f() -> f32 { G[0] } #[kernel] pub fn k(o: &mut [f32]) { o[0] = f(); }")
        .unwrap()
        .with_global("G", &a)
        .unwrap();
    let msg = not_serializable(m.kernel("k").unwrap().serialize(Target::Host));
    assert!(msg.contains("'G' (global, via device function 'f')"), "{msg}");
    // Through a closure, and a closure of a nested factory.
    let src = r#"
        pub fn reader(t: &[f32]) -> impl Fn(usize) -> f32 { move |i| t[i] }
        pub fn direct(t: &[f32]) -> impl Kernel { move |o: &mut [f32]| { o[0] = t[0]; } }
        pub fn nested(t: &[f32]) -> impl Kernel {
            let r = reader(t);
            move |o: &mut [f32]| { o[0] = r(0); }
        }
    "#;
    let m = jit.load_source("s3.rs", src).unwrap();
    let msg = not_serializable(m.closure("direct", (&a,)).unwrap().serialize(Target::Host));
    assert!(msg.contains("'t' (closure variable of factory 'direct')"), "{msg}");
    let msg = not_serializable(m.closure("nested", (&a,)).unwrap().serialize(Target::Host));
    assert!(msg.contains("'t' (closure variable of factory 'nested', via closure 'reader::closure')"), "{msg}");
    // Also the compiled kernel.
    let c = m.closure("nested", (&a,)).unwrap().compile_for(&dev).unwrap();
    assert!(matches!(c.serialize(), Err(kache::Error::NotSerializable { .. })));
}

#[test]
fn host_capturing_kernels_round_trip_through_serialisation() {
    let dev = Device::host();
    let src = r#"
        static W: [f32; 3] = [0.5, 1.0, 2.0];
        fn w(i: usize) -> f32 { W[i % 3] * SCALE + TABLE[i % 2] }
        #[kernel]
        pub fn k(x: &[f32], y: &mut [f32]) {
            let i = global_id_x();
            if i < y.len() { y[i] = x[i] * w(i); }
        }
    "#;
    let m = crate::common::memory_jit()
        .load_source("ser.rs", src)
        .unwrap()
        .with_global("SCALE", 3.0f32)
        .unwrap()
        .with_global("TABLE", vec![100.0f32, 200.0])
        .unwrap();
    let k = m.kernel("k").unwrap();
    let x = dev.upload(&(0..10).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let mut y1 = dev.alloc::<f32>(&[10]).unwrap();
    k.launch(&dev, Grid::linear(10, 4), (&x, &mut y1)).unwrap();
    let bytes = k.serialize(Target::Host).unwrap();
    // SAFETY: `serialize`'s output, in this process.
    let loaded = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap();
    assert_eq!(loaded.origin(), kache::Origin::Deserialized);
    let mut y2 = dev.alloc::<f32>(&[10]).unwrap();
    loaded.launch(&dev, Grid::linear(10, 4), (&x, &mut y2)).unwrap();
    assert_eq!(y1.download().unwrap(), y2.download().unwrap());
    // Its launches are checked like any other.
    assert!(matches!(loaded.launch(&dev, Grid::linear(10, 4), (&x,)), Err(kache::Error::ArgumentCount { .. })));
    // Corrupted bytes are refused, never loaded.
    for i in [0, bytes.len() / 2, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[i] ^= 0x40;
        // SAFETY: a damaged copy of `serialize`'s output, which must be refused.
        assert!(unsafe { CompiledKernel::deserialize(&bad) }.is_err(), "flip at {i} accepted");
    }
    // SAFETY: as above, truncated.
    assert!(unsafe { CompiledKernel::deserialize(&bytes[..bytes.len() - 5]) }.is_err());
}

#[test]
fn captured_device_array_on_another_device_is_refused_at_launch() {
    // A foreign array claiming CUDA memory cannot be used by a kernel launched on the host.
    struct Fake;
    // SAFETY: it breaks the extent promise (no memory is behind the pointer), but the test only
    // checks that a launch on another device is refused, before anything could read it.
    unsafe impl kache::ArrayInterface for Fake {
        fn data_ptr(&self) -> u64 {
            0x7f00_0000_1000
        }
        fn shape(&self) -> Vec<usize> {
            vec![4]
        }
        fn strides(&self) -> Option<Vec<isize>> {
            None
        }
        fn elem(&self) -> kache::Scalar {
            kache::Scalar::F32
        }
        fn read_only(&self) -> bool {
            false
        }
        fn location(&self) -> kache::Location {
            kache::Location::Cuda(0)
        }
        fn owner(&self) -> kache::capture::Owner {
            std::sync::Arc::new(())
        }
    }
    let dev = Device::host();
    let fake = Fake;
    let v: CaptureValue = (&fake as &dyn kache::ArrayInterface).into_capture().unwrap();
    let m = crate::common::memory_jit()
        .load_source("x.rs", "#[kernel] pub fn k(o: &mut [f32]) { o[0] = G[0]; }")
        .unwrap()
        .with_global("G", v)
        .unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    let err = m.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap_err();
    assert!(err.to_string().contains("CUDA device 0"), "{err}");
}

#[test]
fn a_const_and_a_bound_global_of_one_name_is_an_error_naming_both() {
    let dev = Device::host();
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    let src = "const RATE: f32 = 0.5;\n#[kernel] pub fn k(o: &mut [f32]) { o[0] = RATE; }";
    for bound in [kache::CaptureValue::Scalar(kache::ir::ScalarValue::F32(2.0)), (&dev.upload(&[2.0f32]).unwrap()).into_capture().unwrap()]
    {
        let m = jit.load_source("c.rs", src).unwrap().with_global("RATE", bound).unwrap();
        let e = m.kernel("k").unwrap_err().to_string();
        assert!(e.contains("`RATE` is both the `const` at c.rs:1:7 and a global bound on the module"), "{e}");
        assert!(e.starts_with("c.rs:2:"), "located at the use: {e}");
    }
    // Unbound, the const is used.
    let k = jit.load_source("c.rs", src).unwrap().kernel("k").unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![0.5]);
}

/// Plain host memory (a `Vec` kept alive by the owner) behind the array interface, with any
/// strides in bytes.
struct HostMemory {
    data: std::sync::Arc<std::sync::Mutex<Vec<f32>>>,
    ptr: u64,
    shape: Vec<usize>,
    strides: Option<Vec<isize>>,
}

impl HostMemory {
    fn new(values: Vec<f32>, shape: &[usize], strides: Option<Vec<isize>>, first: usize) -> HostMemory {
        let data = std::sync::Arc::new(std::sync::Mutex::new(values));
        let ptr = data.lock().unwrap().as_ptr() as u64 + 4 * first as u64;
        HostMemory { data, ptr, shape: shape.to_vec(), strides }
    }
}

// SAFETY: `ptr` points into the `Vec` that `data` owns (the owner), and every test gives a
// shape and strides that stay inside it; nothing else touches the values during a launch, and
// the methods return fixed values.
unsafe impl kache::ArrayInterface for HostMemory {
    fn data_ptr(&self) -> u64 {
        self.ptr
    }
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }
    fn strides(&self) -> Option<Vec<isize>> {
        self.strides.clone()
    }
    fn elem(&self) -> kache::Scalar {
        kache::Scalar::F32
    }
    fn read_only(&self) -> bool {
        false
    }
    fn location(&self) -> kache::Location {
        kache::Location::HostMemory
    }
    fn owner(&self) -> kache::capture::Owner {
        self.data.clone()
    }
}

#[test]
fn host_memory_behind_the_array_interface_is_captured_as_a_constant() {
    let dev = Device::host();
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    // Reversed (negative byte stride), starting at the last element.
    let table = HostMemory::new(vec![1.0, 2.0, 3.0], &[3], Some(vec![-4]), 2);
    let iface: &dyn kache::ArrayInterface = &table;
    let src = "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < 3 { o[i] = T[i]; } }";
    let m = jit.load_source("h.rs", src).unwrap().with_global("T", iface).unwrap();
    assert!(matches!(m.globals()[0].1, kache::ir::CaptureTy::Array { device: false, .. }), "{:?}", m.globals());
    let k = m.kernel("k").unwrap();
    table.data.lock().unwrap()[0] = 99.0; // copied when bound: not seen
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    k.launch(&dev, Grid::linear(3, 32), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![3.0, 2.0, 1.0]);
    assert!(k.library().persistable().is_ok(), "a constant, cached like any host array");
    // A write to it is a compile error, as for any host array.
    let w = jit.load_source("w.rs", "#[kernel] pub fn k() { T[0] = 1.0; }").unwrap().with_global("T", iface).unwrap();
    let e = w.kernel("k").unwrap_err().to_string();
    assert!(e.contains("w.rs:1:") && e.contains("read-only"), "{e}");
}

#[test]
fn host_memory_is_a_kernel_argument_on_the_host_backend() {
    let dev = Device::host();
    let jit = kache::Jit::new(kache::Config::in_memory()).unwrap();
    let k = jit
        .load_source("a.rs", "#[kernel] pub fn double(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] *= 2.0; } }")
        .unwrap()
        .kernel("double")
        .unwrap();
    let x = HostMemory::new(vec![1.0, 2.0, 3.0, 4.0], &[2, 2], None, 0);
    let flat = HostMemory::new(vec![1.0, 2.0], &[2], None, 0);
    let e = k.launch(&dev, Grid::linear(4, 32), (&x as &dyn kache::ArrayInterface,)).unwrap_err();
    assert!(e.to_string().contains("1-d"), "{e}");
    k.launch(&dev, Grid::linear(2, 32), (&flat as &dyn kache::ArrayInterface,)).unwrap();
    assert_eq!(*flat.data.lock().unwrap(), vec![2.0, 4.0]);
}
