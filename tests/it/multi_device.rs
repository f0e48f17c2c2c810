//! Several devices without a GPU: host devices (`Device::host_device`) stand for the GPUs of one
//! architecture. One `Jit` serves them from several threads at once and compiles each kernel
//! once for all of them (counted by the cache); an array of one device, argument, capture or
//! capture slot, is refused on another with `Error::WrongDevice` naming the kernel, the array
//! and both devices. The same on two real GPUs: tests/gpu.rs.

use std::sync::{Arc, Barrier};

use kache::{CompiledKernel, Config, Device, Error, Grid, Jit, Location};

const AXPY: &str = r#"
#[kernel]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() { y[i] = a * x[i] + y[i]; }
}
"#;

const SCALED: &str = "#[kernel] pub fn scaled(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = TABLE[i] * 10.0; } }";

#[test]
fn host_devices_are_devices_of_their_own_with_one_target() {
    assert_eq!(Device::host_device(0), Device::host());
    assert_eq!(Device::host_device(0).location(), Location::HostBackend(0));
    let second = Device::host_device(1);
    assert_ne!(second, Device::host());
    assert_eq!(second, Device::host_device(1));
    assert_eq!(second.location(), Location::HostBackend(1));
    assert_eq!(second.target(), Device::host().target());
    assert!(!second.is_cuda());
    assert_eq!(second.describe(), "host backend (CPU), host device 1");
    assert_eq!(Location::HostBackend(1).to_string(), "host backend device 1");
    // Its arrays are its own.
    let a = second.upload(&[1.0f32, 2.0]).unwrap();
    assert_eq!(a.device(), &second);
    assert_eq!(kache::ArrayInterface::location(&a), Location::HostBackend(1));
}

#[test]
fn cuda_count_is_a_typed_answer_without_a_driver() {
    if kache::runtime::cuda_driver_present() {
        eprintln!("skipping: a CUDA driver is present here (tests/gpu.rs counts the GPUs)");
        return;
    }
    assert!(matches!(Device::cuda_count(), Err(Error::NoCudaDriver)));
}

/// Four threads launch one kernel on four devices at the same moment, through one `Jit` and
/// clones of one `Kernel`: the kernel compiles once (one miss, no second compile racing the
/// first), every device gets the same compiled kernel, and every result is right.
#[test]
fn one_jit_serves_several_devices_from_threads_and_compiles_once() {
    let dir = tempfile::tempdir().unwrap();
    let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path())).unwrap();
    let k = jit.load_source("axpy.rs", AXPY).unwrap().kernel("axpy").unwrap();
    let devices: Vec<Device> = (0..4).map(Device::host_device).collect();
    let start = Arc::new(Barrier::new(devices.len()));
    let n = 1000;
    let threads: Vec<_> = devices
        .iter()
        .enumerate()
        .map(|(d, dev)| {
            let (k, dev, start) = (k.clone(), dev.clone(), start.clone());
            std::thread::spawn(move || {
                let x: Vec<f32> = (0..n).map(|i| (i * (d + 1)) as f32).collect();
                let y0: Vec<f32> = (0..n).map(|i| i as f32 - 3.0).collect();
                let xa = dev.upload(&x).unwrap();
                let mut ya = dev.upload(&y0).unwrap();
                let a = 0.5 + d as f32;
                start.wait();
                for _ in 0..3 {
                    k.launch(&dev, Grid::linear(n, 128), (a, &xa, &mut ya)).unwrap();
                }
                let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| (0..3).fold(*y, |y, _| a * x + y)).collect();
                assert_eq!(ya.download().unwrap(), want, "device {d}");
                k.compile_for(&dev).unwrap()
            })
        })
        .collect();
    let compiled: Vec<Arc<CompiledKernel>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(compiled.iter().all(|c| Arc::ptr_eq(c, &compiled[0])), "one compiled kernel serves every device");
    assert!(matches!(compiled[0].origin(), kache::Origin::Compiled { .. }));
    let s = jit.cache().stats();
    assert_eq!((s.misses, s.hits), (1, 0), "one lookup and one compile for four devices: {s:?}");
}

/// A kernel whose captured table is replicated on each device (relocatable captures: the
/// address is not in the code) compiles once: the second device's kernel is a hit.
#[test]
fn a_relocatable_capture_replicated_per_device_compiles_once() {
    let jit = Jit::new(Config::in_memory().relocatable_captures(true)).unwrap();
    let module = jit.load_source("t.rs", SCALED).unwrap();
    for (i, dev) in [Device::host_device(0), Device::host_device(1)].iter().enumerate() {
        let table = dev.upload(&[1.0f32 + i as f32, 2.0]).unwrap();
        let k = module.clone().with_global("TABLE", &table).unwrap().kernel("scaled").unwrap();
        let mut out = dev.alloc::<f32>(&[2]).unwrap();
        k.launch(dev, Grid::linear(2, 32), (&mut out,)).unwrap();
        assert_eq!(out.download().unwrap(), vec![10.0 * (1.0 + i as f32), 20.0]);
    }
    let s = jit.cache().stats();
    assert_eq!((s.misses, s.hits, s.hits_memory), (1, 1, 1), "{s:?}");
}

fn wrong_device(e: Error) -> (String, String, Location, Location) {
    match e {
        Error::WrongDevice { kernel, array, array_on, launch_on } => (kernel, array, array_on, launch_on),
        other => panic!("expected Error::WrongDevice, got {other}"),
    }
}

#[test]
fn an_argument_of_another_device_is_refused_naming_kernel_argument_and_devices() {
    let (d0, d1) = (Device::host_device(0), Device::host_device(1));
    let k = crate::common::memory_jit().load_source("axpy.rs", AXPY).unwrap().kernel("axpy").unwrap();
    let x = d0.upload(&[1.0f32, 2.0]).unwrap();
    let mut y = d1.upload(&[5.0f32, 5.0]).unwrap();
    let e = k.launch(&d1, Grid::linear(2, 32), (2.0f32, &x, &mut y)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `axpy`: argument `x` is on host backend device 0, but the launch is on host backend device 1; a kernel uses only arrays of the \
         device it runs on (copy the array there: download, then upload)"
    );
    assert_eq!(wrong_device(e), ("axpy".into(), "argument `x`".into(), Location::HostBackend(0), Location::HostBackend(1)));
    // The written argument on the wrong device, through a compiled kernel: the same.
    let c = k.compile_for(&d0).unwrap();
    let x0 = d0.upload(&[1.0f32, 2.0]).unwrap();
    let e = c.launch(&d0, Grid::linear(2, 32), (2.0f32, &x0, &mut y)).unwrap_err();
    assert_eq!(wrong_device(e), ("axpy".into(), "argument `y`".into(), Location::HostBackend(1), Location::HostBackend(0)));
    // Nothing ran.
    assert_eq!(y.download().unwrap(), vec![5.0, 5.0]);
    // An array of another library (through `ArrayInterface`) is refused the same way.
    let foreign = crate::foreign::ForeignArray::wrap(&x);
    let e = k.launch(&d1, Grid::linear(2, 32), (2.0f32, foreign.iface(), &mut y)).unwrap_err();
    assert_eq!(wrong_device(e).1, "argument `x`");
    let x1 = d1.upload(&[1.0f32, 2.0]).unwrap();
    k.launch(&d1, Grid::linear(2, 32), (2.0f32, &x1, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![7.0, 9.0]);
}

#[test]
fn a_capture_of_another_device_is_refused_naming_kernel_capture_and_devices() {
    let (d0, d1) = (Device::host_device(0), Device::host_device(1));
    for relocatable in [false, true] {
        let jit = Jit::new(Config::in_memory().relocatable_captures(relocatable)).unwrap();
        let table = d0.upload(&[1.0f32, 2.0]).unwrap();
        let k = jit.load_source("t.rs", SCALED).unwrap().with_global("TABLE", &table).unwrap().kernel("scaled").unwrap();
        let mut out = d1.alloc::<f32>(&[2]).unwrap();
        let e = k.launch(&d1, Grid::linear(2, 32), (&mut out,)).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "kernel `scaled`: captured array global 'TABLE' is on host backend device 0, but the launch is on host backend device 1"
            ),
            "{e}"
        );
        let want = ("scaled".to_string(), "captured array global 'TABLE'".to_string(), Location::HostBackend(0), Location::HostBackend(1));
        assert_eq!(wrong_device(e), want, "relocatable: {relocatable}");
        // The compiled kernel refuses it too, and runs on the table's own device.
        let c = k.compile_for(&d0).unwrap();
        assert_eq!(wrong_device(c.launch(&d1, Grid::linear(2, 32), (&mut out,)).unwrap_err()), want);
        assert_eq!(out.download().unwrap(), vec![0.0, 0.0], "nothing ran");
        let mut here = d0.alloc::<f32>(&[2]).unwrap();
        c.launch(&d0, Grid::linear(2, 32), (&mut here,)).unwrap();
        assert_eq!(here.download().unwrap(), vec![10.0, 20.0]);
    }
}

#[test]
fn an_array_bound_to_a_capture_slot_on_another_device_is_refused() {
    let (d0, d1) = (Device::host_device(0), Device::host_device(1));
    let jit = Jit::new(Config::in_memory().relocatable_captures(true)).unwrap();
    let table = d0.upload(&[1.0f32, 2.0]).unwrap();
    let bytes = jit.load_source("t.rs", SCALED).unwrap().with_global("TABLE", &table).unwrap().kernel("scaled").unwrap();
    let bytes = bytes.serialize(kache::Target::Host).unwrap();
    // SAFETY: `serialize`'s output, from this process.
    let k = unsafe { CompiledKernel::deserialize(&bytes) }.unwrap().bind("TABLE", &d1.upload(&[3.0f32, 4.0]).unwrap()).unwrap();
    let mut out = d0.alloc::<f32>(&[2]).unwrap();
    let e = k.launch(&d0, Grid::linear(2, 32), (&mut out,)).unwrap_err();
    assert_eq!(
        wrong_device(e),
        ("scaled".into(), "captured array global 'TABLE'".into(), Location::HostBackend(1), Location::HostBackend(0))
    );
    let mut there = d1.alloc::<f32>(&[2]).unwrap();
    k.launch(&d1, Grid::linear(2, 32), (&mut there,)).unwrap();
    assert_eq!(there.download().unwrap(), vec![30.0, 40.0]);
}

#[test]
fn structs_of_another_device_are_refused() {
    kache::plain_struct! {
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct P { pub v: f32 }
    }
    let (d0, d1) = (Device::host_device(0), Device::host_device(1));
    let src = "#[derive(Clone, Copy)] struct P { v: f32 }\n#[kernel] pub fn k(p: &mut [P]) { let i = global_id_x(); if i < p.len() { p[i].v += 1.0; } }";
    let k = crate::common::memory_jit().load_source("p.rs", src).unwrap().kernel("k").unwrap();
    let mut ps = d0.upload_structs(&[P { v: 1.0 }]).unwrap();
    let e = k.launch(&d1, Grid::linear(1, 32), (&mut ps,)).unwrap_err();
    assert_eq!(wrong_device(e), ("k".into(), "argument `p`".into(), Location::HostBackend(0), Location::HostBackend(1)));
    k.launch(&d0, Grid::linear(1, 32), (&mut ps,)).unwrap();
    assert_eq!(ps.download().unwrap(), vec![P { v: 2.0 }]);
}
