//! Tests: tuples, fixed-size local arrays and structs in kernels: their values on the host
//! backend against Rust, places and methods, the located errors for their misuse (snapshots),
//! and their PTX accepted by ptxas.

use kache::{Config, Device, Grid, Jit};

fn jit() -> Jit {
    Jit::new(Config::in_memory()).unwrap()
}

const VALUES: &str = r#"
fn argmin(x: &[f32]) -> (usize, f32) {
    let mut best = (0, x[0]);
    for i in 1..x.len() {
        if x[i] < best.1 {
            best = (i, x[i]);
        }
    }
    best
}

fn swap(p: (u32, u32)) -> (u32, u32) {
    let (a, b) = p;
    (b, a)
}

fn rev3(a: [i32; 3]) -> [i32; 3] {
    [a[2], a[1], a[0]]
}

#[kernel]
pub fn tuples(x: &[f32], out: &mut [f32], idx: &mut [u32]) {
    if global_id_x() == 0 {
        let (i, v) = argmin(x);
        out[0] = v;
        idx[0] = i as u32;
        let ((a, _), (c, d)) = ((1u32, 2u32), swap((3, 4)));
        idx[1] = a * 100 + c * 10 + d;
        let mut t: (f32, (u8, bool)) = (0.5, (7, true));
        t.1.0 += 1;
        t.0 *= 4.0;
        out[1] = t.0 + t.1.0 as f32 + if t.1.1 { 1000.0 } else { 0.0 };
        let (s, co) = 0.5f32.sin_cos();
        out[2] = s;
        out[3] = co;
    }
}

#[kernel]
pub fn arrays(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut w = [0i32; 5];
        for k in 0..5 {
            w[k] = x[(i + k) % x.len()];
        }
        let m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]];
        let mut acc = 0;
        for row in m {
            for v in row {
                acc += v;
            }
        }
        let r = rev3([w[0], w[1], w[2]]);
        let mut s = 0;
        for v in w {
            s += v;
        }
        let j = (i % 7) as usize;
        out[i] = s * 1000 + acc + r[0] * 100000 + w[j] * 0 + w.len() as i32 + m[1][2] * 10;
    }
}
"#;

#[test]
fn tuples_and_local_arrays_compute_as_rust_does() {
    let jit = jit();
    let dev = Device::host();
    let m = jit.load_source("values.rs", VALUES).unwrap_or_else(|e| panic!("{e}"));
    let x = dev.upload(&[3.0f32, -1.5, 2.0, -7.25, 9.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[4]).unwrap();
    let mut idx = dev.alloc::<u32>(&[2]).unwrap();
    m.kernel("tuples").unwrap().launch(&dev, Grid::linear(1, 32), (&x, &mut out, &mut idx)).unwrap();
    let o = out.download().unwrap();
    let (s, c) = 0.5f32.sin_cos();
    assert_eq!(o, vec![-7.25, 2.0 + 8.0 + 1000.0, s, c]);
    assert_eq!(idx.download().unwrap(), vec![3, 100 + 40 + 3]);

    let xs: Vec<i32> = (1..=9).map(|v| v * 3 - 7).collect();
    let x = dev.upload(&xs).unwrap();
    let mut out = dev.alloc::<i32>(&[9]).unwrap();
    m.kernel("arrays").unwrap().launch(&dev, Grid::linear(9, 4), (&x, &mut out)).unwrap();
    let want: Vec<i32> = (0..9)
        .map(|i| {
            let w: Vec<i32> = (0..5).map(|k| xs[(i + k) % xs.len()]).collect();
            let s: i32 = w.iter().sum();
            s * 1000 + 45 + w[2] * 100000 + 5 + 60
        })
        .collect();
    assert_eq!(out.download().unwrap(), want);
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Mixed {
        pub flag: bool,
        pub x: f64,
        pub tag: u16,
        pub inner: Inner,
    }
}

kache::plain_struct! {
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Inner {
        pub a: u8,
        pub b: [i32; 2],
    }
}

kache::plain_struct! {
    /// The same fields as `Mixed`, in another order: its offsets differ.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Reordered {
        pub x: f64,
        pub flag: bool,
        pub tag: u16,
        pub inner: Inner,
    }
}

kache::plain_struct! {
    /// `Mixed` with `tag` as a `u32`: same field names, another type.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct WrongType {
        pub flag: bool,
        pub x: f64,
        pub tag: u32,
        pub inner: Inner,
    }
}

const MIXED: &str = r#"
#[derive(Clone, Copy)]
struct Inner { a: u8, b: [i32; 2] }

#[derive(Clone, Copy)]
struct Mixed { flag: bool, x: f64, tag: u16, inner: Inner }

impl Mixed {
    fn bump(&mut self, by: f64) {
        self.x += by;
        self.tag += 1;
        self.flag = !self.flag;
        self.inner.b[1] -= self.inner.a as i32;
    }
}

#[kernel]
pub fn bump_all(ms: &mut [Mixed], by: Mixed) {
    let i = global_id_x();
    if i < ms.len() {
        ms[i].bump(by.x);
        ms[i].inner.b[0] += by.inner.b[0];
    }
}
"#;

fn mixed(i: usize) -> Mixed {
    Mixed { flag: i.is_multiple_of(2), x: i as f64 * 1.5, tag: 100 + i as u16, inner: Inner { a: i as u8 * 3, b: [i as i32, -(i as i32)] } }
}

#[test]
fn struct_arrays_and_struct_values_cross_with_c_layout() {
    let jit = jit();
    let dev = Device::host();
    let k = jit.load_source("mixed.rs", MIXED).unwrap_or_else(|e| panic!("{e}")).kernel("bump_all").unwrap();
    assert_eq!(format!("{k:?}"), "Kernel(bump_all(ms: &mut [Mixed], by: Mixed))");
    let host: Vec<Mixed> = (0..37).map(mixed).collect();
    let mut ms = dev.upload_structs(&host).unwrap();
    let by = Mixed { flag: false, x: 0.25, tag: 0, inner: Inner { a: 0, b: [1000, 0] } };
    k.launch(&dev, Grid::linear(host.len(), 16), (&mut ms, kache::ByValue(by))).unwrap();
    let want: Vec<Mixed> = host
        .iter()
        .map(|m| {
            let mut m = *m;
            m.x += 0.25;
            m.tag += 1;
            m.flag = !m.flag;
            m.inner.b[1] -= m.inner.a as i32;
            m.inner.b[0] += 1000;
            m
        })
        .collect();
    assert_eq!(ms.download().unwrap(), want);
}

#[test]
fn a_host_struct_laid_out_otherwise_is_refused_before_launch() {
    let jit = jit();
    let dev = Device::host();
    let k = jit.load_source("mixed.rs", MIXED).unwrap_or_else(|e| panic!("{e}")).kernel("bump_all").unwrap();
    let by = kache::ByValue(mixed(0));
    let fail = |e: kache::Error, needle: &str| {
        let text = e.to_string();
        assert!(matches!(e, kache::Error::BadArgument { .. }), "{text}");
        assert!(text.contains(needle), "`{needle}` not in: {text}");
    };

    let reordered: Vec<Reordered> =
        (0..4).map(|i| Reordered { x: i as f64, flag: true, tag: 1, inner: Inner { a: 1, b: [i, 2] } }).collect();
    let mut r = dev.upload_structs(&reordered).unwrap();
    fail(
        k.launch(&dev, Grid::linear(4, 4), (&mut r, by)).unwrap_err(),
        "`Reordered` is 24 bytes aligned to 8 on the host, the kernel's `Mixed` is 32 bytes aligned to 8",
    );
    assert_eq!(r.download().unwrap(), reordered, "a refused launch wrote the array");

    let mut w = dev.upload_structs(&[WrongType { flag: true, x: 0.0, tag: 7, inner: Inner { a: 0, b: [0, 0] } }]).unwrap();
    fail(
        k.launch(&dev, Grid::linear(1, 4), (&mut w, by)).unwrap_err(),
        "field `WrongType.tag` is `u16` in the kernel and `u32` on the host",
    );

    let mut ok = dev.upload_structs(&[mixed(1)]).unwrap();
    let ro = dev.upload_structs(&[mixed(1)]).unwrap();
    fail(k.launch(&dev, Grid::linear(1, 4), (&ro, by)).unwrap_err(), "pass it as `&mut`");
    let mut floats = dev.upload(&[1.0f32, 2.0]).unwrap();
    fail(k.launch(&dev, Grid::linear(1, 4), (&mut floats, by)).unwrap_err(), "upload the structs with `Device::upload_structs`");
    fail(k.launch(&dev, Grid::linear(1, 4), (&mut ok, 1.0f64)).unwrap_err(), "kache::ByValue");
    let bad_value = kache::ByValue(Reordered { x: 0.0, flag: true, tag: 1, inner: Inner { a: 1, b: [0, 2] } });
    fail(k.launch(&dev, Grid::linear(1, 4), (&mut ok, bad_value)).unwrap_err(), "the struct layouts differ");
    assert_eq!(ok.download().unwrap(), vec![mixed(1)]);
}

#[test]
fn the_host_layout_is_what_rustc_lays_out() {
    use kache::PlainStruct;
    let l = Mixed::layout();
    assert_eq!((l.size, l.align), (std::mem::size_of::<Mixed>(), std::mem::align_of::<Mixed>()));
    let offsets: Vec<usize> = l.fields.iter().map(|f| f.offset).collect();
    assert_eq!(offsets, vec![0, 8, 16, 20]);
    assert_eq!(l.fields[3].kind, kache::FieldKind::Struct(Inner::layout()));
    assert_eq!(Inner::layout().fields[1].kind, kache::FieldKind::Array(Box::new(kache::FieldKind::Scalar(kache::Scalar::I32)), 2));
}

kache::plain_struct! {
    /// The host's counterpart of the kernel's tuple `(f32, u8)`: a struct with the same
    /// element types in the same order.
    #[derive(Clone, Copy, Debug)]
    pub struct PairF32U8 {
        pub x: f32,
        pub tag: u8,
    }
}

const BY_VALUE: &str = r#"
#[kernel]
pub fn by_value(p: (f32, u8), w: [i32; 3], m: [[f32; 2]; 2], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let (x, tag) = p;
        out[i] = x * tag as f32 + (w[i % 3] as f32) + m[1][0];
    }
}
"#;

#[test]
fn tuples_and_fixed_size_arrays_pass_by_value() {
    let jit = jit();
    let dev = Device::host();
    let k = jit.load_source("by_value.rs", BY_VALUE).unwrap_or_else(|e| panic!("{e}")).kernel("by_value").unwrap();
    let mut out = dev.alloc::<f32>(&[6]).unwrap();
    let p = kache::ByValue(PairF32U8 { x: 1.5, tag: 4 });
    let w = kache::ByValue([10i32, 20, 30]);
    let m = kache::ByValue([[0.0f32, 0.0], [0.25, 0.0]]);
    k.launch(&dev, Grid::linear(6, 4), (p, w, m, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![16.25, 26.25, 36.25, 16.25, 26.25, 36.25]);

    let short = kache::ByValue([10i32, 20]);
    let e = k.launch(&dev, Grid::linear(6, 4), (p, short, m, &mut out)).unwrap_err();
    assert!(e.to_string().contains("argument `w`") && e.to_string().contains("an array of 2"), "{e}");
    let e = k.launch(&dev, Grid::linear(6, 4), (1.5f32, w, m, &mut out)).unwrap_err();
    assert!(e.to_string().contains("argument `p`") && e.to_string().contains("kache::ByValue"), "{e}");
}

#[test]
fn aggregate_kernels_assemble_for_sm_70_80_and_90() {
    use kache::{Arch, Layout, Specialization, Target};
    let ptxas = crate::common::ptxas();
    let jit = jit();
    let mut count = 0;
    for (file, src) in [("values.rs", VALUES), ("mixed.rs", MIXED), ("by_value.rs", BY_VALUE)] {
        let m = jit.load_source(file, src).unwrap_or_else(|e| panic!("{e}"));
        for name in m.kernel_names() {
            let k = m.kernel(&name).unwrap();
            for arch in ["sm_70", "sm_80", "sm_90"] {
                let c = k
                    .compile(Target::Nvptx(Arch::parse(arch).unwrap()), &Specialization::uniform(k.program(), Layout::C))
                    .unwrap_or_else(|e| panic!("{file} {name} {arch}: {e}"));
                let ptx = c.ptx().unwrap();
                assert!(ptx.contains(&format!(".entry {name}")), "{file} {name}: no entry");
                if let Some(p) = &ptxas
                    && let Err(e) = kache::toolchain::ptxas(p, ptx, arch)
                {
                    panic!("ptxas rejected {file} {name} for {arch}:\n{e}");
                }
                count += 1;
            }
        }
    }
    assert_eq!(count, 12);
}

const KEYED: &str = r#"
#[derive(Clone, Copy)]
struct Body { pos: [f32; 2], mass: f32 }

#[derive(Clone, Copy)]
struct Unused { a: u8 }

impl Body {
    fn weight(&self) -> f32 { self.mass * 9.75 }
}

#[kernel]
pub fn weigh(bs: &[Body], out: &mut [f32]) {
    let i = global_id_x();
    if i < bs.len() {
        let (w, p): (f32, [f32; 2]) = (bs[i].weight(), bs[i].pos);
        out[i] = w + p[0];
    }
}
"#;

fn key_of(src: &str) -> kache::cache::Key {
    use kache::{Arch, Layout, Specialization, Target};
    let jit = jit();
    let k = jit.load_source("keyed.rs", src).unwrap_or_else(|e| panic!("{e}")).kernel("weigh").unwrap();
    k.explain(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap().key
}

#[test]
fn struct_and_tuple_code_is_keyed_by_content() {
    let base = key_of(KEYED);
    assert_eq!(key_of(KEYED), base);
    assert_eq!(
        key_of(&KEYED.replace("struct Unused { a: u8 }", "struct Unused { a: u16, b: f64 }")),
        base,
        "an unreached struct keeps the key"
    );
    assert_eq!(key_of(&KEYED.replace("Body", "Planet")), base, "a struct renamed gives the same code");
    for (what, from, to) in [
        ("a new field", "mass: f32 }", "mass: f32, tag: u8 }"),
        ("the field order", "struct Body { pos: [f32; 2], mass: f32 }", "struct Body { mass: f32, pos: [f32; 2] }"),
        ("an array length", "[f32; 2]", "[f32; 3]"),
        ("a method's body", "self.mass * 9.75", "self.mass * 9.5"),
        ("a tuple element read", "out[i] = w + p[0];", "out[i] = w + p[1];"),
    ] {
        let edited = KEYED.replace(from, to);
        assert_ne!(key_of(&edited), base, "changing {what} keeps the key");
    }
}

const INFERRED_LENGTHS: &str = r#"
fn total<T: Num, const N: usize>(a: [T; N]) -> T {
    let mut s = T::ZERO;
    for v in a {
        s += v;
    }
    s
}

fn pad<const N: usize>(a: [i32; N], v: i32) -> [i32; 4] {
    let mut out = [v; 4];
    for k in 0..N {
        out[k] = a[k];
    }
    out
}

#[kernel]
pub fn sums(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let three = [x[i], 10, 100];
        let p = pad([x[i], 1], -1);
        out[i] = total(three) + total([1000, 2000]) * 2 + total::<i32, 1>([5]) + total(p) * 100000;
    }
}
"#;

#[test]
fn const_parameters_are_inferred_from_array_lengths() {
    let jit = jit();
    let dev = Device::host();
    let k = jit.load_source("inferred.rs", INFERRED_LENGTHS).unwrap_or_else(|e| panic!("{e}")).kernel("sums").unwrap();
    let x: Vec<i32> = vec![3, -4, 7];
    let mut out = dev.alloc::<i32>(&[3]).unwrap();
    k.launch(&dev, Grid::linear(3, 4), (&dev.upload(&x).unwrap(), &mut out)).unwrap();
    let want: Vec<i32> = x.iter().map(|v| (v + 110) + 6000 + 5 + (v + 1 - 2) * 100000).collect();
    assert_eq!(out.download().unwrap(), want);
}

const TUPLE_GENERICS: &str = r#"
fn swap<A: Num, B: Num>(p: (A, B)) -> (B, A) {
    (p.1, p.0)
}

fn pair_sum<T: Num>(p: (T, T), q: [T; 2]) -> T {
    p.0 + p.1 + q[0] + q[1]
}

#[kernel]
pub fn k(x: &[f32], n: &[u8], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let (a, b) = swap((x[i], n[i]));
        out[i] = pair_sum((b, a as f32), [1.0, 2.0]);
    }
}
"#;

#[test]
fn type_parameters_are_inferred_through_tuples_and_arrays() {
    let jit = jit();
    let dev = Device::host();
    let k = jit.load_source("tuple_generics.rs", TUPLE_GENERICS).unwrap_or_else(|e| panic!("{e}")).kernel("k").unwrap();
    let (x, n) = (vec![0.5f32, -2.0, 8.25], vec![3u8, 200, 0]);
    let mut out = dev.alloc::<f32>(&[3]).unwrap();
    k.launch(&dev, Grid::linear(3, 4), (&dev.upload(&x).unwrap(), &dev.upload(&n).unwrap(), &mut out)).unwrap();
    let want: Vec<f32> = x.iter().zip(&n).map(|(x, n)| x + *n as f32 + 3.0).collect();
    assert_eq!(out.download().unwrap(), want);
    let bad = TUPLE_GENERICS.replace("(b, a as f32)", "(b as f32, a)");
    let e = jit.load_source("tuple_generics_bad.rs", &bad).and_then(|m| m.kernel("k").map(|_| ())).unwrap_err();
    assert!(e.to_string().contains("expected `(f32, f32)`, found `(f32, u8)`"), "{e}");
}

/// A long array of zeros (`[0.0; 256]`, as an accumulator starts) whose elements are indexed by
/// constants lives in registers: no local memory in its PTX, and on the host the sums it
/// keeps are right.
#[test]
fn a_long_array_of_zeros_indexed_by_constants_lives_in_registers() {
    use kache::{Arch, Layout, Specialization, Target};
    let src = r#"
#[kernel]
pub fn wide_acc(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    let mut acc = [0.0f32; 256];
    let mut k = 0;
    while k < x.len() {
        acc[0] += x[k];
        acc[255] += 2.0 * x[k];
        k += 1;
    }
    if i < out.len() {
        out[i] = acc[0] + acc[255] + acc[100];
    }
}
"#;
    let m = jit().load_source("zeros.rs", src).unwrap();
    let k = m.kernel("wide_acc").unwrap();
    let c = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap();
    let ptx = c.ptx().unwrap();
    assert!(!ptx.contains(".local"), "the array is in local memory:\n{ptx}");
    let dev = Device::host();
    let x = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut out = dev.alloc::<f32>(&[4]).unwrap();
    k.launch(&dev, Grid::new(1u32, 4u32), (&x, &mut out)).unwrap();
    assert_eq!(out.download().unwrap(), vec![18.0; 4]);
}
