//! Tests: tiled tensor maps and the tensor copy (`TensorMap<T, W, H, S>`,
//! `cp_async_bulk_tensor_2d`, sm_90): on the host backend each box equals a reference written
//! from the hardware's rules (zeros outside the array, 16-byte chunks swizzled by the row's
//! index in its 8-row atom), for every swizzle, several element types, boxes inside, across and
//! outside the array's edges, and a row pitch wider than a row; the PTX, assembled by ptxas for
//! sm_90 and sm_90a, and the located error before sm_90; and misuse as typed errors: bad map
//! types and copies at compile time, a map of another type, device or overlapping a written
//! array at launch, a misaligned or overrunning destination as a fault naming the array, and a
//! map the hardware could not encode from `TensorMap::tiled`. (tests/gpu.rs runs the same boxes
//! on a GPU against the same reference.)
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use kache::{Arch, Device, Grid, Layout, Order, Specialization, Target, TensorMap};

use crate::common;

#[path = "../shared/tma_boxes.rs"]
mod tma_boxes;
use tma_boxes::{all_boxes, box_reference, box_source};

#[test]
fn tensor_copies_on_the_host_equal_the_hardwares_boxes() {
    all_boxes(&Device::host(), &common::memory_jit());
}

/// Every form assembles for sm_90 and sm_90a, checked and unchecked; before sm_90 the copy is a
/// located error naming sm_90.
#[test]
fn tensor_copies_assemble_for_sm_90_and_are_located_errors_before() {
    let jit = common::memory_jit();
    let ptxas = common::ptxas();
    let m = jit.load_source("boxes.rs", &box_source("bf16", 64, 32, 128)).unwrap();
    let k = m.kernel("boxes").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    for arch in ["sm_90", "sm_90a"] {
        for checked in [true, false] {
            let target = Target::Nvptx(Arch::parse(arch).unwrap());
            let c = if checked { k.compile(target, &spec) } else { k.compile_unchecked(target, &spec) };
            let ptx = c.unwrap().ptx().unwrap().to_string();
            // The copy, the map fenced at the kernel's start, and the PTX ISA that has the fence.
            for want in [
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                "fence.proxy.tensormap::generic.acquire.gpu",
                "\n.version 8.3\n",
            ] {
                assert!(ptx.contains(want), "{arch}: no `{want}` in\n{ptx}");
            }
            // Checked code: a wait not yet over reads the launch's fault record (its flag and
            // token), so that a thread whose copy failed a check does not leave the others
            // waiting for ever; unchecked code has no record.
            assert_eq!(ptx.matches("ld.volatile.global.u32").count(), if checked { 2 } else { 0 }, "{arch}: {checked}\n{ptx}");
            if let Some(p) = &ptxas {
                kache::toolchain::ptxas(p, &ptx, arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}"));
            }
        }
    }
    let src = "#[kernel]\npub fn only(map: &TensorMap<f32, 4, 4, 0>) {\n    let t = shared_array::<f32, 16>();\n    let bar = shared_array::<u64, 1>();\n    cp_async_bulk_tensor_2d(&mut t[0], map, 0, 0, &mut bar[0]);\n}\n";
    let k = jit.load_source("only.rs", src).unwrap().kernel("only").unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    let e = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &spec).unwrap_err().to_string();
    assert!(e.contains("only.rs:5:5") && e.contains("`cp_async_bulk_tensor_2d` needs sm_90 or later"), "{e}");
}

/// Maps the kernel's types cannot be, and copies of the wrong kind, are located compile errors.
#[test]
fn bad_tensor_maps_and_copies_are_located_errors() {
    let jit = common::memory_jit();
    for (param, line, want) in [
        ("map: &TensorMap<f32, 3, 8, 0>", "", "a box row of 3 elements is 12 bytes, not a multiple of 16"),
        ("map: &TensorMap<f32, 16, 8, 128>", "", "a box row of 64 bytes swizzled by 128"),
        ("map: &TensorMap<f32, 32, 300, 128>", "", "a box of 300 rows of 32 elements"),
        ("map: &TensorMap<f32, 32, 8, 96>", "", "a swizzle of 96 bytes"),
        ("map: &TensorMap<bool, 16, 8, 0>", "", "a tensor map's elements are numbers"),
        ("map: &TensorMap<f32, 32, 8>", "", "`TensorMap` takes 4 generic arguments"),
        (
            "map: &TensorMap<f32, 32, 8, 128>",
            "let t = shared_array::<bf16, 256>(); cp_async_bulk_tensor_2d(&mut t[0], map, 0, 0, &mut bar[0]);",
            "expected `f32`, found `bf16`",
        ),
        (
            "map: &TensorMap<f32, 32, 8, 128>",
            "let t = shared_array::<f32, 256>(); cp_async_bulk_tensor_2d(&mut t[0], map, 0u32, 0, &mut bar[0]);",
            "expected `i32`, found `u32`",
        ),
        (
            "map: &[f32]",
            "let t = shared_array::<f32, 256>(); cp_async_bulk_tensor_2d(&mut t[0], map, 0, 0, &mut bar[0]);",
            "copies a box of a tensor map",
        ),
    ] {
        let src = format!("#[kernel]\npub fn bad({param}, out: &mut [f32]) {{\n    let bar = shared_array::<u64, 1>();\n    {line}\n}}\n");
        let e = match jit.load_source("bad.rs", &src) {
            Err(e) => e.to_string(),
            Ok(m) => m.kernel("bad").map(|_| String::new()).unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains("bad.rs:") && e.contains(want), "{param} {line}: {e}");
    }
}

/// At launch: a map of another element type, box or swizzle, a struct or array where a map
/// goes, a map of another device's array, and a map of an array the launch writes are
/// refused; a destination that is misaligned or runs past its array is a fault naming it; and
/// `TensorMap::tiled` refuses what the hardware could not encode.
#[test]
fn misused_tensor_maps_are_typed_errors() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn k(map: &TensorMap<f32, 32, 4, 128>, at: usize, x: i32, out: &mut [f32]) {
    let tile = shared_array::<f32, 256>();
    let bar = shared_array::<u64, 1>();
    if thread_idx_x() == 0 {
        mbarrier_init(&mut bar[0], 1);
        fence_proxy_async();
        mbarrier_arrive_expect_tx(&mut bar[0], 512);
        cp_async_bulk_tensor_2d(&mut tile[at], map, x, 0, &mut bar[0]);
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    out[thread_idx_x() as usize] = tile[thread_idx_x() as usize];
}
"#;
    let m = jit.load_source("tma.rs", src).unwrap();
    let k = m.kernel("k").unwrap();
    let data: Vec<f32> = (0..64 * 32).map(|i| i as f32).collect();
    let a = dev.upload_nd(&data, &[64, 32], Order::C).unwrap();
    let map = TensorMap::tiled(&a, 32, 4, 128).unwrap();
    let mut out = dev.alloc::<f32>(&[32]).unwrap();
    let g = Grid::new(1u32, 32u32);
    k.launch(&dev, g, (&map, 0usize, 0i32, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), box_reference(&data, (64, 32, 32), (32, 4, 128), (0, 0))[..32].to_vec());
    // The destination: 1024-byte aligned for a 128-byte swizzle, inside the array; the box's
    // column at a 16-byte unit of the row (4 `f32`s), left of the array too.
    for (at, x, want) in [
        (4usize, 0i32, ["element 4 of `tile`", "not aligned to 1024 bytes"]),
        (192, 0, ["index 319", "`tile`"]),
        (0, 2, ["box at column 2", "a multiple of 4 elements (16 bytes)"]),
        (0, -6, ["box at column -6", "a multiple of 4 elements"]),
    ] {
        let e = k.launch(&dev, g, (&map, at, x, &mut out)).unwrap_err().to_string();
        assert!(want.iter().all(|w| e.contains(w)), "{at} {x}: {e}");
    }
    k.launch(&dev, g, (&map, 0usize, -4i32, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), box_reference(&data, (64, 32, 32), (32, 4, 128), (-4, 0))[..32].to_vec());
    // Another box, element type or swizzle.
    for other in [TensorMap::tiled(&a, 32, 8, 128).unwrap(), TensorMap::tiled(&a, 32, 4, 0).unwrap()] {
        let e = k.launch(&dev, g, (&other, 0usize, 0i32, &mut out)).unwrap_err().to_string();
        assert!(e.contains("expected `TensorMap<f32, 32, 4, 128>`, got a `TensorMap<f32, 32, "), "{e}");
    }
    let ints = dev.upload_nd(&vec![0u32; 64 * 32], &[64, 32], Order::C).unwrap();
    let e = k.launch(&dev, g, (&TensorMap::tiled(&ints, 32, 4, 128).unwrap(), 0usize, 0i32, &mut out)).unwrap_err().to_string();
    assert!(e.contains("got a `TensorMap<u32, 32, 4, 128>`"), "{e}");
    // An array where the map goes, a map where an array goes.
    let e = k.launch(&dev, g, (&a, 0usize, 0i32, &mut out)).unwrap_err().to_string();
    assert!(e.contains("expected the tensor map `TensorMap<f32, 32, 4, 128>`") && e.contains("TensorMap::tiled"), "{e}");
    let e = k.launch(&dev, g, (&map, 0usize, 0i32, &map)).unwrap_err().to_string();
    assert!(e.contains("got the tensor map `TensorMap<f32, 32, 4, 128>`"), "{e}");
    // Another device's array.
    let other_dev = Device::host_device(1);
    let b = other_dev.upload_nd(&data, &[64, 32], Order::C).unwrap();
    let e = k.launch(&dev, g, (&TensorMap::tiled(&b, 32, 4, 128).unwrap(), 0usize, 0i32, &mut out)).unwrap_err();
    assert!(matches!(e, kache::Error::WrongDevice { .. }), "{e}");
    // The launch writes the map's array.
    let mut row = a.view(32, &[32], &[1]).unwrap();
    let e = k.launch(&dev, g, (&map, 0usize, 0i32, &mut row)).unwrap_err().to_string();
    assert!(e.contains("argument `map` shares memory with argument `out`"), "{e}");
    // Maps the hardware cannot encode.
    let flat = dev.upload(&data).unwrap();
    let t = a.transpose();
    let odd = dev.upload_nd(&[0f32; 5 * 3], &[5, 3], Order::C).unwrap();
    for (r, want) in [
        (TensorMap::tiled(&flat, 32, 4, 0), "a tiled tensor map is of a 2-d array"),
        (TensorMap::tiled(&t, 32, 4, 0), "rows are not contiguous"),
        (TensorMap::tiled(&odd, 4, 4, 0), "rows 12 bytes apart"),
        (TensorMap::tiled(&a, 3, 4, 0), "12 bytes, not a multiple of 16"),
        (TensorMap::tiled(&a, 16, 4, 128), "swizzled by 128"),
        (TensorMap::tiled(&a, 32, 257, 128), "each is 1 to 256"),
        (TensorMap::tiled(&a, 32, 4, 16), "a swizzle of 16 bytes"),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("tensor map") && e.contains(want), "{want}: {e}");
    }
}

/// A generic kernel over a map's element type: its device function's `T` is inferred from the
/// map passed to it, and a launch picks the kernel's instance from the map (as from an array).
#[test]
fn a_maps_element_type_picks_the_instance() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
fn first_box<T: Num>(tile: &mut [T], map: &TensorMap<T, 32, 2, 0>, bar: &mut [u64], bytes: u32) {
    mbarrier_init(&mut bar[0], 1);
    fence_proxy_async();
    mbarrier_arrive_expect_tx(&mut bar[0], bytes);
    cp_async_bulk_tensor_2d(&mut tile[0], map, 0, 0, &mut bar[0]);
}

#[kernel]
pub fn copy_box<T: Num>(map: &TensorMap<T, 32, 2, 0>, bytes: u32, out: &mut [T]) {
    let tile = shared_array::<T, 64>();
    let bar = shared_array::<u64, 1>();
    if thread_idx_x() == 0 {
        first_box(tile, map, bar, bytes);
    }
    sync_threads();
    while !mbarrier_try_wait_parity(&bar[0], 0) {}
    let t = thread_idx_x() as usize;
    out[t] = tile[t];
}
"#;
    let m = jit.load_source("generic_map.rs", src).unwrap();
    let k = m.kernel("copy_box").unwrap();
    let g = Grid::new(1u32, 64u32);
    let floats: Vec<f32> = (0..64 * 4).map(|i| i as f32).collect();
    let a = dev.upload_nd(&floats, &[4, 64], Order::C).unwrap();
    let mut out = dev.alloc::<f32>(&[64]).unwrap();
    k.launch(&dev, g, (&TensorMap::tiled(&a, 32, 2, 0).unwrap(), 256u32, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), box_reference(&floats, (4, 64, 64), (32, 2, 0), (0, 0)));
    let halves: Vec<half::f16> = (0..64 * 4).map(|i| half::f16::from_f32(i as f32)).collect();
    let b = dev.upload_nd(&halves, &[4, 64], Order::C).unwrap();
    let mut out16 = dev.alloc::<half::f16>(&[64]).unwrap();
    k.launch(&dev, g, (&TensorMap::tiled(&b, 32, 2, 0).unwrap(), 128u32, &mut out16)).unwrap();
    assert_eq!(out16.download().unwrap(), box_reference(&halves, (4, 64, 64), (32, 2, 0), (0, 0)));
    // A map of one type and an array of another: the instance's types disagree.
    let e = k.launch(&dev, g, (&TensorMap::tiled(&b, 32, 2, 0).unwrap(), 128u32, &mut out)).unwrap_err().to_string();
    assert!(e.contains("conflicting types for `T`"), "{e}");
}

/// A tensor map parameter is keyed as one: a kernel that takes a struct of one `u64` where
/// another takes a map, and is otherwise the same, does not hit the other's code (the map's
/// kernel fences its map at the start; the struct's has nothing to fence).
#[test]
fn a_tensor_map_parameter_is_keyed_apart_from_a_struct_of_one_u64() {
    let dir = tempfile::tempdir().unwrap();
    let jit = common::disk_jit(dir.path());
    let target = Target::Nvptx(Arch::parse("sm_90").unwrap());
    let plain = "#[derive(Clone, Copy)]\nstruct P { x: u64 }\n#[kernel]\npub fn k(p: P, out: &mut [f32]) {\n    out[0] = 1.0;\n}\n";
    let mapped = "#[kernel]\npub fn k(p: &TensorMap<f32, 4, 4, 0>, out: &mut [f32]) {\n    out[0] = 1.0;\n}\n";
    let mut ptx = Vec::new();
    for src in [plain, mapped] {
        let k = jit.load_source("k.rs", src).unwrap().kernel("k").unwrap();
        let spec = Specialization::uniform(k.program(), Layout::C);
        ptx.push(k.compile(target, &spec).unwrap().ptx().unwrap().to_string());
    }
    assert!(!ptx[0].contains("fence.proxy.tensormap"), "{}", ptx[0]);
    assert!(ptx[1].contains("fence.proxy.tensormap::generic.acquire.gpu"), "the map's kernel hit the struct's code:\n{}", ptx[1]);
}
