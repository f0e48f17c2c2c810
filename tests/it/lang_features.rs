//! Tests: the language Rust users expect (traits, operator traits, generic structs, `Option`,
//! closures; docs/language.md) beyond what `rust_parity.rs` reads against rustc: what a
//! trait-heavy kernel compiles to, the cache keys of `impl` blocks, `unwrap` faults, and the
//! lang corpus assembled for every architecture.

use std::collections::BTreeMap;

use kache::{Arch, Device, Grid, Layout, Specialization, Target};

use super::common;

/// A mandelbrot through `impl Add` and `impl Mul` of a `Complex`, and the same arithmetic
/// written on its fields by hand.
const MANDELBROT: &str = r#"
use core::ops::{Add, Mul};

#[derive(Clone, Copy)]
struct Complex {
    re: f32,
    im: f32,
}

impl Add for Complex {
    type Output = Complex;
    fn add(self, o: Complex) -> Complex {
        Complex { re: self.re + o.re, im: self.im + o.im }
    }
}

impl Mul for Complex {
    type Output = Complex;
    fn mul(self, o: Complex) -> Complex {
        Complex { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
}

impl Complex {
    fn norm2(self) -> f32 {
        self.re * self.re + self.im * self.im
    }
}

#[kernel]
pub fn traits(x: &[f32], y: &[f32], out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        let c = Complex { re: x[i], im: y[i] };
        let mut z = Complex { re: 0.0, im: 0.0 };
        let mut n = 0u32;
        while n < 256 && z.norm2() <= 4.0 {
            z = z * z + c;
            n += 1;
        }
        out[i] = n;
    }
}

#[kernel]
pub fn by_hand(x: &[f32], y: &[f32], out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        let (cr, ci) = (x[i], y[i]);
        let (mut zr, mut zi) = (0.0f32, 0.0f32);
        let mut n = 0u32;
        while n < 256 && zr * zr + zi * zi <= 4.0 {
            let r = zr * zr - zi * zi;
            let m = zr * zi + zi * zr;
            zr = r + cr;
            zi = m + ci;
            n += 1;
        }
        out[i] = n;
    }
}
"#;

/// The instructions of a PTX entry by opcode (`fma.rn.f32`, `setp.le.f32`, ..), how many of each.
fn instruction_mix(ptx: &str) -> BTreeMap<String, usize> {
    let mut mix = BTreeMap::new();
    for line in ptx.lines().map(str::trim) {
        if line.is_empty()
            || line.starts_with("//")
            || line.starts_with('.')
            || line.ends_with(':')
            || line.starts_with('{')
            || line.starts_with('}')
            || line.starts_with(')')
        {
            continue;
        }
        // `@%p1 bra $L__BB0_2;`: the predicate is not the opcode.
        let op = line.split_whitespace().find(|w| !w.starts_with('@')).unwrap_or("").trim_end_matches(';');
        if !op.is_empty() && op.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            *mix.entry(op.to_string()).or_default() += 1;
        }
    }
    mix
}

fn ptx_of(m: &kache::Module, name: &str, arch: &str) -> String {
    let k = m.kernel(name).unwrap();
    let target = Target::Nvptx(Arch::parse(arch).unwrap());
    let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).unwrap_or_else(|e| panic!("{name}: {e}"));
    c.ptx().unwrap().to_owned()
}

#[test]
fn operator_traits_compile_to_the_instruction_mix_of_the_hand_inlined_kernel() {
    let jit = common::memory_jit();
    let m = jit.load_source("mandelbrot.rs", MANDELBROT).unwrap_or_else(|e| panic!("{e}"));
    for arch in ["sm_70", "sm_90"] {
        let traits = instruction_mix(&ptx_of(&m, "traits", arch));
        let by_hand = instruction_mix(&ptx_of(&m, "by_hand", arch));
        assert!(traits.keys().any(|k| k.starts_with("fma") || k.starts_with("mul")), "{arch}: no arithmetic found in {traits:?}");
        assert_eq!(traits, by_hand, "{arch}: the trait kernel's instructions differ from the hand-inlined one's");
    }
    // And they compute the same.
    let dev = Device::host();
    let n = 96;
    let x: Vec<f32> = (0..n).map(|i| (i % 12) as f32 * 0.25 - 2.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i / 12) as f32 * 0.125 - 0.5).collect();
    let (xd, yd) = (dev.upload(&x).unwrap(), dev.upload(&y).unwrap());
    let mut a = dev.alloc::<u32>(&[n]).unwrap();
    let mut b = dev.alloc::<u32>(&[n]).unwrap();
    m.kernel("traits").unwrap().launch(&dev, Grid::linear(n, 32), (&xd, &yd, &mut a)).unwrap();
    m.kernel("by_hand").unwrap().launch(&dev, Grid::linear(n, 32), (&xd, &yd, &mut b)).unwrap();
    assert_eq!(a.download().unwrap(), b.download().unwrap());
}

const IMPLS: &str = r#"
use std::ops::Add;

trait Shape {
    fn area(&self) -> f32;
    fn twice(&self) -> f32 {
        2.0 * self.area()
    }
}

#[derive(Clone, Copy)]
struct Square {
    side: f32,
}

#[derive(Clone, Copy)]
struct Circle {
    r: f32,
}

impl Shape for Square {
    fn area(&self) -> f32 {
        self.side * self.side
    }
}

impl Shape for Circle {
    fn area(&self) -> f32 {
        3.0 * self.r * self.r
    }
}

impl Add for Square {
    type Output = Square;
    fn add(self, o: Square) -> Square {
        Square { side: self.side + o.side }
    }
}

fn measure<S: Shape>(s: S) -> f32 {
    s.twice()
}

#[kernel]
pub fn k(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let s = Square { side: x[i] } + Square { side: 1.0 };
        out[i] = measure(s);
    }
}
"#;

fn key_of(src: &str) -> kache::cache::Key {
    let jit = common::memory_jit();
    let k = jit.load_source("impls.rs", src).unwrap_or_else(|e| panic!("{e}")).kernel("k").unwrap();
    k.explain(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap().key
}

#[test]
fn an_impl_a_kernel_uses_is_keyed_and_an_unused_one_is_not() {
    let base = key_of(IMPLS);
    let same = [
        ("the unused impl's body edited", IMPLS.replace("3.0 * self.r * self.r", "3.25 * self.r")),
        (
            "the unused impl removed",
            IMPLS.replace("impl Shape for Circle {\n    fn area(&self) -> f32 {\n        3.0 * self.r * self.r\n    }\n}", ""),
        ),
        (
            "the impls reformatted",
            IMPLS
                .replace("fn area(&self) -> f32 {\n        self.side * self.side\n    }", "fn area(&self)->f32{ self.side*self.side }")
                .replace("    fn add(", "\n\n    fn add("),
        ),
        ("a comment added", IMPLS.replace("impl Add for Square {", "// adds sides\nimpl Add for Square {")),
    ];
    for (what, src) in same {
        assert_ne!(src, IMPLS, "{what}: the edit did not apply");
        assert_eq!(key_of(&src), base, "{what} changed the key");
    }
    let miss = [
        ("the used impl's body edited", IMPLS.replace("self.side * self.side", "self.side * self.side + 1.0")),
        ("the operator impl edited", IMPLS.replace("self.side + o.side", "self.side - o.side")),
        ("the default method edited", IMPLS.replace("2.0 * self.area()", "4.0 * self.area()")),
        (
            "the default method overridden",
            IMPLS.replace(
                "impl Shape for Square {\n",
                "impl Shape for Square {\n    fn twice(&self) -> f32 {\n        self.area() + self.area()\n    }\n",
            ),
        ),
    ];
    for (what, src) in miss {
        assert_ne!(src, IMPLS, "{what}: the edit did not apply");
        assert_ne!(key_of(&src), base, "{what} kept the key");
    }
}

const UNWRAP: &str = "fn half(v: i32) -> Option<i32> {\n    if v % 2 == 0 { Some(v / 2) } else { None }\n}\n\n#[kernel]\npub fn halves(x: &[i32], out: &mut [i32]) {\n    let i = global_id_x();\n    if i < out.len() {\n        out[i] = half(x[i]).unwrap() + half(x[i] + 2).expect(\"even\");\n    }\n}\n";

#[test]
fn unwrap_and_expect_of_none_are_faults_of_the_launch_at_the_call() {
    let jit = common::memory_jit();
    let k = jit.load_source("halves.rs", UNWRAP).unwrap_or_else(|e| panic!("{e}")).kernel("halves").unwrap();
    let dev = Device::host();
    let even: Vec<i32> = (0..64).map(|i| 2 * i).collect();
    let mut out = dev.alloc::<i32>(&[64]).unwrap();
    k.launch(&dev, Grid::linear(64, 32), (&dev.upload(&even).unwrap(), &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), (0..64).map(|i| 2 * i + 1).collect::<Vec<_>>());
    let mut odd = even.clone();
    odd[37] = 7;
    let err = k.launch(&dev, Grid::linear(64, 32), (&dev.upload(&odd).unwrap(), &mut out)).unwrap_err();
    match &err {
        kache::Error::Panic { kernel, message, location } => {
            assert_eq!((kernel.as_str(), message.as_str()), ("halves", "called `Option::unwrap()` on a `None` value"));
            assert_eq!(location.as_deref(), Some("halves.rs:9:29"));
        }
        other => panic!("expected a panic fault, got {other:?}"),
    }
    assert_eq!(err.to_string(), "kernel `halves`: called `Option::unwrap()` on a `None` value, at halves.rs:9:29");
    // The other threads ran: thread 36 wrote its sum.
    assert_eq!(out.download().unwrap()[36], 73);
    // `expect`'s message: `half(x + 2)` is `None` for odd `x`, after `half(x)` succeeded.
    let src = UNWRAP.replace("half(x[i]).unwrap() + ", "");
    let k = jit.load_source("expect.rs", &src).unwrap_or_else(|e| panic!("{e}")).kernel("halves").unwrap();
    let err = k.launch(&dev, Grid::linear(64, 32), (&dev.upload(&odd).unwrap(), &mut out)).unwrap_err();
    // Located at the method's name, as Rust locates it, not at the message.
    assert!(
        matches!(&err, kache::Error::Panic { message, location, .. } if message == "even" && location.as_deref() == Some("expect.rs:9:33")),
        "{err:?}"
    );
}

/// Every kernel of the language corpus compiles for every architecture, and ptxas accepts it.
const LANG_FILES: &[&str] = &[
    "lang_traits.rs",
    "lang_ops.rs",
    "lang_option.rs",
    "lang_closures.rs",
    "lang_generic_structs.rs",
    "lang_refs_iter.rs",
    "lang_mixed.rs",
    "lang_porting.rs",
];

#[test]
fn the_language_corpus_assembles_for_sm_70_80_and_90() {
    let ptxas = common::ptxas();
    let jit = common::memory_jit();
    let mut failures = Vec::new();
    for file in LANG_FILES {
        let m = jit.load_file(common::fixture(&format!("kernels/{file}"))).unwrap_or_else(|e| panic!("{file}: {e}"));
        for k in m.kernel_names() {
            for arch in ["sm_70", "sm_80", "sm_90"] {
                let ptx = ptx_of(&m, &k, arch);
                if let Some(p) = &ptxas
                    && let Err(e) = kache::toolchain::ptxas(p, &ptx, arch)
                {
                    failures.push(format!("{file}::{k} ({arch}): {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
