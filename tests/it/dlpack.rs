//! DLPack tensors (through dlpark) as kache arrays: element types, devices, strides and the
//! read-only flag mapped, host tensors captured as constants and passed on the host backend,
//! device tensors captured by pointer, and what kache has no type for refused.

use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensorVersioned};
use dlpark::{DlpackFlags, allocation::dynamic, versioned};
use kache::{Config, Device, DlpackArray, Grid, Jit, Layout, Location, Scalar};

/// An ndarray exported through DLPack, `edit` applied before it is finished.
fn export<T: dlpark::DlpackElement + Send + 'static, D: ndarray::Dimension + 'static>(
    a: ndarray::Array<T, D>,
    edit: impl FnOnce(&mut dynamic::Initialized<DLManagedTensorVersioned>),
) -> versioned::Dlpack {
    let mut init: dynamic::Initialized<DLManagedTensorVersioned> = Box::new(a).try_into().unwrap();
    edit(&mut init);
    // SAFETY: dlpark's ndarray producer hands over an owned array.
    unsafe { init.finish() }
}

fn import(t: versioned::Dlpack) -> kache::Result<DlpackArray> {
    // SAFETY: the tensor owns its memory (an ndarray), which nothing else reads or writes.
    unsafe { DlpackArray::new(t) }
}

#[test]
fn types_extents_and_strides_are_mapped() {
    let a = import(export(ndarray::Array2::<i32>::zeros((2, 3)), |_| {})).unwrap();
    assert_eq!((a.elem(), a.shape(), a.strides(), a.location()), (Scalar::I32, &[2usize, 3][..], &[12isize, 4][..], Location::HostMemory));
    // A transposed (F-order) ndarray keeps its strides: bytes at the interface.
    let t = import(export(ndarray::Array2::<f64>::zeros((2, 3)).reversed_axes(), |_| {})).unwrap();
    assert_eq!((t.shape(), t.strides()), (&[3usize, 2][..], &[8isize, 24][..]));
    assert_eq!(kache::layout_of(t.shape(), Some(t.strides()), 8), Layout::F);
    for (code, bits, want) in
        [(DLDataTypeCode::UINT, 8, Scalar::U8), (DLDataTypeCode::BFLOAT, 16, Scalar::Bf16), (DLDataTypeCode::BOOL, 8, Scalar::Bool)]
    {
        let a = import(export(ndarray::Array1::<u16>::zeros(4), |i| {
            i.set_dtype(DLDataType { code, bits, lanes: 1 });
        }));
        // (8-bit elements over 2-byte storage describe the first half of it: valid memory.)
        assert_eq!(a.unwrap().elem(), want);
    }
}

#[test]
fn what_kache_has_no_type_or_device_for_is_refused() {
    let complex = import(export(ndarray::Array1::<f64>::zeros(2), |i| {
        i.set_dtype(DLDataType { code: DLDataTypeCode::COMPLEX, bits: 64, lanes: 1 });
    }));
    assert!(complex.unwrap_err().to_string().contains("has no kernel type"));
    let vector = import(export(ndarray::Array1::<f32>::zeros(2), |i| {
        i.set_dtype(DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 4 });
    }));
    assert!(vector.unwrap_err().to_string().contains("4 lanes"));
    let metal = import(export(ndarray::Array1::<f32>::zeros(2), |i| {
        i.set_device(DLDevice { device_type: DLDeviceType::METAL, device_id: 0 });
    }));
    assert!(metal.unwrap_err().to_string().contains("neither the CPU nor CUDA"));
    let five_d = import(export(ndarray::Array::<f32, _>::zeros(ndarray::IxDyn(&[1, 1, 1, 1, 2])), |_| {}));
    assert!(five_d.unwrap_err().to_string().contains("5 dimensions"));
}

#[test]
fn a_host_tensor_is_a_constant_capture_and_a_host_backend_argument() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let weights = import(export(ndarray::arr2(&[[1.0f32, 2.0], [3.0, 4.0]]), |_| {})).unwrap();
    let src = r#"
        #[kernel]
        pub fn weigh(x: &Array<f32, 2>, out: &mut [f32]) {
            let i = global_id_x();
            if i < 2 { out[i] = W[[i, 0]] * x[[i, 0]] + W[[i, 1]] * x[[i, 1]]; }
        }
    "#;
    let k = jit.load_source("w.rs", src).unwrap().with_global("W", &weights).unwrap().kernel("weigh").unwrap();
    assert!(k.library().persistable().is_ok(), "copied in as a constant");
    let x = import(export(ndarray::arr2(&[[10.0f32, 1.0], [1.0, 10.0]]), |_| {})).unwrap();
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    k.launch(&dev, Grid::linear(2, 32), (&x, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![12.0, 43.0]);
}

#[test]
fn the_read_only_flag_is_kept() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit
        .load_source("z.rs", "#[kernel] pub fn zero(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = 0.0; } }")
        .unwrap()
        .kernel("zero")
        .unwrap();
    let mut frozen = import(export(ndarray::arr1(&[1.0f32, 2.0]), |i| {
        i.set_flags(DlpackFlags::READ_ONLY).unwrap();
    }))
    .unwrap();
    let e = k.launch(&dev, Grid::linear(2, 32), (&mut frozen,)).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    let mut free = import(export(ndarray::arr1(&[1.0f32, 2.0]), |_| {})).unwrap();
    k.launch(&dev, Grid::linear(2, 32), (&mut free,)).unwrap();
    // The write went to the tensor's memory: read it back through a copying kernel.
    let copy = jit
        .load_source(
            "c.rs",
            "#[kernel] pub fn copy(x: &[f32], o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = x[i] + 1.0; } }",
        )
        .unwrap()
        .kernel("copy")
        .unwrap();
    let mut out = dev.alloc::<f32>(&[2]).unwrap();
    copy.launch(&dev, Grid::linear(2, 32), (&free, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![1.0, 1.0]);
}

#[test]
fn a_device_tensor_is_captured_by_pointer_on_its_device() {
    let dev = Device::host();
    let jit = Jit::new(Config::in_memory()).unwrap();
    // A tensor that says it is on CUDA device 0 is a device capture, which cannot run here.
    let on_gpu = import(export(ndarray::arr1(&[1.0f32]), |i| {
        i.set_device(DLDevice { device_type: DLDeviceType::CUDA, device_id: 0 });
    }))
    .unwrap();
    assert_eq!(on_gpu.location(), Location::Cuda(0));
    let k = jit
        .load_source("g.rs", "#[kernel] pub fn k(o: &mut [f32]) { o[0] = G[0]; }")
        .unwrap()
        .with_global("G", &on_gpu)
        .unwrap()
        .kernel("k")
        .unwrap();
    assert!(k.library().persistable().is_err(), "a device pointer, baked");
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    let e = k.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap_err();
    assert!(e.to_string().contains("CUDA device 0"), "{e}");
}
