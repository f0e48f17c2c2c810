//! Runtime behaviour that needs no GPU: devices without a driver, argument checking, launch
//! configuration, arrays and views, host-side synchronisation.

use kache::{ArgValue, Device, Error, Grid, Layout, Order};

use crate::common::memory_jit;

use crate::foreign;

#[test]
fn cuda_without_a_driver_is_a_typed_error_not_a_panic() {
    // CI machines have no NVIDIA driver; on a GPU machine this test checks nothing.
    if kache::runtime::cuda_driver_present() {
        eprintln!("skipping: a CUDA driver is present here");
        return;
    }
    match Device::cuda(0) {
        Err(Error::NoCudaDriver) => {}
        other => panic!("expected NoCudaDriver, got {other:?}"),
    }
    // Twice, and for another ordinal: still no panic.
    assert!(matches!(Device::cuda(3), Err(Error::NoCudaDriver)));
    // Device::best falls back to the host backend.
    assert!(!Device::best().is_cuda());
}

#[test]
fn cuda_with_a_driver_but_no_such_device_is_no_cuda_device() {
    if !kache::runtime::cuda_driver_present() {
        eprintln!("skipping: no CUDA driver here (tested where there is one)");
        return;
    }
    assert!(matches!(Device::cuda(4096), Err(Error::NoCudaDevice { ordinal: 4096, .. })));
}

const K: &str = r#"
#[kernel]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() { y[i] = a * x[i] + y[i]; }
}
#[kernel]
pub fn m2(a: &Array<f64, 2>, out: &mut Array<f64, 2>) {
    let i = global_id_y();
    let j = global_id_x();
    if i < a.shape(0) && j < a.shape(1) { out[[i, j]] = a[[i, j]] + (10 * i + j) as f64; }
}
"#;

#[test]
fn wrong_arguments_are_typed_errors_and_launch_nothing() {
    let dev = Device::host();
    let k = memory_jit().load_source("k.rs", K).unwrap().kernel("axpy").unwrap();
    let x = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.upload(&[5.0f32, 5.0]).unwrap();
    let xd = dev.upload(&[1.0f64, 2.0]).unwrap();
    let x2 = dev.alloc::<f32>(&[2, 1]).unwrap();
    let g = Grid::linear(2, 32);
    let cases: Vec<(&str, kache::Result<()>)> = vec![
        ("count", k.launch(&dev, g, (2.0f32, &x))),
        ("scalar type", k.launch(&dev, g, (2.0f64, &x, &mut y))),
        ("element type", k.launch(&dev, g, (2.0f32, &xd, &mut y))),
        ("dimensions", k.launch(&dev, g, (2.0f32, &x2, &mut y))),
        ("mutability", k.launch(&dev, g, (2.0f32, &x, &y))),
        ("scalar for array", k.launch(&dev, g, (2.0f32, 1.0f32, &mut y))),
        ("array for scalar", k.launch(&dev, g, (&x, &x, &mut y))),
        ("read-only array for &mut", k.launch(&dev, g, (2.0f32, &x, &mut y.read_only()))),
    ];
    for (what, r) in cases {
        match r {
            Err(Error::ArgumentCount { kernel, expected: 3, got: 2 }) if what == "count" => assert_eq!(kernel, "axpy"),
            Err(Error::BadArgument { kernel, param, problem }) => {
                assert_eq!(kernel, "axpy", "{what}");
                let want = match what {
                    "scalar type" | "array for scalar" => "a",
                    "element type" | "dimensions" | "scalar for array" => "x",
                    _ => "y",
                };
                assert_eq!(param, want, "{what}: {problem}");
            }
            other => panic!("{what}: expected a typed argument error, got {other:?}"),
        }
    }
    assert_eq!(y.download().unwrap(), vec![5.0, 5.0], "a failed launch ran something");
    let msg = k.launch(&dev, g, (2.0f32, &x, &y)).unwrap_err().to_string();
    assert!(msg.contains("argument `y`") && msg.contains("&mut"), "{msg}");
}

#[test]
fn bad_launch_configurations_are_refused() {
    let dev = Device::host();
    let k = memory_jit().load_source("k.rs", K).unwrap().kernel("axpy").unwrap();
    let x = dev.upload(&[1.0f32]).unwrap();
    let mut y = dev.upload(&[1.0f32]).unwrap();
    for g in [
        Grid::new(0u32, 32u32),
        Grid::new(1u32, 0u32),
        Grid::new(1u32, 2048u32),
        Grid::new(1u32, (1u32, 1u32, 65u32)),
        Grid::new((1u32, 70000u32), 1u32),
    ] {
        assert!(matches!(k.launch(&dev, g, (1.0f32, &x, &mut y)), Err(Error::BadLaunch(_))), "{g:?}");
    }
}

#[test]
fn arrays_round_trip_in_every_layout_and_views_work() {
    let dev = Device::host();
    let data: Vec<i64> = (0..24).collect();
    for order in [Order::C, Order::F] {
        let a = dev.upload_nd(&data, &[2, 3, 4], order).unwrap();
        assert_eq!(a.layout(), if order == Order::C { Layout::C } else { Layout::F });
        assert_eq!(a.len(), 24);
        let back = a.download().unwrap();
        // upload_nd takes data laid out in `order`; download gives logical C order.
        if order == Order::C {
            assert_eq!(back, data);
        } else {
            let mut want = vec![0; 24];
            for i in 0..2 {
                for j in 0..3 {
                    for k in 0..4 {
                        want[i * 12 + j * 4 + k] = data[i + 2 * j + 6 * k];
                    }
                }
            }
            assert_eq!(back, want);
        }
    }
    let a = dev.upload_nd(&data, &[4, 6], Order::C).unwrap();
    let t = a.transpose();
    assert_eq!(t.layout(), Layout::F);
    assert_eq!(t.shape(), &[6, 4]);
    assert_eq!(t.download().unwrap()[..4], [0, 6, 12, 18]);
    let v = a.view(2, &[3, 2], &[6, 3]).unwrap();
    assert_eq!(v.layout(), Layout::A);
    assert_eq!(v.download().unwrap(), vec![2, 5, 8, 11, 14, 17]);
    v.copy_from(&[-1, -2, -3, -4, -5, -6]).unwrap();
    let all = a.download().unwrap();
    assert_eq!(&all[..6], &[0, 1, -1, 3, 4, -2]);
    assert!(a.view(20, &[5], &[1]).is_err(), "a view past the end");
    assert!(dev.upload_nd(&data, &[5, 5], Order::C).is_err());
    assert!(dev.alloc::<f32>(&[1, 1, 1, 1, 1]).is_err(), "five dimensions");
    let z = dev.upload_scalar(7u32).unwrap();
    assert_eq!(z.ndim(), 0);
    assert_eq!(z.download().unwrap(), vec![7]);
}

#[test]
fn layouts_select_specialisations_and_give_the_same_results() {
    let dev = Device::host();
    let k = memory_jit().load_source("k.rs", K).unwrap().kernel("m2").unwrap();
    let logical: Vec<f64> = (0..12).map(|x| x as f64).collect();
    let want: Vec<f64> = (0..3).flat_map(|i| (0..4).map(move |j| (i * 4 + j) as f64 + (10 * i + j) as f64)).collect();
    let c = dev.upload_nd(&logical, &[3, 4], Order::C).unwrap();
    let f = dev.upload_nd(&(0..4).flat_map(|j| (0..3).map(move |i| (i * 4 + j) as f64)).collect::<Vec<_>>(), &[3, 4], Order::F).unwrap();
    let big = dev.upload_nd(&(0..48).map(|x| x as f64).collect::<Vec<_>>(), &[6, 8], Order::C).unwrap();
    let strided = big.view(0, &[3, 4], &[16, 2]).unwrap();
    let strided_logical: Vec<f64> = (0..3).flat_map(|i| (0..4).map(move |j| (16 * i + 2 * j) as f64)).collect();
    let want_strided: Vec<f64> =
        (0..3).flat_map(|i| (0..4).map(move |j| (i, j))).zip(&strided_logical).map(|((i, j), v)| v + (10 * i + j) as f64).collect();
    for (input, expect) in [(&c, &want), (&f, &want), (&strided, &want_strided)] {
        for out_order in [Order::C, Order::F] {
            let mut out = dev.alloc_with_order::<f64>(&[3, 4], out_order).unwrap();
            k.launch(&dev, Grid::new((4u32, 3u32), (2u32, 2u32)), (input, &mut out)).unwrap();
            assert_eq!(&out.download().unwrap(), expect, "input {:?} output {out_order:?}", input.layout());
        }
    }
    // Foreign arrays select specialisations from their strides too.
    let ff = foreign::ForeignArray::wrap(&f);
    let mut out = dev.alloc::<f64>(&[3, 4]).unwrap();
    k.launch(
        &dev,
        Grid::new((4u32, 3u32), (2u32, 2u32)),
        vec![
            ArgValue::Array { desc: kache::capture::ArrayDesc::from_interface(ff.iface()).unwrap(), writable: false },
            kache::KernelArg::arg(&&mut out).unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(out.download().unwrap(), want);
}

#[test]
fn results_are_visible_to_download_after_launch_and_launches_are_ordered() {
    // On the host backend a launch returns when the grid is done; on CUDA a download waits for
    // earlier launches. Either way, a chain of launches then a download sees all of them.
    let dev = Device::host();
    let k = memory_jit().load_source("k.rs", K).unwrap().kernel("axpy").unwrap();
    let n = 10_000;
    let x = dev.upload(&vec![1.0f32; n]).unwrap();
    let mut y = dev.alloc::<f32>(&[n]).unwrap();
    for _ in 0..50 {
        k.launch(&dev, Grid::linear(n, 256), (1.0f32, &x, &mut y)).unwrap();
    }
    dev.synchronize().unwrap();
    assert!(y.download().unwrap().iter().all(|v| *v == 50.0));
}

#[test]
fn early_return_before_sync_threads_does_not_deadlock_on_the_host() {
    let dev = Device::host();
    let src = r#"
        #[kernel]
        pub fn k(x: &mut [u32]) {
            let i = global_id_x();
            let t = thread_idx_x() as usize;
            let s = shared_array::<u32, 64>();
            if i >= x.len() { return; }
            s[t] = x[i];
            sync_threads();
            x[i] = s[(t + 1) % 64] + 1;
        }
    "#;
    let k = memory_jit().load_source("k.rs", src).unwrap().kernel("k").unwrap();
    // 100 elements, blocks of 64: the second block has 28 threads that return early.
    let mut x = dev.upload(&(0..100u32).collect::<Vec<_>>()).unwrap();
    k.launch(&dev, Grid::linear(100, 64), (&mut x,)).unwrap();
    let out = x.download().unwrap();
    // Shared memory starts zeroed on the host backend; threads past the end wrote nothing.
    let want: Vec<u32> = (0..100u32)
        .map(|i| {
            let (b, t) = (i / 64, (i % 64 + 1) % 64);
            let src = b * 64 + t;
            if src < 100 { src + 1 } else { 1 }
        })
        .collect();
    assert_eq!(out, want);
}

#[test]
fn dynamic_shared_memory_is_sized_by_the_launch() {
    let dev = Device::host();
    let src = r#"
        #[kernel]
        pub fn k(out: &mut [u64]) {
            let s = dynamic_shared_array::<u64>();
            let t = thread_idx_x() as usize;
            s[t] = (t * 2) as u64;
            sync_threads();
            if t == 0 {
                let mut acc = 0;
                for j in 0..s.len() { acc += s[j]; }
                out[block_idx_x() as usize] = acc + (s.len() as u64) * 1000;
            }
        }
    "#;
    let k = memory_jit().load_source("k.rs", src).unwrap().kernel("k").unwrap();
    let mut out = dev.alloc::<u64>(&[3]).unwrap();
    k.launch(&dev, Grid::new(3u32, 32u32).with_shared_mem(32 * 8), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![32_000 + 992; 3]);
}

#[test]
fn views_take_signed_strides_reversed_arrays_need_no_foreign_interface() {
    let dev = Device::host();
    let a = dev.upload(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    let rev = a.view(5, &[6], &[-1]).unwrap();
    assert_eq!(rev.download().unwrap(), vec![6, 5, 4, 3, 2, 1]);
    assert_eq!((rev.strides(), rev.layout()), (&[-1isize][..], Layout::A));
    assert_eq!(kache::ArrayInterface::strides(&rev), Some(vec![-4]), "bytes at the interface");
    // Rows reversed, columns kept, of a 2x3 C array: [[4, 5, 6], [1, 2, 3]].
    let rows = a.view(3, &[2, 3], &[-3, 1]).unwrap();
    assert_eq!(rows.download().unwrap(), vec![4, 5, 6, 1, 2, 3]);
    // A kernel reads and writes through the negative stride.
    let k = memory_jit()
        .load_source("r.rs", "#[kernel] pub fn shift(x: &mut [i32]) { let i = global_id_x(); if i < x.len() { x[i] += 10 * (i as i32); } }")
        .unwrap()
        .kernel("shift")
        .unwrap();
    let mut rev_mut = rev.clone();
    k.launch(&dev, Grid::linear(6, 32), (&mut rev_mut,)).unwrap();
    assert_eq!(a.download().unwrap(), vec![51, 42, 33, 24, 15, 6]);
    rev.copy_from(&[0, 1, 2, 3, 4, 5]).unwrap();
    assert_eq!(a.download().unwrap(), vec![5, 4, 3, 2, 1, 0]);
    // Reaching before the memory or past it is refused.
    assert!(a.view(4, &[6], &[-1]).is_err(), "starts before the memory");
    assert!(a.view(0, &[6], &[-1]).is_err());
    assert!(a.view(0, &[2, 4], &[4, 1]).is_err(), "past the end");
    assert!(a.view(0, &[0], &[-7]).is_ok(), "an empty view reaches nothing");
}
