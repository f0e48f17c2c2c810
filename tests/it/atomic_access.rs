//! Tests: `atomic_load` and `atomic_store`. The PTX of a spin on a flag keeps its load inside
//! the loop (a plain load is read at most once, outside any loop) and every load
//! and store is `volatile` on global and shared memory for sm_70, sm_80 and sm_90, accepted by
//! ptxas; their elements are bounds-checked; and an array a kernel writes only through atomics
//! counts as written when a launch checks its arguments for overlap. Their semantics on the
//! host backend are the `atomic_load_store` scenario (`tests/shared/scenarios/warp.rs`).
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use kache::{Arch, Device, Error, Grid, Layout, Specialization, Target};

use crate::common;

/// Whether some line containing `needle` lies inside a loop: after a label and before a branch
/// back to that label.
fn inside_a_loop(ptx: &str, needle: &str) -> bool {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    lines.iter().enumerate().filter(|(_, l)| l.contains(needle)).any(|(at, _)| {
        lines[..at]
            .iter()
            .filter_map(|l| l.strip_suffix(':'))
            .filter(|l| l.starts_with("$L__"))
            .any(|label| lines[at + 1..].iter().any(|l| l.contains("bra") && l.split_whitespace().last() == Some(&format!("{label};"))))
    })
}

fn nvptx(k: &kache::Kernel, arch: &str, checked: bool) -> String {
    let target = Target::Nvptx(Arch::parse(arch).unwrap());
    let spec = Specialization::uniform(k.program(), Layout::C);
    let c = if checked { k.compile(target, &spec).unwrap() } else { k.compile_unchecked(target, &spec).unwrap() };
    c.ptx().unwrap().to_string()
}

#[test]
fn a_spin_on_an_atomic_load_keeps_the_load_in_the_loop_and_every_access_is_volatile() {
    let jit = common::memory_jit();
    let m = jit.load_file(common::fixture("kernels").join("atomic_load_store.rs")).unwrap();
    let (chained, pass_right) = (m.kernel("chained_totals").unwrap(), m.kernel("pass_right").unwrap());
    let ptxas = common::ptxas();
    for arch in ["sm_70", "sm_80", "sm_90"] {
        for checked in [true, false] {
            let what = format!("{arch}, checked {checked}");
            let ptx = nvptx(&chained, arch, checked);
            // The flag is a u32, the running totals u64.
            assert!(inside_a_loop(&ptx, "ld.volatile.global.u32"), "{what}: the flag's load left the spin loop:\n{ptx}");
            for want in ["ld.volatile.global.u64", "st.volatile.global.u64", "st.volatile.global.u32", "membar.gl"] {
                assert!(ptx.contains(want), "{what}: no `{want}` in\n{ptx}");
            }
            let ptx2 = nvptx(&pass_right, arch, checked);
            for want in [
                "st.volatile.global.u32",
                "st.volatile.global.u64",
                "st.volatile.global.f32",
                "st.volatile.global.f64",
                "ld.volatile.global.u32",
                "ld.volatile.global.u64",
                "ld.volatile.global.f32",
                "ld.volatile.global.f64",
                "st.volatile.shared.u64",
                "st.volatile.shared.f32",
                "ld.volatile.shared.u64",
                "ld.volatile.shared.f32",
            ] {
                assert!(ptx2.contains(want), "{what}: no `{want}` in\n{ptx2}");
            }
            if let Some(p) = &ptxas {
                for text in [&ptx, &ptx2] {
                    kache::toolchain::ptxas(p, text, arch).unwrap_or_else(|e| panic!("ptxas {what}: {e}"));
                }
            }
        }
    }
    // The same spin with a plain load: LLVM reads the flag at most once, outside any loop (with
    // `mustprogress` it drops this loop altogether).
    let plain = jit
        .load_source("plain_spin.rs", "#[kernel] pub fn k(ready: &mut [u32], out: &mut [u32]) { while ready[0] == 0 {} out[0] = 1; }")
        .unwrap()
        .kernel("k")
        .unwrap();
    let ptx = nvptx(&plain, "sm_90", false);
    assert!(!inside_a_loop(&ptx, "ld.global.u32"), "a plain load stayed in the loop:\n{ptx}");
    // What the check sees.
    let looped = "$L__BB0_1:\n\tld.volatile.global.u32 \t%r1, [%rd1];\n\tsetp.eq.s32 \t%p1, %r1, 0;\n\t@%p1 bra \t$L__BB0_1;";
    let hoisted = "\tld.global.u32 \t%r1, [%rd1];\n$L__BB0_1:\n\t@%p1 bra \t$L__BB0_1;\n$L__BB0_2:\n\tld.global.u32 \t%r2, [%rd1];";
    assert!(inside_a_loop(looped, "ld.volatile.global.u32") && !inside_a_loop(hoisted, "ld.global.u32"));
}

#[test]
fn atomic_loads_and_stores_are_bounds_checked() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let m = jit
        .load_source(
            "oob_atomics.rs",
            "#[kernel] pub fn load(h: &mut [u32], o: &mut [u32]) { let i = global_id_x(); o[i] = atomic_load(&h[i]) + 1; }\n\
             #[kernel] pub fn store(h: &mut [u64]) { atomic_store(&mut h[global_id_x()], 9); }",
        )
        .unwrap();
    let mut h = dev.upload(&[1u32, 2, 3, 4]).unwrap();
    let mut o = dev.alloc::<u32>(&[8]).unwrap();
    match m.kernel("load").unwrap().launch(&dev, Grid::linear(8, 8), (&mut h, &mut o)).unwrap_err() {
        Error::Launch { array, len, location, .. } => {
            assert_eq!((array.as_str(), len), ("parameter `h`", 4));
            assert_eq!(location.as_deref(), Some("oob_atomics.rs:1:98"));
        }
        e => panic!("expected a launch fault, got {e}"),
    }
    assert_eq!(&o.download().unwrap()[..4], &[2, 3, 4, 5], "the threads in bounds ran");
    let mut h = dev.alloc::<u64>(&[3]).unwrap();
    match m.kernel("store").unwrap().launch(&dev, Grid::linear(5, 8), (&mut h,)).unwrap_err() {
        Error::Launch { array, index, len, .. } => assert_eq!((array.as_str(), len), ("parameter `h`", 3), "index {index}"),
        e => panic!("expected a launch fault, got {e}"),
    }
    assert_eq!(h.download().unwrap(), vec![9; 3]);
}

/// A captured array the kernel writes only through `atomic_store` (or another atomic but a
/// load) is written: a launch refuses it as an argument beside it. One it only reads with
/// `atomic_load` is not written.
#[test]
fn a_capture_written_only_by_atomics_is_written_and_one_only_loaded_is_not() {
    let dev = Device::host();
    let g = dev.upload(&[1u32, 2]).unwrap();
    for body in ["atomic_store(&mut G[0], x[1]);", "atomic_sub(&mut G[0], x[1]);", "atomic_exch(&mut G[0], x[1]);"] {
        let src = format!("#[kernel] pub fn k(x: &[u32]) {{ {body} }}");
        let m = common::memory_jit().load_source("w.rs", &src).unwrap().with_global("G", &g).unwrap();
        let e = m.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&g,)).unwrap_err();
        assert!(e.to_string().contains("and the kernel writes captured array global 'G'"), "{body}: {e}");
    }
    let src = "#[kernel] pub fn k(x: &[u32], o: &mut [u32]) { o[0] = atomic_load(&G[1]) + x[0]; }";
    let m = common::memory_jit().load_source("r.rs", src).unwrap().with_global("G", &g).unwrap();
    let mut o = dev.alloc::<u32>(&[1]).unwrap();
    m.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&g, &mut o)).unwrap();
    assert_eq!(o.download().unwrap(), vec![3]);
}

/// In a generic device function the element type is checked per instance: `u32` and `f64`
/// compile and run, `u8` is an error at the element.
#[test]
fn a_generic_atomic_load_is_checked_per_instance() {
    let dev = Device::host();
    let good = "fn peek<T: Num>(a: &mut [T], i: usize) -> T { atomic_load(&a[i]) }\n\
                #[kernel] pub fn k(a: &mut [u32], b: &mut [f64]) { let i = global_id_x(); a[i + 2] = peek(a, i); b[i + 2] = peek(b, i); }";
    let k = common::memory_jit().load_source("peek.rs", good).unwrap().kernel("k").unwrap();
    let mut a = dev.upload(&[7u32, 8, 0, 0]).unwrap();
    let mut b = dev.upload(&[0.5f64, -2.0, 0.0, 0.0]).unwrap();
    k.launch(&dev, Grid::linear(2, 2), (&mut a, &mut b)).unwrap();
    assert_eq!((a.download().unwrap(), b.download().unwrap()), (vec![7, 8, 7, 8], vec![0.5, -2.0, 0.5, -2.0]));
    let bad = "fn peek<T: Num>(a: &mut [T], i: usize) -> T { atomic_load(&a[i]) }\n\
               #[kernel] pub fn k(a: &mut [u8]) { a[1] = peek(a, 0); }";
    let e = common::memory_jit().load_source("peek_u8.rs", bad).and_then(|m| m.kernel("k").map(|_| ())).unwrap_err().to_string();
    assert_eq!(e, "peek_u8.rs:1:60: `atomic_load` takes 32- and 64-bit elements, not `u8`");
}
