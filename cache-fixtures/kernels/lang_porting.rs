// Math code as a Rust programmer porting it writes it, from the Rust reference rather than from
// kache's docs (an outside check of issue 31): a trait with an associated const, a default
// method and an associated function, implemented for unit and field structs, for `f32` and
// for an enum; operator traits with `*Assign`, `Neg` and `Index`/`IndexMut` on a const-generic
// struct built with a turbofish literal (`Buf::<{ twice(Cfg::LEN) }> { .. }`); derived
// `PartialOrd`; `where` clauses; `Fn`/`FnMut` closures; `Option` with `?`, `map`, `unwrap_or`.
// tests/it/rust_parity.rs runs both kernels against rustc.

use core::ops::{Add, Mul, Sub, Neg, AddAssign, Index, IndexMut};

trait Activation {
    const NAME_ID: u32;
    fn apply(&self, x: f32) -> f32;
    fn apply_twice(&self, x: f32) -> f32 { self.apply(self.apply(x)) }
    fn new() -> Self;
}
struct Relu;
struct Leaky { slope: f32 }
impl Activation for Relu {
    const NAME_ID: u32 = 1;
    fn apply(&self, x: f32) -> f32 { if x > 0.0 { x } else { 0.0 } }
    fn new() -> Self { Relu }
}
impl Activation for Leaky {
    const NAME_ID: u32 = 2;
    fn apply(&self, x: f32) -> f32 { if x > 0.0 { x } else { self.slope * x } }
    fn new() -> Self { Leaky { slope: 0.1 } }
}
trait Scale { fn scale(self, k: f32) -> f32; }
impl Scale for f32 { fn scale(self, k: f32) -> f32 { self * k } }

#[derive(Clone, Copy, PartialEq, PartialOrd, Debug)]
struct V2 { x: f32, y: f32 }
impl Add for V2 { type Output = V2; fn add(self, o: V2) -> V2 { V2 { x: self.x + o.x, y: self.y + o.y } } }
impl Sub for V2 { type Output = V2; fn sub(self, o: V2) -> V2 { V2 { x: self.x - o.x, y: self.y - o.y } } }
impl Mul<f32> for V2 { type Output = V2; fn mul(self, k: f32) -> V2 { V2 { x: self.x * k, y: self.y * k } } }
impl Neg for V2 { type Output = V2; fn neg(self) -> V2 { V2 { x: -self.x, y: -self.y } } }
impl AddAssign for V2 { fn add_assign(&mut self, o: V2) { self.x += o.x; self.y += o.y; } }

struct Buf<const N: usize> { d: [f32; N] }
impl<const N: usize> Index<usize> for Buf<N> { type Output = f32; fn index(&self, i: usize) -> &f32 { &self.d[i] } }
impl<const N: usize> IndexMut<usize> for Buf<N> { fn index_mut(&mut self, i: usize) -> &mut f32 { &mut self.d[i] } }

struct Range<T> { lo: T, hi: T }
impl<T: PartialOrd + Copy> Range<T> {
    fn clamp(&self, v: T) -> T { if v < self.lo { self.lo } else if v > self.hi { self.hi } else { v } }
}

fn sum3<T: Copy + Add<Output = T>>(a: T, b: T, c: T) -> T { a + b + c }
fn act<A: Activation>(x: f32) -> f32 { let a = A::new(); a.apply_twice(x) + A::NAME_ID as f32 }
fn apply_all<F: Fn(f32) -> f32>(f: F, x: f32) -> f32 { f(x) + f(x + 1.0) }
fn accumulate<F>(mut f: F, n: usize) where F: FnMut(usize) { for i in 0..n { f(i); } }
fn make_adder(k: f32) -> impl Fn(f32) -> f32 { move |x| x + k }

struct Cfg;
impl Cfg { const LEN: usize = 4; }
const fn twice(n: usize) -> usize { n * 2 }

fn first_neg(xs: &[f32]) -> Option<usize> {
    for i in 0..xs.len() { if xs[i] < 0.0 { return Some(i); } }
    None
}
fn add_opt(a: Option<i32>, b: Option<i32>) -> Option<i32> { Some(a? + b?) }

#[kernel]
pub fn k(x: &[f32], out: &mut [f32]) {
    let i = global_id_x() as usize;
    if i >= out.len() { return; }
    let v = x[i];
    let mut r = act::<Relu>(v) + act::<Leaky>(v) + <Relu as Activation>::new().apply(v) + Activation::apply(&Relu, v);
    r += v.scale(2.0);
    let mut p = V2 { x: v, y: 1.0 } + V2 { x: 1.0, y: v } * 2.0 - (-V2 { x: 0.5, y: 0.5 });
    p += V2 { x: 1.0, y: 1.0 };
    let z = V2 { x: 0.0, y: 0.0 };
    if p > z && p != z { r += p.x + p.y; }
    let mut b = Buf::<{ twice(Cfg::LEN) }> { d: [0.0; twice(Cfg::LEN)] };
    b[3] = v; r += b[3];
    let rg = Range { lo: -1.0f32, hi: 1.0 };
    r += rg.clamp(v) + sum3(1.0f32, 2.0, 3.0) + sum3(1u32, 2, 3) as f32;
    let k = 3.0f32;
    let sq = |t: f32| t * t + k;
    r += apply_all(sq, v);
    let mut acc = 0.0f32;
    accumulate(|j| acc += j as f32, 4);
    r += acc;
    match first_neg(x) { Some(j) => r += j as f32, None => r -= 1.0 }
    if let Some(s) = add_opt(Some(1), Some(2)) { r += s as f32; }
    r += add_opt(None, Some(2)).unwrap_or(7) as f32;
    r += first_neg(x).map(|j| j as f32 * 0.5).unwrap_or(0.0);
    if first_neg(x).is_some() { r += 0.25; }
    out[i] = r;
}
trait Zero { fn zero() -> Self; }
impl Zero for f32 { fn zero() -> Self { 0.0 } }
impl Zero for i32 { fn zero() -> Self { 0 } }
#[derive(Clone, Copy, PartialEq)]
enum Mode { A, B(f32) }
trait Weight { fn w(&self) -> f32; }
impl Weight for Mode { fn w(&self) -> f32 { match self { Mode::A => 1.0, Mode::B(x) => *x } } }
#[derive(Clone, Copy)]
struct Pair<T> { a: T, b: T }
impl<T> Pair<T> where T: Copy + core::ops::Add<Output = T> { fn sum(&self) -> T { self.a + self.b } }
struct Tile<const N: usize> { v: [f32; N] }
impl<const N: usize> Tile<N> { fn total(&self) -> f32 { let mut s = 0.0; for i in 0..N { s += self.v[i]; } s } }
fn zsum<T: Zero + Copy + core::ops::Add<Output = T>>(xs: &[T]) -> T { let mut s = T::zero(); for x in xs { s = s + *x; } s }
fn counter() -> u32 { let mut c = 0u32; let mut bump = || c += 2; bump(); bump(); c }

#[kernel]
pub fn k2(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i >= out.len() { return; }
    let arr = [Pair { a: 1, b: 2 }, Pair { a: 3, b: 4 }];
    let tl = Tile::<3> { v: [1.0, 2.0, 3.0] };
    let m = if i % 2 == 0 { Mode::A } else { Mode::B(x[i]) };
    let mut r = zsum(x) + zsum::<f32>(x) + m.w() + Weight::w(&Mode::A);
    r += arr[1].sum() as f32 + tl.total() + counter() as f32;
    out[i] = r;
}
