//! Safe code cannot cause undefined behaviour: bounds checks (host backend here; PTX through
//! ptxas), the refusal of arrays that alias, validated downloads, checked array descriptions,
//! and the host device's stream under threads. The compile-fail guards run in `ui.rs`.
// Helpers outside `#[test]` functions unwrap too: a failure there is the test's failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kache::{ArgValue, Device, Error, Grid, Layout, Origin, Specialization, Target};

use crate::common::{disk_jit, memory_jit};

/// `src`'s kernel `k`.
fn kernel(src: &str) -> kache::Kernel {
    memory_jit().load_source("oob.rs", src).unwrap().kernel("k").unwrap()
}

/// The fields of an `Error::Launch`, or a panic naming what came instead.
fn launch_fault(e: Error) -> (String, String, u64, u64, Option<String>) {
    match e {
        Error::Launch { kernel, array, index, len, location } => (kernel, array, index, len, location),
        other => panic!("expected Error::Launch, got {other:?}: {other}"),
    }
}

/// `k(t, r, o)` sums row `r` of the 3 x 4 matrix `t` (0..12 stored flat), weighted by column
/// + 1, into `o[0]`: rows 0 and 2 give 20 and 100, and row 3 faults at index 12 of 12.
fn rows_0_and_2_run_and_row_3_faults_at_12(k: &kache::Kernel, t: &kache::DeviceArray<u32>) {
    let dev = Device::host();
    for (r, want) in [(0usize, 20u32), (2, 100)] {
        let mut out = dev.alloc::<u32>(&[1]).unwrap();
        k.launch(&dev, Grid::linear(1, 1), (t, r, &mut out)).unwrap();
        assert_eq!(out.download().unwrap(), vec![want], "row {r}");
    }
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    let (_, _, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (t, 3usize, &mut out)).unwrap_err());
    assert_eq!((index, len), (12, 12));
}

#[test]
fn an_out_of_bounds_read_of_a_parameter_is_a_launch_error_naming_everything() {
    let dev = Device::host();
    let x = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[8]).unwrap();
    let src = "#[kernel]\npub fn k(x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    if i < y.len() { y[i] = x[i]; }\n}\n";
    let e = kernel(src).launch(&dev, Grid::linear(8, 8), (&x, &mut y)).unwrap_err();
    let text = e.to_string();
    let (k, array, index, len, location) = launch_fault(e);
    assert_eq!((k.as_str(), array.as_str(), len, location.as_deref()), ("k", "parameter `x`", 4, Some("oob.rs:4:29")));
    assert!((4..8).contains(&index), "{text}");
    assert_eq!(text, format!("kernel `k`: index {index} is out of bounds for parameter `x` of length 4, at oob.rs:4:29"));
    // The threads in bounds ran; the faulting ones exited before their store.
    assert_eq!(y.download().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn an_out_of_bounds_write_never_reaches_the_memory_past_the_array() {
    let dev = Device::host();
    let whole = dev.alloc::<u32>(&[16]).unwrap();
    // `y` is the first half of `whole`: without the check, index 8.. would land in the second.
    let mut y = whole.view(0, &[8], &[1]).unwrap();
    let k = kernel("#[kernel] pub fn k(y: &mut [u32]) { let i = global_id_x(); y[i] = 7; }");
    let (_, array, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(16, 16), (&mut y,)).unwrap_err());
    assert_eq!((array.as_str(), len), ("parameter `y`", 8));
    assert!((8..16).contains(&index));
    assert_eq!(whole.download().unwrap(), [vec![7u32; 8], vec![0u32; 8]].concat());
}

#[test]
fn every_dimension_is_checked_against_its_own_extent() {
    let dev = Device::host();
    // [[0, 3]] of a 2x3 array is element 3 of the memory, inside it, but index 3 of dimension 1.
    let m = dev.upload_nd(&[1i32, 2, 3, 4, 5, 6], &[2, 3], kache::Order::C).unwrap();
    let mut out = dev.alloc::<i32>(&[1]).unwrap();
    let src = "#[kernel] pub fn k(m: &Array<i32, 2>, j: usize, out: &mut [i32]) { out[0] = m[[0, j]]; }";
    let k = kernel(src);
    k.launch(&dev, Grid::linear(1, 1), (&m, 2usize, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![3]);
    let e = k.launch(&dev, Grid::linear(1, 1), (&m, 3usize, &mut out)).unwrap_err();
    assert_eq!(e.to_string(), "kernel `k`: index 3 is out of bounds for dimension 1 of parameter `m` of length 3, at oob.rs:1:77");
    // The same for an F-order argument (another specialisation) and the first dimension.
    let f = dev.upload_nd(&[1i32, 2, 3, 4, 5, 6], &[2, 3], kache::Order::F).unwrap();
    let src = "#[kernel] pub fn k(m: &Array<i32, 2>, i: usize, out: &mut [i32]) { out[0] = m[[i, 0]]; }";
    let (_, array, index, len, _) = launch_fault(kernel(src).launch(&dev, Grid::linear(1, 1), (&f, 2usize, &mut out)).unwrap_err());
    assert_eq!((array.as_str(), index, len), ("dimension 0 of parameter `m`", 2, 2));
}

#[test]
fn captured_arrays_are_checked_and_named_by_their_origin() {
    let dev = Device::host();
    let table = dev.upload(&[1.0f32, 2.0]).unwrap();
    let src = "#[kernel] pub fn k(i: usize, o: &mut [f32]) { o[0] = G[i] + H[0]; }";
    let m = memory_jit().load_source("cap.rs", src).unwrap().with_global("G", &table).unwrap().with_global("H", vec![5.0f32]).unwrap();
    let k = m.kernel("k").unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (1usize, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![7.0]);
    let e = k.launch(&dev, Grid::linear(1, 1), (2usize, &mut out)).unwrap_err();
    assert_eq!(e.to_string(), "kernel `k`: index 2 is out of bounds for captured array global 'G' of length 2, at cap.rs:1:54");
    // A host array copied into the kernel as constant data is checked the same way.
    let src = "static S: [u32; 3] = [1, 2, 3];\n#[kernel] pub fn k(i: usize, o: &mut [u32]) { o[0] = S[i]; }";
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    let (_, array, index, len, _) = launch_fault(kernel(src).launch(&dev, Grid::linear(1, 1), (3usize, &mut out)).unwrap_err());
    assert_eq!((array.as_str(), index, len), ("captured array static 'S'", 3, 3));
}

#[test]
fn a_fault_in_a_module_file_names_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.rs"),
        "mod util;\n#[kernel] pub fn k(x: &[f32], i: usize, o: &mut [f32]) { o[0] = util::get(x, i); }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("util.rs"), "// helpers\npub fn get(a: &[f32], i: usize) -> f32 {\n    a[i]\n}\n").unwrap();
    let k = memory_jit().load_file(dir.path().join("main.rs")).unwrap().kernel("k").unwrap();
    let dev = Device::host();
    let x = dev.upload(&[1.0f32; 2]).unwrap();
    let mut o = dev.alloc::<f32>(&[1]).unwrap();
    let (_, array, index, _, location) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&x, 5usize, &mut o)).unwrap_err());
    assert_eq!((array.as_str(), index), ("parameter `a` of device function `get`", 5));
    let location = location.unwrap();
    assert!(location.ends_with("util.rs:3:5"), "{location}");
}

#[test]
fn shared_arrays_are_checked_against_their_length_and_the_dynamic_one_against_the_launch() {
    let dev = Device::host();
    let mut out = dev.alloc::<f32>(&[8]).unwrap();
    let src = "#[kernel] pub fn k(o: &mut [f32]) {\n    let s = shared_array::<f32, 4>();\n    let i = thread_idx_x() as usize;\n    s[i] = 1.0;\n    sync_threads();\n    o[i] = s[i % 4];\n}";
    let (_, array, index, len, location) = launch_fault(kernel(src).launch(&dev, Grid::linear(8, 8), (&mut out,)).unwrap_err());
    assert_eq!((array.as_str(), len, location.as_deref()), ("`s`, the shared array `shared_array::<f32, 4>()`", 4, Some("oob.rs:4:5")));
    assert!((4..8).contains(&index));
    // Threads 0..4 went on past the barrier that the exited threads left.
    assert_eq!(out.download().unwrap(), [vec![1.0f32; 4], vec![0.0; 4]].concat());

    let src = "#[kernel] pub fn k(o: &mut [u32]) { let d = dynamic_shared_array::<u32>(); let i = thread_idx_x() as usize; d[i] = 3; o[i] = d[i]; }";
    let k = kernel(src);
    let mut out = dev.alloc::<u32>(&[4]).unwrap();
    k.launch(&dev, Grid::linear(4, 4).with_shared_mem(16), (&mut out,)).unwrap();
    assert_eq!(out.download().unwrap(), vec![3; 4]);
    let (_, array, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(4, 4).with_shared_mem(8), (&mut out,)).unwrap_err());
    assert_eq!((array.as_str(), len), ("`d`, the dynamic shared array `dynamic_shared_array::<u32>()`", 2));
    assert!((2..4).contains(&index));
}

#[test]
fn accesses_in_device_functions_atomics_and_compound_assignments_are_checked() {
    let dev = Device::host();
    let x = dev.upload(&[1.0f32, 2.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    let src = "fn get(a: &[f32], i: usize) -> f32 { a[i] * 2.0 }\n#[kernel] pub fn k(x: &[f32], i: usize, o: &mut [f32]) { o[0] = get(x, i) + 1.0; o[0] = 5.0; }";
    let k = kernel(src);
    k.launch(&dev, Grid::linear(1, 1), (&x, 1usize, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![5.0]);
    out.copy_from(&[0.0]).unwrap();
    let e = k.launch(&dev, Grid::linear(1, 1), (&x, 2usize, &mut out)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `k`: index 2 is out of bounds for parameter `a` of device function `get` of length 2, at oob.rs:1:38"
    );
    // The thread exited inside `get`: the kernel's own stores after the call did not run.
    assert_eq!(out.download().unwrap(), vec![0.0]);

    let mut h = dev.alloc::<u32>(&[4]).unwrap();
    let k = kernel("#[kernel] pub fn k(h: &mut [u32]) { atomic_add(&mut h[global_id_x()], 1); }");
    let (_, array, _, len, _) = launch_fault(k.launch(&dev, Grid::linear(5, 8), (&mut h,)).unwrap_err());
    assert_eq!((array.as_str(), len), ("parameter `h`", 4));
    assert_eq!(h.download().unwrap(), vec![1; 4]);
    let k = kernel("#[kernel] pub fn k(h: &mut [u32]) { h[global_id_x()] += 2; }");
    let (_, _, index, _, _) = launch_fault(k.launch(&dev, Grid::linear(5, 8), (&mut h,)).unwrap_err());
    assert_eq!(index, 4);
    assert_eq!(h.download().unwrap(), vec![3; 4]);
}

#[test]
fn a_thread_that_faults_exits_even_from_a_loop_that_would_never_end() {
    let dev = Device::host();
    let x = dev.upload(&[0u32; 4]).unwrap();
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    // Each iteration reads the next element; without the exit this loop never ends.
    let src = "#[kernel] pub fn k(x: &[u32], o: &mut [u32]) { let mut i = 0; loop { o[0] += x[i] + 1; i += 1; } }";
    let (_, _, index, len, _) = launch_fault(kernel(src).launch(&dev, Grid::linear(1, 1), (&x, &mut out)).unwrap_err());
    assert_eq!((index, len), (4, 4));
    assert_eq!(out.download().unwrap(), vec![4]);
}

/// A `for` loop's range tells LLVM where its variable lies (checked code), so a check of it
/// against the bound it runs to folds away; every check the range does not prove still fires.
#[test]
fn checks_the_range_of_a_for_loop_does_not_prove_still_fire() {
    let dev = Device::host();
    let x = dev.upload(&[1u32, 2, 3, 4, 5]).unwrap();
    let run = |src: &str, y_len: usize| {
        let mut y = dev.alloc::<u32>(&[y_len]).unwrap();
        let fault = launch_fault(kernel(src).launch(&dev, Grid::linear(1, 1), (&x, &mut y)).unwrap_err());
        (fault.1, fault.2, fault.3, y.download().unwrap())
    };
    // The bound is `x`'s length, the store goes to a shorter `y`.
    let copy = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in 0..x.len() { y[j] = x[j]; } }";
    assert_eq!(run(copy, 3), ("parameter `y`".into(), 3, 3, vec![1, 2, 3]));
    // Strided, from a start that is not 0.
    let strided = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in (1..x.len()).step_by(2) { y[j] = x[j]; } }";
    assert_eq!(run(strided, 2), ("parameter `y`".into(), 3, 2, vec![0, 2]));
    // An inclusive range reaches its bound: `x[x.len()]` is out of bounds.
    let inclusive = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in 0..=x.len() { y[0] += x[j]; } }";
    assert_eq!(run(inclusive, 1), ("parameter `x`".into(), 5, 5, vec![15]));
    // The variable changed in the body is no longer what the range promised.
    let moved = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in 0..x.len() { let mut i = j; i += 2; y[0] += x[i]; } }";
    assert_eq!(run(moved, 1), ("parameter `x`".into(), 5, 5, vec![12]));
    // A range between constants past the array's end.
    let constant = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in 0..8 { y[0] += x[j]; } }";
    assert_eq!(run(constant, 1), ("parameter `x`".into(), 5, 5, vec![15]));
    // A signed range below zero: -1 as usize is out of bounds.
    let signed = "#[kernel] pub fn k(x: &[u32], y: &mut [u32]) { for j in -1i64..(x.len() as i64) { y[0] += x[j as usize]; } }";
    assert_eq!(run(signed, 1), ("parameter `x`".into(), u64::MAX, 5, vec![0]));
}

#[test]
fn unchecked_code_runs_only_through_the_unsafe_launch_and_is_keyed_apart() {
    let dev = Device::host();
    let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { let i = global_id_x(); if i < y.len() { y[i] = x[i] * 2.0; } }";
    let k = kernel(src);
    let x = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[3]).unwrap();
    // SAFETY: every index is below y.len() == x.len().
    unsafe { k.launch_unchecked(&dev, Grid::linear(3, 32), (&x, &mut y)) }.unwrap();
    assert_eq!(y.download().unwrap(), vec![2.0, 4.0, 6.0]);

    let spec = Specialization { layouts: vec![Some(Layout::C), Some(Layout::C)] };
    let checked = k.compile(Target::Host, &spec).unwrap();
    let unchecked = k.compile_unchecked(Target::Host, &spec).unwrap();
    assert!(checked.is_checked() && !unchecked.is_checked());
    assert_ne!(checked.key(), unchecked.key(), "checked is part of the key");
    let e = unchecked.launch(&dev, Grid::linear(3, 32), (&x, &mut y)).unwrap_err();
    assert!(matches!(e, Error::BadLaunch(_)) && e.to_string().contains("without bounds checks"), "{e}");
    assert!(unchecked.serialize().is_err(), "only checked code is serialised");
    // SAFETY: as above.
    unsafe { unchecked.launch_unchecked(&dev, Grid::linear(3, 32), (&x, &mut y)) }.unwrap();
}

#[test]
fn a_store_never_serves_checked_code_for_unchecked_requests_or_the_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let src = "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }";
    let spec = Specialization { layouts: vec![Some(Layout::C)] };
    let first = disk_jit(dir.path()).load_source("k.rs", src).unwrap().kernel("k").unwrap();
    let checked = first.compile(Target::Host, &spec).unwrap();
    assert!(matches!(checked.origin(), Origin::Compiled { .. }));
    // A later process asks for the unchecked code: a miss, then a hit of its own.
    let second = disk_jit(dir.path()).load_source("k.rs", src).unwrap().kernel("k").unwrap();
    let unchecked = second.compile_unchecked(Target::Host, &spec).unwrap();
    assert!(matches!(unchecked.origin(), Origin::Compiled { .. }), "{:?}", unchecked.origin());
    assert_ne!(unchecked.artifact().bytes(), checked.artifact().bytes());
    let third = disk_jit(dir.path()).load_source("k.rs", src).unwrap().kernel("k").unwrap();
    let again = third.compile_unchecked(Target::Host, &spec).unwrap();
    assert!(matches!(again.origin(), Origin::Cache(_)) && !again.is_checked());
    let checked_again = third.compile(Target::Host, &spec).unwrap();
    assert!(matches!(checked_again.origin(), Origin::Cache(_)) && checked_again.is_checked());
    assert_eq!(checked_again.artifact().bytes(), checked.artifact().bytes());
}

#[test]
fn checked_ptx_assembles_for_sm_70_80_and_90() {
    let Some(ptxas) = crate::common::ptxas() else { return };
    let jit = memory_jit();
    let src = "fn at(a: &Array<f32, 2>, i: usize, j: usize) -> f32 { a[[i, j]] }\n\
               #[kernel] pub fn k(a: f32, x: &[f32], y: &mut [f32], m: &Array<f32, 2>, h: &mut [u32]) {\n\
               let s = shared_array::<f32, 32>(); let d = dynamic_shared_array::<f32>();\n\
               let i = global_id_x(); let t = thread_idx_x() as usize;\n\
               s[t] = x[i]; d[t] = at(m, i, t); sync_threads();\n\
               y[i] = a * s[t] + d[t] + y[i]; atomic_add(&mut h[i], 1); }";
    let k = jit.load_source("p.rs", src).unwrap().kernel("k").unwrap();
    for sm in ["sm_70", "sm_80", "sm_90"] {
        let arch = kache::Arch::parse(sm).unwrap();
        let spec = Specialization { layouts: vec![None, Some(Layout::C), Some(Layout::C), Some(Layout::A), Some(Layout::C)] };
        for c in [k.compile(Target::Nvptx(arch), &spec).unwrap(), k.compile_unchecked(Target::Nvptx(arch), &spec).unwrap()] {
            let ptx = c.ptx().unwrap();
            assert_eq!(ptx.contains("exit;"), c.is_checked(), "{sm}: only checked code exits");
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("k.ptx");
            std::fs::write(&file, ptx).unwrap();
            let out =
                std::process::Command::new(&ptxas).args(["-arch", sm, "-o"]).arg(dir.path().join("k.cubin")).arg(&file).output().unwrap();
            assert!(out.status.success(), "{sm} checked={}: {}", c.is_checked(), String::from_utf8_lossy(&out.stderr));
        }
    }
}

#[test]
fn an_array_passed_as_both_read_and_written_is_refused_naming_both() {
    let dev = Device::host();
    let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { let i = global_id_x(); if i < y.len() { y[i] = x[i] + 1.0; } }";
    let k = kernel(src);
    let mut a = dev.upload(&[1.0f32, 2.0]).unwrap();
    let b = a.clone();
    let e = k.launch(&dev, Grid::linear(2, 2), (&b, &mut a)).unwrap_err();
    assert!(matches!(&e, Error::BadArgument { param, .. } if param == "y"), "{e:?}");
    assert_eq!(
        e.to_string(),
        "kernel `k`, argument `y`: argument `y` shares memory with argument `x`, and the kernel writes argument `y`: \
         arrays of one launch must not overlap where one is written; pass separate arrays"
    );
    assert_eq!(a.download().unwrap(), vec![1.0, 2.0], "nothing ran");
    // Overlapping views of one buffer are refused; disjoint ones are not.
    let whole = dev.upload(&[0.0f32; 8]).unwrap();
    let lo = whole.view(0, &[5], &[1]).unwrap();
    let mut hi = whole.view(4, &[4], &[1]).unwrap();
    assert!(matches!(k.launch(&dev, Grid::linear(4, 4), (&lo, &mut hi)), Err(Error::BadArgument { .. })));
    let lo = whole.view(0, &[4], &[1]).unwrap();
    k.launch(&dev, Grid::linear(4, 4), (&lo, &mut hi)).unwrap();
    assert_eq!(whole.download().unwrap(), [vec![0.0; 4], vec![1.0; 4]].concat());
    // Twice as `&mut`.
    let k2 = kernel("#[kernel] pub fn k(p: &mut [f32], q: &mut [f32]) { p[0] = 1.0; q[0] = 2.0; }");
    let mut c = dev.alloc::<f32>(&[1]).unwrap();
    let mut d = c.clone();
    let e = k2.launch(&dev, Grid::linear(1, 1), (&mut c, &mut d)).unwrap_err();
    assert!(e.to_string().contains("argument `q` shares memory with argument `p`, and the kernel writes both"), "{e}");
    // The same array twice read-only is fine.
    let k3 = kernel("#[kernel] pub fn k(p: &[f32], q: &[f32], o: &mut [f32]) { o[0] = p[0] + q[0]; }");
    let mut o = dev.alloc::<f32>(&[1]).unwrap();
    k3.launch(&dev, Grid::linear(1, 1), (&c, &c, &mut o)).unwrap();
}

#[test]
fn an_argument_overlapping_a_captured_array_the_kernel_writes_is_refused() {
    let dev = Device::host();
    let g = dev.upload(&[1.0f32, 2.0]).unwrap();
    let writes = memory_jit().load_source("w.rs", "#[kernel] pub fn k(x: &[f32]) { G[0] = x[1]; }").unwrap().with_global("G", &g).unwrap();
    let e = writes.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&g,)).unwrap_err();
    assert!(
        e.to_string()
            .contains("captured array global 'G' shares memory with argument `x`, and the kernel writes captured array global 'G'"),
        "{e}"
    );
    // A kernel that only reads the capture may take the same array as a read-only argument.
    let reads = memory_jit()
        .load_source("r.rs", "#[kernel] pub fn k(x: &[f32], o: &mut [f32]) { o[0] = G[0] + x[1]; }")
        .unwrap()
        .with_global("G", &g)
        .unwrap();
    let mut o = dev.alloc::<f32>(&[1]).unwrap();
    reads.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&g, &mut o)).unwrap();
    assert_eq!(o.download().unwrap(), vec![3.0]);
    // ... but not as the array it writes.
    let mut g2 = g.clone();
    assert!(matches!(reads.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&g, &mut g2)), Err(Error::BadArgument { .. })));
}

#[test]
fn a_download_never_makes_an_invalid_bool() {
    let dev = Device::host();
    let flags = dev.upload(&[true, false, true]).unwrap();
    assert_eq!(flags.download().unwrap(), vec![true, false, true]);
    // A foreign producer leaves a 2 in the array's memory.
    // SAFETY: host-device memory is host memory; this thread is the only one using the array,
    // and element 1 is inside it.
    unsafe { *(flags.device_ptr() as *mut u8).add(1) = 2 };
    let e = flags.download().unwrap_err();
    assert!(matches!(&e, Error::BadArray(m) if m.contains("[02]") && m.contains("`bool`")), "{e}");
    // Kernels read such a byte as `!= 0`, as the GPU does.
    let k = kernel("#[kernel] pub fn k(f: &[bool], o: &mut [u32]) { o[0] = f[1] as u32; }");
    let mut o = dev.alloc::<u32>(&[1]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&flags, &mut o)).unwrap();
    assert_eq!(o.download().unwrap(), vec![1]);
}

#[test]
fn descriptions_that_cannot_be_addressed_are_refused() {
    struct Raw {
        ptr: u64,
        shape: Vec<usize>,
        strides: Option<Vec<isize>>,
        read_only: bool,
    }
    // SAFETY: never launched: each description is refused when it is read.
    unsafe impl kache::ArrayInterface for Raw {
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
            self.read_only
        }
        fn location(&self) -> kache::Location {
            Device::host().location()
        }
        fn owner(&self) -> kache::capture::Owner {
            Arc::new(())
        }
    }
    use kache::capture::ArrayDesc;
    let bad = |r: Raw| ArrayDesc::from_interface(&r).unwrap_err().to_string();
    assert!(bad(Raw { ptr: 0x1002, shape: vec![4], strides: None, read_only: false }).contains("not aligned for `f32`"));
    assert!(bad(Raw { ptr: 0, shape: vec![4], strides: None, read_only: false }).contains("null"));
    let huge = Raw { ptr: 0x1000, shape: vec![1 << 40, 1 << 40], strides: None, read_only: false };
    assert!(bad(huge).contains("spans more bytes"));
    let wraps = Raw { ptr: 0x1000, shape: vec![3], strides: Some(vec![isize::MAX - 3]), read_only: false };
    assert!(bad(wraps).contains("spans more bytes"));
    // A read-only description cannot be made writable by building the argument by hand.
    let dev = Device::host();
    let a = dev.upload(&[1.0f32]).unwrap().read_only();
    let desc = ArrayDesc::from_interface(&a).unwrap();
    let k = kernel("#[kernel] pub fn k(y: &mut [f32]) { y[0] = 2.0; }");
    let e = k.launch(&dev, Grid::linear(1, 1), vec![ArgValue::Array { desc, writable: true }]).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    assert_eq!(a.download().unwrap(), vec![1.0]);
    // Views whose arithmetic would wrap are refused, not wrapped.
    let big = dev.alloc::<f32>(&[4]).unwrap();
    assert!(big.view(usize::MAX, &[1], &[1]).is_err());
    assert!(big.view(0, &[2], &[isize::MAX / 2]).is_err());
    assert!(big.view(3, &[2], &[isize::MIN]).is_err());
    assert!(big.view(0, &[usize::MAX; 4], &[isize::MAX; 4]).is_err());
    assert!(big.view(0, &[usize::MAX; 4], &[isize::MIN; 4]).is_err());
    assert!(kache::HostArray::strided(vec![1.0f32; 4], &[2], &[usize::MAX], 0).is_err());
    // An empty view or host array still has extents whose count must exist (`len`, `download`
    // and the capture multiply them): refused, where it was made and later counted with an
    // overflow (a panic in a debug build).
    assert!(big.view(0, &[usize::MAX, usize::MAX, 0], &[1, 1, 1]).is_err());
    assert!(kache::HostArray::strided(Vec::<f32>::new(), &[usize::MAX, 2, 0], &[1, 1, 1], 0).is_err());
    assert!(big.view(0, &[0], &[isize::MAX]).is_err(), "strides whose bytes do not fit an isize");
    assert!(kache::HostArray::strided(Vec::<f32>::new(), &[0], &[usize::MAX], 0).is_err());
    let empty = big.view(0, &[3, 0], &[1, 1]).unwrap();
    assert_eq!((empty.len(), empty.download().unwrap()), (0, Vec::<f32>::new()));
}

#[test]
fn clones_of_one_array_hammered_from_threads_never_see_a_launch_half_done() {
    // Launches, downloads and copies of one array from several threads: the host device's
    // stream runs them one at a time, so every download sees whole launches only (each launch
    // adds 1 to every element; each copy sets every element alike): all elements equal.
    let dev = Device::host();
    let n = 1 << 14;
    let a = dev.alloc::<u32>(&[n]).unwrap();
    let k = kernel("#[kernel] pub fn k(a: &mut [u32]) { let i = global_id_x(); if i < a.len() { a[i] += 1; } }");
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (mut a, k, dev) = (a.clone(), k.clone(), dev.clone());
            std::thread::spawn(move || {
                for round in 0..60 {
                    match (t + round) % 3 {
                        0 => k.launch(&dev, Grid::linear(n, 128), (&mut a,)).unwrap(),
                        1 => a.copy_from(&vec![round as u32 * 1000; n]).unwrap(),
                        _ => {
                            let v = a.download().unwrap();
                            assert!(v.iter().all(|x| *x == v[0]), "a download saw a launch or a copy half done");
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let v = a.download().unwrap();
    assert!(v.iter().all(|x| *x == v[0]));
}

#[test]
fn a_strided_copy_never_undoes_another_threads_launch() {
    // Launches increment the even elements; copies write the odd ones through a strided view,
    // whose copy reads and writes back the whole span. Were another launch to come between
    // that read and that write, its increments would be lost.
    let dev = Device::host();
    let n = 1 << 16;
    let whole = dev.alloc::<u32>(&[2 * n]).unwrap();
    let k = kernel("#[kernel] pub fn k(a: &mut [u32]) { let i = global_id_x(); if i < a.len() { a[i] += 1; } }");
    let (launchers, launches) = (2, 50);
    let threads: Vec<_> = (0..2 * launchers)
        .map(|t| {
            let (whole, k, dev) = (whole.clone(), k.clone(), dev.clone());
            std::thread::spawn(move || {
                let mut even = whole.view(0, &[n], &[2]).unwrap();
                let odd = whole.view(1, &[n], &[2]).unwrap();
                for round in 0..launches {
                    if t % 2 == 0 {
                        k.launch(&dev, Grid::linear(n, 128), (&mut even,)).unwrap();
                    } else {
                        odd.copy_from(&vec![round as u32; n]).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let even = whole.view(0, &[n], &[2]).unwrap().download().unwrap();
    assert!(even.iter().all(|x| *x == (launchers * launches) as u32), "lost increments: {:?}", &even[..4]);
}

// Loop versioning (codegen/lower/version.rs): a loop whose accesses are in bounds at both ends
// runs without their checks; any other loop runs the checked copy, which reports the fault
// exactly where the unversioned code would.

#[test]
fn a_loop_that_runs_past_an_array_faults_at_the_first_index_outside_having_done_the_ones_before() {
    let dev = Device::host();
    let k = kernel("#[kernel] pub fn k(x: &[f32], n: usize, y: &mut [f32]) { for i in 0..n { y[i] = x[i] * 2.0; } }");
    let x = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[8]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&x, 4usize, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![2.0, 4.0, 6.0, 8.0, 0.0, 0.0, 0.0, 0.0]);
    let mut y = dev.alloc::<f32>(&[8]).unwrap();
    let (_, array, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&x, 6usize, &mut y)).unwrap_err());
    assert_eq!((array.as_str(), index, len), ("parameter `x`", 4, 4));
    assert_eq!(y.download().unwrap(), vec![2.0, 4.0, 6.0, 8.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn versioned_indices_that_wrap_products_of_invariants_and_strides_fault_as_unversioned_code_does() {
    let dev = Device::host();
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    // `j - 3` wraps on the first iteration: index 2^64 - 2.
    let k = kernel("#[kernel] pub fn k(x: &[u32], o: &mut [u32]) { for j in (1..x.len()).step_by(2) { o[0] += x[j - 3]; } }");
    let x = dev.upload(&[1u32; 9]).unwrap();
    let (_, _, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&x, &mut out)).unwrap_err());
    assert_eq!((index, len), (u64::MAX - 1, 9));
    // A row of a matrix stored flat: rows 0 and 1 of 3 x 4 are in bounds, row 3 is not (the
    // first index outside is 12, at k = 0).
    let k = kernel("#[kernel] pub fn k(t: &[u32], r: usize, o: &mut [u32]) { for c in 0..4 { o[0] += t[r * 4 + c] * (c as u32 + 1); } }");
    let t = dev.upload(&(0..12u32).collect::<Vec<_>>()).unwrap();
    rows_0_and_2_run_and_row_3_faults_at_12(&k, &t);
    // An index that leaves the array only on the last iteration: the ones before ran.
    let k = kernel("#[kernel] pub fn k(t: &[u32], o: &mut [u32]) { for c in 0..=t.len() { o[0] += 1; o[0] += t[c] * 0; } }");
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    let (_, _, index, _, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&t, &mut out)).unwrap_err());
    assert_eq!(index, 12);
    assert_eq!(out.download().unwrap(), vec![13]);
}

#[test]
fn an_index_named_by_a_let_in_the_loop_is_versioned_as_its_value_and_faults_as_unversioned_code_does() {
    let dev = Device::host();
    let t = dev.upload(&(0..12u32).collect::<Vec<_>>()).unwrap();
    // `let i = r * 4 + c` stands for its value: rows 0 and 2 of 3 x 4 run, row 3 faults at 12.
    let k = kernel(
        "#[kernel] pub fn k(t: &[u32], r: usize, o: &mut [u32]) { for c in 0..4 { let i = r * 4 + c; o[0] += t[i] * (c as u32 + 1); } }",
    );
    rows_0_and_2_run_and_row_3_faults_at_12(&k, &t);
    // A `let` of a value the loop changes is no promise: `i` is 0, 6, then 12 (out of bounds),
    // though `c + s` with `s` as it was before the loop would stay below 4.
    let k = kernel(
        "#[kernel] pub fn k(t: &[u32], o: &mut [u32]) { let mut s = 0usize; for c in 0..4 { let i = c + s; s += 5; o[0] += t[i]; } }",
    );
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    let (_, _, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&t, &mut out)).unwrap_err());
    assert_eq!((index, len), (12, 12));
    assert_eq!(out.download().unwrap(), vec![6]);
    // Nor is a `let` the body assigns again afterwards.
    let k = kernel("#[kernel] pub fn k(t: &[u32], o: &mut [u32]) { for c in 0..4 { let mut i = c; i *= 5; o[0] += t[i]; } }");
    let mut out = dev.alloc::<u32>(&[1]).unwrap();
    let (_, _, index, _, _) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&t, &mut out)).unwrap_err());
    assert_eq!(index, 15);
    assert_eq!(out.download().unwrap(), vec![15]);
}

#[test]
fn a_loop_that_leaves_before_its_bound_passes_the_array_does_not_fault() {
    let dev = Device::host();
    let src = "#[kernel] pub fn k(n: usize, stop: usize, o: &mut [u32]) { for i in 0..n { if i == stop { break; } o[i] = i as u32 + 1; } }";
    let k = kernel(src);
    let mut o = dev.alloc::<u32>(&[4]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (100usize, 4usize, &mut o)).unwrap();
    assert_eq!(o.download().unwrap(), vec![1, 2, 3, 4]);
}

#[test]
fn a_checked_strided_reduction_keeps_four_loads_in_flight_on_the_gpu() {
    // The versioned loop's unrolled body has no check between its loads; with checks, each load
    // would sit behind its own branch.
    // The same with the index named by a `let` (which stands for its value) and offset.
    for body in ["acc += x[j];", "let i = j - global_id_x(); acc += x[i + global_id_x()];"] {
        let src = format!(
            "#[kernel] pub fn k(x: &[f32], out: &mut [f32]) {{\n\
             let mut acc = 0.0f32;\n\
             for j in (global_id_x()..x.len()).step_by(block_dim_x() as usize * grid_dim_x() as usize) {{ {body} }}\n\
             atomic_add(&mut out[0], acc); }}"
        );
        let k = kernel(&src);
        let spec = Specialization { layouts: vec![Some(Layout::C), Some(Layout::C)] };
        let c = k.compile(Target::Nvptx(kache::Arch::parse("sm_90").unwrap()), &spec).unwrap();
        assert!(c.is_checked());
        let ptx = c.ptx().unwrap();
        let most = ptx.split("$L__").map(|block| block.matches("ld.global.nc.f32").count()).max().unwrap_or(0);
        assert!(most >= 4, "no block with 4 loads in the checked PTX of `{body}`:\n{ptx}");
    }
}

/// A tiled matmul: 4 x 4 tiles of `a` and `b` staged in shared memory between barriers.
const TILED: &str = "#[kernel] pub fn k(a: &Array<f32, 2>, b: &Array<f32, 2>, c: &mut Array<f32, 2>) {\n\
    let ta = shared_array::<f32, 16>(); let tb = shared_array::<f32, 16>();\n\
    let tx = thread_idx_x() as usize; let ty = thread_idx_y() as usize;\n\
    let row = block_idx_y() as usize * 4 + ty; let col = block_idx_x() as usize * 4 + tx;\n\
    let mut acc = 0.0f32;\n\
    for t in (0..b.shape(0)).step_by(4) {\n\
        ta[ty * 4 + tx] = a[[row, t + tx]];\n\
        tb[ty * 4 + tx] = b[[t + ty, col]];\n\
        sync_threads();\n\
        for k in 0..4 { acc += ta[ty * 4 + k] * tb[k * 4 + tx]; }\n\
        sync_threads();\n\
    }\n\
    c[[row, col]] = acc; }";

#[test]
fn a_loop_with_barriers_is_versioned_for_the_whole_block_and_faults_as_unversioned_code_does() {
    // On the GPU the block chooses one copy (`bar.red.and`): its tile loads are issued together,
    // with no check between them.
    let k = kernel(TILED);
    let spec = Specialization { layouts: vec![Some(Layout::C); 3] };
    let c = k.compile(Target::Nvptx(kache::Arch::parse("sm_90").unwrap()), &spec).unwrap();
    let ptx = c.ptx().unwrap();
    assert_eq!(ptx.matches("bar.red.and.pred").count(), 1, "{ptx}");
    let together = ptx.split("$L__").any(|block| block.matches("ld.global.nc.f32").count() >= 2);
    assert!(together, "no block with both tile loads in the checked PTX:\n{ptx}");
    // The checked copies, which only a launch on its way to a fault runs, are not unrolled.
    assert!(ptx.contains(".pragma \"nounroll\""), "{ptx}");
    if let Some(ptxas) = crate::common::ptxas() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.ptx"), ptx).unwrap();
        for sm in ["sm_70", "sm_90"] {
            let ptx = c.ptx().unwrap().replace(".target sm_90", &format!(".target {sm}"));
            std::fs::write(dir.path().join("k.ptx"), ptx).unwrap();
            let out = std::process::Command::new(&ptxas)
                .args(["-arch", sm, "-o"])
                .arg(dir.path().join("k.cubin"))
                .arg(dir.path().join("k.ptx"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{sm}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    // The host backend: results, and a fault in the last tile of `a` only (its second dimension
    // 2 short) reported as before, at the first index outside.
    let dev = Device::host();
    let n = 8;
    let av: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32).collect();
    let bv: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 - 2.0).collect();
    let a = dev.upload_nd(&av, &[n, n], kache::Order::C).unwrap();
    let b = dev.upload_nd(&bv, &[n, n], kache::Order::C).unwrap();
    let mut out = dev.alloc::<f32>(&[n, n]).unwrap();
    let grid = Grid::new((2u32, 2u32), (4u32, 4u32));
    k.launch(&dev, grid, (&a, &b, &mut out)).unwrap();
    let got = out.download().unwrap();
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|t| av[i * n + t] * bv[t * n + j]).sum();
            assert_eq!(got[i * n + j], want, "c[{i}][{j}]");
        }
    }
    let short: Vec<f32> = (0..n * (n - 2)).map(|i| i as f32).collect();
    let a_short = dev.upload_nd(&short, &[n, n - 2], kache::Order::C).unwrap();
    let mut out = dev.alloc::<f32>(&[n, n]).unwrap();
    let (kernel_name, array, index, len, location) = launch_fault(k.launch(&dev, grid, (&a_short, &b, &mut out)).unwrap_err());
    assert_eq!((kernel_name.as_str(), array.as_str(), index, len), ("k", "dimension 1 of parameter `a`", 6, 6));
    assert!(location.unwrap().starts_with("oob.rs:7:"));
}

/// `k(x, y)` on the host for `x` of 2 rows of 256 (`xv`) and `y` of 64, one block of 32
/// threads per row: `x` on the host device, and `y` after the launch.
fn two_rows_of_32_threads(k: &kache::Kernel, xv: &[f32]) -> (kache::DeviceArray<f32>, Vec<f32>) {
    let dev = Device::host();
    let x = dev.upload_nd(xv, &[2, 256], kache::Order::C).unwrap();
    let mut y = dev.alloc::<f32>(&[64]).unwrap();
    k.launch(&dev, Grid::linear(64, 32), (&x, &mut y)).unwrap();
    (x, y.download().unwrap())
}

#[test]
fn a_loop_unrolled_whole_is_versioned_and_its_fast_copy_issues_its_loads_together() {
    // A row kept in registers (softmax's shape): 8 loads, each re-checking the row, would each
    // sit behind its own branch; the fast copy has none, and the array stays in registers.
    let src = "#[kernel] pub fn k(x: &Array<f32, 2>, y: &mut [f32]) {\n\
               let row = block_idx_x() as usize; let t = thread_idx_x() as usize;\n\
               let mut v = [0.0f32; 8];\n\
               for k in 0..8 { v[k] = x[[row, t + k * 32]]; }\n\
               let mut s = 0.0f32; for k in 0..8 { s += v[k]; }\n\
               y[row * 32 + t] = s; }";
    let k = kernel(src);
    let spec = Specialization { layouts: vec![Some(Layout::C), Some(Layout::C)] };
    let c = k.compile(Target::Nvptx(kache::Arch::parse("sm_90").unwrap()), &spec).unwrap();
    let ptx = c.ptx().unwrap();
    // The fast copy's loads stand together in one block, which touches no local memory (`v`
    // is in registers there); the checked copy, which only a launch on its way to a fault
    // runs, is a loop (not unrolled) over its own copy of `v` in local memory.
    let fast = ptx.split("$L__").max_by_key(|block| block.matches("ld.global.nc.f32").count()).unwrap_or_default();
    assert!(fast.matches("ld.global.nc.f32").count() >= 4, "no block with 4 of the loads in the checked PTX:\n{ptx}");
    assert!(!fast.contains(".local"), "the fast copy's array left registers:\n{ptx}");
    let rolled = ptx.split("$L__").any(|block| block.contains(".pragma \"nounroll\""));
    assert!(rolled && ptx.contains("st.local.f32"), "the checked copy is not a loop over its own array:\n{ptx}");
    // On the host: sums of rows, and a row past the array's end faults at its first access.
    let dev = Device::host();
    let xv: Vec<f32> = (0..2 * 256).map(|i| (i % 9) as f32).collect();
    let (x, got) = two_rows_of_32_threads(&k, &xv);
    for row in 0..2 {
        for t in 0..32 {
            let want: f32 = (0..8).map(|k| xv[row * 256 + t + k * 32]).sum();
            assert_eq!(got[row * 32 + t], want);
        }
    }
    let mut y = dev.alloc::<f32>(&[96]).unwrap();
    let (_, array, index, len, _) = launch_fault(k.launch(&dev, Grid::linear(96, 32), (&x, &mut y)).unwrap_err());
    assert_eq!((array.as_str(), index, len), ("dimension 0 of parameter `x`", 2, 2));
}

#[test]
fn a_loop_unrolled_whole_that_breaks_an_outer_loop_keeps_both_copies_unrolled() {
    // The rolled checked copy copies the register array back at its own exit; a `break` of
    // the loop around it would skip that, so such a loop keeps both copies unrolled (and its
    // array in registers). On the host: the outer loop ends at the first element below -100.
    let src = "#[kernel] pub fn k(x: &Array<f32, 2>, y: &mut [f32]) {\n\
               let row = block_idx_x() as usize; let t = thread_idx_x() as usize;\n\
               let mut v = [0.0f32; 8]; let mut n = 0u32;\n\
               'rows: for r in 0..2 {\n\
               for k in 0..8 { if x[[row, t + k * 32]] < -100.0 { break 'rows; } v[k] += x[[row, t + k * 32]] + r as f32; }\n\
               n += 1; }\n\
               let mut s = 0.0f32; for k in 0..8 { s += v[k]; }\n\
               y[row * 32 + t] = s + n as f32; }";
    let k = kernel(src);
    let spec = Specialization { layouts: vec![Some(Layout::C), Some(Layout::C)] };
    let c = k.compile(Target::Nvptx(kache::Arch::parse("sm_90").unwrap()), &spec).unwrap();
    let ptx = c.ptx().unwrap();
    assert!(!ptx.contains(".local") && !ptx.contains("nounroll"), "{ptx}");
    if let Some(ptxas) = crate::common::ptxas() {
        crate::common::assemble(&ptxas, ptx, "the kernel");
    }
    let mut xv: Vec<f32> = (0..2 * 256).map(|i| (i % 7) as f32).collect();
    xv[256 + 5 + 3 * 32] = -1000.0; // row 1, thread 5, k = 3: row 1's thread 5 stops there
    let (_, got) = two_rows_of_32_threads(&k, &xv);
    for row in 0..2 {
        for t in 0..32 {
            let (mut v, mut n) = ([0.0f32; 8], 0u32);
            'rows: for r in 0..2 {
                for k in 0..8 {
                    let e = xv[row * 256 + t + k * 32];
                    if e < -100.0 {
                        break 'rows;
                    }
                    v[k] += e + r as f32;
                }
                n += 1;
            }
            assert_eq!(got[row * 32 + t], v.iter().sum::<f32>() + n as f32, "row {row} thread {t}");
        }
    }
}

#[test]
fn accesses_of_a_nested_loop_are_tested_with_the_outer_loop_and_fault_as_unversioned_code_does() {
    // The outer loop's test covers the inner loop's accesses at both ends of both ranges; when
    // the inner range runs past the array, the checked copy runs and faults where it would.
    let dev = Device::host();
    let k = kernel(
        "#[kernel] pub fn k(x: &[f32], m: usize, y: &mut [f32]) {\n\
         let mut acc = 0.0f32;\n\
         for i in 0..2usize { for k in 0..m { acc += x[i * 4 + k]; } }\n\
         y[thread_idx_x() as usize] = acc; }",
    );
    let x = dev.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[1]).unwrap();
    k.launch(&dev, Grid::linear(1, 1), (&x, 4usize, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![36.0]);
    // An empty inner range runs nothing and faults nowhere.
    k.launch(&dev, Grid::linear(1, 1), (&x, 0usize, &mut y)).unwrap();
    assert_eq!(y.download().unwrap(), vec![0.0]);
    let mut y = dev.alloc::<f32>(&[1]).unwrap();
    let (_, array, index, len, location) = launch_fault(k.launch(&dev, Grid::linear(1, 1), (&x, 5usize, &mut y)).unwrap_err());
    assert_eq!((array.as_str(), index, len), ("parameter `x`", 8, 8));
    assert!(location.unwrap().starts_with("oob.rs:3:"));
    assert_eq!(y.download().unwrap(), vec![0.0], "the faulting thread wrote nothing");
}

/// The numba-cuda pattern: a kernel reads a captured array that is also passed and written.
/// Safe launches refuse it (the code takes arrays as disjoint); the unsafe `launch_aliased`
/// compiles the kernel without that assumption, under its own key, and runs it.
#[test]
fn overlapping_arrays_run_only_through_the_unsafe_aliased_launch_compiled_without_noalias() {
    let dev = Device::host();
    let g = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let m = memory_jit()
        .load_source(
            "a.rs",
            "#[kernel] pub fn k(x: &[f32], y: &mut [f32]) { let i = global_id_x(); if i < y.len() { y[i] = G[i] * 10.0 + x[i]; } }",
        )
        .unwrap()
        .with_global("G", &g)
        .unwrap();
    let k = m.kernel("k").unwrap();
    let mut y = g.clone();
    let e = k.launch(&dev, Grid::linear(4, 4), (&g, &mut y)).unwrap_err();
    assert!(e.to_string().contains("must not overlap"), "{e}");
    assert_eq!(g.download().unwrap(), vec![1.0, 2.0, 3.0, 4.0], "nothing ran");
    // SAFETY: each thread reads and writes only element i, through every name.
    unsafe { k.launch_aliased(&dev, Grid::linear(4, 4), (&g, &mut y)).unwrap() };
    assert_eq!(g.download().unwrap(), vec![11.0, 22.0, 33.0, 44.0]);
    // Bounds are still checked.
    let short = dev.upload(&[0.0f32; 2]).unwrap();
    // SAFETY: as above; the launch faults before any race could matter.
    let e = unsafe { k.launch_aliased(&dev, Grid::linear(4, 4), (&short, &mut y)) }.unwrap_err();
    assert!(matches!(e, Error::Launch { .. }), "{e:?}");
    // Its own code: keyed apart, compiled without `noalias`, so no non-coherent loads on NVPTX.
    let spec = Specialization::uniform(k.program(), Layout::C);
    let target = Target::Nvptx(kache::Arch::parse("sm_90").unwrap());
    let (plain, aliased) = (k.compile(target, &spec).unwrap(), k.compile_aliased(target, &spec).unwrap());
    assert_ne!(plain.key(), aliased.key());
    assert!(aliased.may_alias() && !plain.may_alias() && aliased.is_checked());
    let ptx = |c: &kache::CompiledKernel| String::from_utf8(c.artifact().bytes().to_vec()).unwrap();
    assert!(ptx(&plain).contains("ld.global.nc"), "{}", ptx(&plain));
    assert!(!ptx(&aliased).contains("ld.global.nc"), "{}", ptx(&aliased));
    // A safe launch never takes the aliased code's overlap pass: compiled first, still refused.
    assert!(k.launch(&dev, Grid::linear(4, 4), (&g, &mut y)).is_err());
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub v: f32,
        pub n: u32,
    }
}

/// Arrays of structs are checked for overlap as arrays of scalars are: the one `StructArray`
/// passed as `&mut` and as `&` (arguments made one by one, as a `Vec<ArgValue>` allows), or twice
/// as `&mut`, is refused, since the code takes a read-only array as `noalias` (and on a GPU loads
/// it through the non-coherent cache). Before, a launch let them through. Separate arrays, and
/// one array passed twice read-only, run.
#[test]
fn struct_arrays_that_share_memory_where_one_is_written_are_refused() {
    use kache::KernelArg;
    let dev = Device::host();
    let decl = "#[derive(Clone, Copy)]\nstruct Pair { v: f32, n: u32 }\n";
    let k = kernel(&format!(
        "{decl}#[kernel] pub fn k(dst: &mut [Pair], src: &[Pair]) {{ let i = global_id_x(); if i < dst.len() {{ dst[i].v = src[i].v + 1.0; dst[i].n = src[i].n + 1; }} }}"
    ));
    let pairs = [Pair { v: 1.0, n: 1 }, Pair { v: 2.0, n: 2 }];
    let mut a = dev.upload_structs(&pairs).unwrap();
    let writable = &mut a;
    let written = writable.arg().unwrap();
    let read = (&a).arg().unwrap();
    let e = k.launch(&dev, Grid::linear(2, 2), vec![written.clone(), read]).unwrap_err();
    assert!(matches!(&e, Error::BadArgument { param, .. } if param == "src"), "{e:?}");
    assert!(e.to_string().contains("argument `src` shares memory with argument `dst`, and the kernel writes argument `dst`"), "{e}");
    assert_eq!(a.download().unwrap(), pairs, "nothing ran");
    let k2 = kernel(&format!("{decl}#[kernel] pub fn k(p: &mut [Pair], q: &mut [Pair]) {{ p[0].n = 5; q[0].n = 6; }}"));
    let e = k2.launch(&dev, Grid::linear(1, 1), vec![written.clone(), written]).unwrap_err();
    assert!(e.to_string().contains("the kernel writes both"), "{e}");
    assert_eq!(a.download().unwrap(), pairs, "nothing ran");
    // Separate arrays run; so does one array passed twice read-only.
    let b = dev.upload_structs(&pairs).unwrap();
    k.launch(&dev, Grid::linear(2, 2), (&mut a, &b)).unwrap();
    assert_eq!(a.download().unwrap(), vec![Pair { v: 2.0, n: 2 }, Pair { v: 3.0, n: 3 }]);
    let k3 = kernel(&format!("{decl}#[kernel] pub fn k(p: &[Pair], q: &[Pair], o: &mut [f32]) {{ o[0] = p[0].v + q[1].v; }}"));
    let mut o = dev.alloc::<f32>(&[1]).unwrap();
    k3.launch(&dev, Grid::linear(1, 1), (&b, &b, &mut o)).unwrap();
    assert_eq!(o.download().unwrap(), vec![3.0]);
}

/// A host kernel whose locals need more stack than a thread has by default runs, each thread
/// given the stack its code may use: six 64 KiB arrays kept alive across a `sync_threads` (the
/// block's threads are coroutines, on 256 KiB stacks before), forty in a kernel without one
/// (worker threads, on Rust's 2 MiB). Before, the frames ran past their stack's guard page into
/// the memory below it (the next coroutine's stack): this test died of SIGSEGV, and where
/// nothing faulted, other threads' memory was overwritten.
#[test]
fn host_threads_get_the_stack_their_locals_need() {
    let dev = Device::host();
    for (cooperative, arrays) in [(true, 6), (false, 40)] {
        let mut src = String::from("#[kernel] pub fn k(o: &mut [f32], m: usize) {\n    let i = thread_idx_x() as usize;\n");
        for a in 0..arrays {
            src += &format!("    let mut a{a} = [0.0f32; 16384];\n    a{a}[i] = {a}.0 + 1.0;\n");
        }
        if cooperative {
            src += "    sync_threads();\n";
        }
        src += "    let mut s = 0.0f32;\n";
        for a in 0..arrays {
            // `m` is 0, which the code cannot know: every array stays whole.
            src += &format!("    s += a{a}[i + m];\n");
        }
        src += "    if i < o.len() { o[i] = s; }\n}\n";
        let k = kernel(&src);
        let mut o = dev.alloc::<f32>(&[4]).unwrap();
        k.launch(&dev, Grid::linear(4, 4), (&mut o, 0usize)).unwrap();
        let want = (arrays * (arrays + 1) / 2) as f32;
        assert_eq!(o.download().unwrap(), vec![want; 4], "{arrays} arrays, cooperative: {cooperative}");
    }
}

/// `runtime::tune::select` saves the arrays a launch may write and puts them back before each
/// candidate; it never writes through an array whose description says read-only, whatever the
/// argument claims (`ArgValue`'s fields are public). Here the memory is truly read-only (a page
/// mapped without write permission, described honestly): before, restoring it wrote to it and
/// the process died of SIGSEGV.
#[test]
fn tuning_never_writes_through_a_read_only_array() {
    struct ReadOnlyPage(*mut libc::c_void);
    // SAFETY: the mapping is only read (or unmapped once, on drop); a pointer to it may move.
    unsafe impl Send for ReadOnlyPage {}
    // SAFETY: as above.
    unsafe impl Sync for ReadOnlyPage {}
    impl Drop for ReadOnlyPage {
        fn drop(&mut self) {
            // SAFETY: the page this mapped, unmapped once.
            unsafe { libc::munmap(self.0, 4096) };
        }
    }
    struct Frozen(Arc<ReadOnlyPage>);
    // SAFETY: 1024 f32 in a page mapped for reading only, alive while the owner is; read-only.
    unsafe impl kache::ArrayInterface for Frozen {
        fn data_ptr(&self) -> u64 {
            self.0.0 as u64
        }
        fn shape(&self) -> Vec<usize> {
            vec![1024]
        }
        fn strides(&self) -> Option<Vec<isize>> {
            None
        }
        fn elem(&self) -> kache::Scalar {
            kache::Scalar::F32
        }
        fn read_only(&self) -> bool {
            true
        }
        fn location(&self) -> kache::Location {
            kache::Location::HostMemory
        }
        fn owner(&self) -> kache::capture::Owner {
            self.0.clone()
        }
    }
    // SAFETY: a fresh anonymous mapping of one page, readable only.
    let page = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    assert_ne!(page, libc::MAP_FAILED);
    let frozen = Frozen(Arc::new(ReadOnlyPage(page)));
    let desc = kache::capture::ArrayDesc::from_interface(&frozen).unwrap();
    let ty = kache::ir::ArrayTy { elem: kache::ir::Elem::Scalar(kache::Scalar::F32), ndim: 1, writable: true };
    let sig = vec![("o".to_string(), kache::Ty::Array(ty))];
    let only = kache::TuneCandidate { index: 0, config: &[], description: "the only one" };
    let sel = kache::runtime::tune::select(
        "k",
        &Device::host(),
        &sig,
        &[ArgValue::Array { desc, writable: true }],
        &[only],
        &[None],
        &kache::DeviceTimer { warmup: 0, batches: 1 },
        &mut |_, _| {},
        &|_| Ok(()),
    )
    .unwrap();
    assert_eq!(sel.chosen, 0);
}
