//! Issue 17's rough edges, replayed as a user who has read only README.md, docs/captures.md and
//! docs/runtime.md would write them, on the host backend: a host-memory `ArrayInterface`
//! captured as a constant, every captured array named by the serialisation error, a `const` or
//! `static` that clashes with a bound global, one "not cached on disk" warning per kernel per
//! process and none with `persist(false)`, the strides table, reversed views, memory-tier
//! entries freed with the last kernel, addresses and `origin()`, and DLPack tensors captured and
//! passed with their owner kept alive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use dlpark::ffi::{DLDevice, DLDeviceType};
use kache::cache::Tier;
use kache::{
    ArrayInterface, CaptureValue, Config, Device, DlpackArray, Grid, Jit, Layout, Location, Order, Origin, Scalar, Target,
    strides_from_shape,
};

/// What a user writes to hand kache a buffer of their own: a `Vec` in plain host memory behind
/// the array interface (docs/runtime.md, "Arrays from other libraries").
struct MyBuffer {
    values: Arc<Mutex<Vec<f32>>>,
    ptr: u64,
    len: usize,
    location: Location,
}

impl MyBuffer {
    /// Plain host memory.
    fn new(values: Vec<f32>) -> MyBuffer {
        MyBuffer::at(values, Location::HostMemory)
    }

    /// Memory of a device's address space: `Device::host().location()` makes it an array of the
    /// host backend, captured by address like a `DeviceArray`.
    fn at(values: Vec<f32>, location: Location) -> MyBuffer {
        let len = values.len();
        let values = Arc::new(Mutex::new(values));
        let ptr = values.lock().unwrap().as_ptr() as u64;
        MyBuffer { values, ptr, len, location }
    }
}

// SAFETY: `ptr` is the start of the `Vec` that the owner (`values`) keeps alive, `len` its
// length; the `Vec` is never resized, and nothing else touches it during a launch (the tests
// change it only between launches); every method returns the same value each time.
unsafe impl ArrayInterface for MyBuffer {
    fn data_ptr(&self) -> u64 {
        self.ptr
    }
    fn shape(&self) -> Vec<usize> {
        vec![self.len]
    }
    fn strides(&self) -> Option<Vec<isize>> {
        None
    }
    fn elem(&self) -> Scalar {
        Scalar::F32
    }
    fn read_only(&self) -> bool {
        false
    }
    fn location(&self) -> Location {
        self.location
    }
    fn owner(&self) -> kache::capture::Owner {
        self.values.clone()
    }
}

const TABLE_SRC: &str = "#[kernel] pub fn lookup(idx: &[u32], out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = TABLE[idx[i] as usize]; } }";

#[test]
fn a_host_memory_array_interface_is_a_constant_that_is_cached_and_never_sees_later_changes() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let table = MyBuffer::new(vec![10.0, 20.0, 30.0]);
    let run = |jit: &Jit| {
        let k = jit
            .load_source("lookup.rs", TABLE_SRC)
            .unwrap()
            .with_global("TABLE", &table as &dyn ArrayInterface)
            .unwrap()
            .kernel("lookup")
            .unwrap();
        let idx = dev.upload(&[2u32, 0, 1]).unwrap();
        let mut out = dev.alloc::<f32>(&[3]).unwrap();
        k.launch(&dev, Grid::linear(3, 32), (&idx, &mut out)).unwrap();
        (out.download().unwrap(), k.compile_for(&dev).unwrap().origin())
    };
    let first = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let (got, origin) = run(&first);
    assert_eq!(got, vec![30.0, 10.0, 20.0]);
    assert!(matches!(origin, Origin::Compiled { .. }), "{origin:?}");
    // A constant: persisted like a `&[T]`, no warning, no `not_persisted`.
    let stats = first.cache().stats();
    assert_eq!((stats.not_persisted, stats.entries > 0), (0, true), "{stats:?}");
    // Copied when bound: a change made after binding is not seen by the kernel already bound,
    // and a later process with the same values hits.
    let k = first.load_source("lookup.rs", TABLE_SRC).unwrap().with_global("TABLE", &table as &dyn ArrayInterface).unwrap();
    table.values.lock().unwrap()[0] = -1.0;
    let idx = dev.upload(&[0u32]).unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    k.kernel("lookup").unwrap().launch(&dev, Grid::linear(1, 32), (&idx, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![10.0]);
    table.values.lock().unwrap()[0] = 10.0;
    let (_, origin) = run(&Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap());
    assert_eq!(origin, Origin::Cache(Tier::Local));
    // The kernel cannot write it.
    let e = first
        .load_source("w.rs", "#[kernel] pub fn k() { TABLE[0] = 1.0; }")
        .unwrap()
        .with_global("TABLE", &table as &dyn ArrayInterface)
        .unwrap()
        .kernel("k")
        .unwrap_err();
    assert!(e.to_string().contains("w.rs:1:") && e.to_string().contains("read-only"), "{e}");
    // As an argument it is the host backend's own memory, written in place.
    let double = first
        .load_source("d.rs", "#[kernel] pub fn double(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] *= 2.0; } }")
        .unwrap()
        .kernel("double")
        .unwrap();
    double.launch(&dev, Grid::linear(3, 32), (&table as &dyn ArrayInterface,)).unwrap();
    assert_eq!(*table.values.lock().unwrap(), vec![20.0, 40.0, 60.0]);
}

#[test]
fn the_serialisation_error_names_every_captured_array_and_how_it_is_reached() {
    let dev = Device::host();
    let (rates, fees, log) = (dev.upload(&[1.0f32]).unwrap(), dev.upload(&[2.0f32]).unwrap(), dev.upload(&[0.0f32]).unwrap());
    let src = r#"
        fn fee() -> f32 { FEES[0] }
        fn total() -> f32 { RATES[0] + fee() }
        #[kernel] pub fn bill(o: &mut [f32]) { o[0] = total(); LOG[0] = 1.0; }
    "#;
    let k = Jit::new(Config::in_memory())
        .unwrap()
        .load_source("bill.rs", src)
        .unwrap()
        .with_global("RATES", &rates)
        .unwrap()
        .with_global("FEES", &fees)
        .unwrap()
        .with_global("LOG", &log)
        .unwrap()
        .kernel("bill")
        .unwrap();
    let e = k.serialize(Target::Host).unwrap_err();
    assert!(matches!(e, kache::Error::NotSerializable { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("cannot serialise kernel 'bill': it captures device arrays "), "{msg}");
    for part in [
        "'RATES' (global, via device function 'total')",
        "'FEES' (global, via device function 'total', device function 'fee')",
        "'LOG' (global)",
    ] {
        assert!(msg.contains(part), "{part} is not named: {msg}");
    }
}

#[test]
fn a_const_or_static_named_like_a_bound_global_is_an_error_naming_both() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    for (item, kind) in [("const SCALE: f32 = 2.0;", "const"), ("static SCALE: f32 = 2.0;", "static")] {
        let src = format!("{item}\n#[kernel] pub fn k(o: &mut [f32]) {{ o[0] = SCALE; }}");
        let m = jit.load_source("scale.rs", &src).unwrap();
        for bound in [
            CaptureValue::Scalar(kache::ir::ScalarValue::F32(3.0)),
            kache::IntoCapture::into_capture(&dev.upload(&[3.0f32]).unwrap()).unwrap(),
        ] {
            let e = m.with_global("SCALE", bound).unwrap().kernel("k").unwrap_err().to_string();
            assert!(
                e.contains(&format!("`SCALE` is both the `{kind}` at scale.rs:1:")) && e.contains("a global bound on the module"),
                "{e}"
            );
        }
        // Unbound, the item is used.
        let mut out = dev.alloc::<f32>(&[1]).unwrap();
        m.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
        assert_eq!(out.download().unwrap(), vec![2.0]);
    }
}

/// What the parent test runs in a fresh process (nothing on its own).
#[test]
#[ignore = "run in a child process by new_user::one_warning_per_kernel_per_process"]
fn warning_child() {
    if std::env::var("KACHE_TEST_CHILD").as_deref() != Ok("new_user_warnings") {
        panic!("run by the parent test only");
    }
    let dev = Device::host();
    let src = r#"
        fn w(i: usize) -> f32 { WEIGHTS[i] }
        #[kernel] pub fn scale(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = w(i) * 2.0; } }
        #[kernel] pub fn shift(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = w(i) + 1.0; } }
    "#;
    // Many JITs, fresh arrays each time, two kernels, both modes of persisting.
    for round in 0..7 {
        let jit = Jit::from_env().unwrap();
        let weights = dev.upload(&[round as f32; 4]).unwrap();
        let mut out = dev.alloc::<f32>(&[4]).unwrap();
        for persist in [true, false] {
            let m = jit.load_source("weights.rs", src).unwrap().persist(persist).with_global("WEIGHTS", &weights).unwrap();
            for k in ["scale", "shift"] {
                m.kernel(k).unwrap().launch(&dev, Grid::linear(4, 32), (&mut out,)).unwrap();
            }
        }
    }
    println!("\nchild done");
}

#[test]
fn one_warning_per_kernel_per_process_and_none_for_a_module_that_does_not_persist() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "new_user::warning_child", "--nocapture", "--test-threads=1"])
        .env("KACHE_TEST_CHILD", "new_user_warnings")
        .env("KACHE_DIR", dir.path());
    for v in ["KACHE_REMOTE", "KACHE_QUIET", "KACHE_LOG", "KACHE_STRICT", "KACHE_CAPTURES", "KACHE_DISABLE"] {
        c.env_remove(v);
    }
    let o = c.output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success() && out.contains("child done"), "{out}\n{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("not cached on disk")).collect();
    assert_eq!(warnings.len(), 2, "one per kernel, whatever the number of JITs and arrays:\n{err}");
    assert!(warnings.iter().any(|w| w.contains("kernel 'scale'")) && warnings.iter().any(|w| w.contains("kernel 'shift'")), "{err}");
}

#[test]
fn strides_count_elements_inside_kache_and_bytes_at_foreign_interfaces() {
    let dev = Device::host();
    let m = dev.upload_nd(&(0..6).collect::<Vec<i32>>(), &[2, 3], Order::C).unwrap();
    assert_eq!(m.strides(), &[3, 1]); // elements
    assert_eq!(ArrayInterface::strides(&m), Some(vec![12, 4])); // bytes
    assert_eq!(strides_from_shape(&[2, 3], 4, Order::C), vec![12, 4]); // bytes for itemsize 4
    let t = m.transpose();
    assert_eq!((t.strides(), t.layout()), (&[1isize, 3][..], Layout::F));
    // What a kernel captured, as `Kernel::captures()` reports it: elements.
    let k = Jit::new(Config::in_memory())
        .unwrap()
        .load_source("g.rs", "#[kernel] pub fn k(o: &mut [i32]) { o[0] = G[[1, 0]] + G.stride(0) as i32; }")
        .unwrap()
        .with_global("G", &t)
        .unwrap()
        .kernel("k")
        .unwrap();
    match &k.captures()[0] {
        CaptureValue::Device(d) => assert_eq!((d.strides(), d.ptr()), (&[1isize, 3][..], t.device_ptr())),
        other => panic!("expected a device capture, got {other:?}"),
    }
    // `a.stride(d)` in a kernel: elements.
    let mut out = dev.alloc::<i32>(&[1]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1 + 1]);
    // DLPack counts elements; `DlpackArray` gives bytes.
    let a = dlpack_tensor(ndarray::Array2::<f64>::zeros((2, 3)), |_| {});
    assert_eq!(a.strides(), &[24, 8]);
}

#[test]
fn a_reversed_view_needs_no_hand_written_interface_as_argument_or_capture() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let reversed = a.view(3, &[4], &[-1]).unwrap();
    assert_eq!(reversed.strides(), &[-1]);
    assert_eq!(ArrayInterface::strides(&reversed), Some(vec![-4]));
    assert_eq!(ArrayInterface::data_ptr(&reversed), a.device_ptr() + 12);
    for relocatable in [false, true] {
        let jit = Jit::new(Config::in_memory().relocatable_captures(relocatable)).unwrap();
        let m = jit
            .load_source(
                "r.rs",
                r#"
                #[kernel] pub fn copy(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i] + R[i]; } }
                #[kernel] pub fn bump(x: &mut [f32]) { let i = global_id_x(); if i < 2 { x[i] += 10.0; } }
            "#,
            )
            .unwrap()
            .with_global("R", &reversed)
            .unwrap();
        let mut out = dev.alloc::<f32>(&[4]).unwrap();
        m.kernel("copy").unwrap().launch(&dev, Grid::linear(4, 32), (&reversed, &mut out)).unwrap();
        assert_eq!(out.download().unwrap(), vec![8.0, 6.0, 4.0, 2.0], "relocatable: {relocatable}");
        // Written through a reversed view: its first two elements are the buffer's last two.
        let mut tail_first = a.view(3, &[4], &[-1]).unwrap();
        m.kernel("bump").unwrap().launch(&dev, Grid::linear(2, 32), (&mut tail_first,)).unwrap();
        assert_eq!(a.download().unwrap(), vec![1.0, 2.0, 13.0, 14.0]);
        a.copy_from(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    }
    assert!(a.view(2, &[4], &[-1]).is_err(), "a view reaching before the memory is refused");
}

#[test]
fn a_loop_binding_fresh_arrays_does_not_grow_the_memory_tier_or_keep_the_arrays() {
    let dev = Device::host();
    let src =
        "fn w(i: usize) -> f32 { W[i] }\n#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = w(i); } }";
    for (relocatable, persist) in [(false, true), (false, false), (true, true)] {
        let jit = Jit::new(Config::in_memory().relocatable_captures(relocatable)).unwrap();
        let module = jit.load_source("loop.rs", src).unwrap().persist(persist);
        let before = jit.cache().memory_entries();
        let mut arrays: Vec<Weak<Mutex<Vec<f32>>>> = Vec::new();
        for round in 0..40 {
            // A fresh array of the host backend each round, whose memory is observable.
            let w = MyBuffer::at(vec![round as f32, 1.0], dev.location());
            arrays.push(Arc::downgrade(&w.values));
            let k = module.with_global("W", &w as &dyn ArrayInterface).unwrap().kernel("k").unwrap();
            drop(w);
            assert!(arrays[round].strong_count() > 0, "the kernel keeps its array");
            let mut out = dev.alloc::<f32>(&[2]).unwrap();
            k.launch(&dev, Grid::linear(2, 32), (&mut out,)).unwrap();
            assert_eq!(out.download().unwrap()[0], round as f32);
            assert!(jit.cache().memory_entries() <= before + 1, "round {round}: {} entries", jit.cache().memory_entries());
        }
        let after = jit.cache().memory_entries();
        if relocatable {
            assert_eq!(after, before + 1, "one persisted kernel for every array of one type and shape");
            assert_eq!(jit.cache().stats().misses, 1);
        } else {
            assert_eq!(after, before, "every pinned entry went with its kernel (persist {persist})");
            assert_eq!(jit.cache().stats().not_persisted, 40);
        }
        assert!(arrays.iter().all(|w| w.strong_count() == 0), "every array went with its kernel");
    }
}

#[test]
fn addresses_and_hit_or_miss_per_kernel_as_the_docs_show() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let a = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let tail = a.view(2, &[2], &[1]).unwrap();
    assert_eq!(tail.device_ptr(), a.device_ptr() + 8);
    assert_eq!(ArrayInterface::data_ptr(&tail), tail.device_ptr());
    let src = "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }";
    let compile = || {
        let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
        jit.load_source("k.rs", src).unwrap().kernel("k").unwrap().compile_for(&dev).unwrap().origin()
    };
    assert!(matches!(compile(), Origin::Compiled { .. }));
    assert_eq!(compile(), Origin::Cache(Tier::Local));
}

/// A DLPack tensor whose producer is this test: `values` behind `device`, and a context whose
/// drop (the tensor's deleter) is counted in `deleted`.
fn counted_tensor(values: Vec<f32>, device: DLDevice, deleted: &Arc<AtomicUsize>) -> DlpackArray {
    struct Producer {
        values: Vec<f32>,
        deleted: Arc<AtomicUsize>,
    }
    impl Drop for Producer {
        fn drop(&mut self) {
            self.deleted.fetch_add(1, Ordering::SeqCst);
        }
    }
    let shape = [values.len()];
    let mut producer = Box::new(Producer { values, deleted: deleted.clone() });
    let data = producer.values.as_mut_ptr() as *mut std::ffi::c_void;
    let mut init = dlpark::metadata::Dynamic::new(&shape[..], &[1isize][..]).initialize(producer).unwrap();
    init.set_data(data).set_dtype(<f32 as dlpark::DlpackElement>::DTYPE).set_device(device);
    // SAFETY: the descriptor is dlpark's own, its data the boxed `Vec` that the context owns
    // until the deleter runs.
    let tensor = unsafe { init.finish() };
    // SAFETY: the tensor owns its memory, and nothing else reads or writes it. (A tensor said to
    // be on CUDA holds host memory here: the tests only check that kache refuses to run it.)
    unsafe { DlpackArray::new(tensor) }.unwrap()
}

fn dlpack_tensor<T: dlpark::DlpackElement + Send + 'static, D: ndarray::Dimension + 'static>(
    a: ndarray::Array<T, D>,
    edit: impl FnOnce(&mut dlpark::allocation::dynamic::Initialized<dlpark::ffi::DLManagedTensorVersioned>),
) -> DlpackArray {
    let mut init: dlpark::allocation::dynamic::Initialized<dlpark::ffi::DLManagedTensorVersioned> = Box::new(a).try_into().unwrap();
    edit(&mut init);
    // SAFETY: dlpark's ndarray producer hands over an owned array.
    let t = unsafe { init.finish() };
    // SAFETY: the tensor owns its memory (an ndarray), which nothing else reads or writes.
    unsafe { DlpackArray::new(t) }.unwrap()
}

#[test]
fn a_dlpack_tensor_is_captured_and_passed_and_its_deleter_runs_after_the_last_user() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let deleted = Arc::new(AtomicUsize::new(0));
    // Host memory: an argument (written in place) and a constant capture.
    let mut x = counted_tensor(vec![1.0, 2.0, 3.0], DLDevice::CPU, &deleted);
    let add =
        jit.load_source("t.rs", "#[kernel] pub fn add(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] += T[i]; } }").unwrap();
    let table = counted_tensor(vec![10.0, 20.0, 30.0], DLDevice::CPU, &deleted);
    let k = add.with_global("T", &table).unwrap().kernel("add").unwrap();
    drop(table);
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "a host tensor is copied when bound: nothing holds it");
    k.launch(&dev, Grid::linear(3, 32), (&mut x,)).unwrap();
    k.launch(&dev, Grid::linear(3, 32), (&mut x,)).unwrap();
    // Read back through a kernel that copies the tensor into a kache array.
    let copy = jit
        .load_source("c.rs", "#[kernel] pub fn copy(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i]; } }")
        .unwrap()
        .kernel("copy")
        .unwrap();
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    copy.launch(&dev, Grid::linear(3, 32), (&x, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![21.0, 42.0, 63.0]);
    assert_eq!(deleted.load(Ordering::SeqCst), 1, "an argument is not deleted by a launch");
    drop(x);
    assert_eq!(deleted.load(Ordering::SeqCst), 2);
    // CUDA memory is captured by address: the kernel (and the module that binds it) hold the
    // tensor, whose deleter runs only when the last of them is gone. (It cannot run here.)
    let on_gpu = counted_tensor(vec![1.0], DLDevice { device_type: DLDeviceType::CUDA, device_id: 0 }, &deleted);
    let module = add.with_global("T", &on_gpu).unwrap();
    let k = module.kernel("add").unwrap();
    drop((on_gpu, module));
    assert_eq!(deleted.load(Ordering::SeqCst), 2, "the kernel keeps the captured tensor");
    let mut x = dev.alloc::<f32>(&[1]).unwrap();
    assert!(k.launch(&dev, Grid::linear(1, 32), (&mut x,)).unwrap_err().to_string().contains("CUDA device 0"));
    drop(k);
    assert_eq!(deleted.load(Ordering::SeqCst), 3, "deleted with the last kernel");
}
