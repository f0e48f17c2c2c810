// More of the language read against rustc: `Option` combinators and `?` with `checked_*`,
// `|` patterns that bind, traits with associated types and defaulted parameters, blanket
// `impl`s, derived orderings used through `partial_cmp`, generic structs with const
// parameters inferred from annotations, `const fn` constructors.

use core::ops::{Add, Mul};
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Complex<T> {
    re: T,
    im: T,
}
impl<T> Complex<T> {
    pub const fn new(re: T, im: T) -> Self {
        Complex { re, im }
    }
}
impl<T: Add<Output = T>> Add for Complex<T> {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Complex { re: self.re + o.re, im: self.im + o.im }
    }
}
impl<T> Mul for Complex<T>
where
    T: Mul<Output = T> + Add<Output = T> + std::ops::Sub<Output = T> + Copy,
{
    type Output = Complex<T>;
    fn mul(self, o: Complex<T>) -> Complex<T> {
        Complex::new(self.re * o.re - self.im * o.im, self.re * o.im + self.im * o.re)
    }
}
impl Complex<f32> {
    fn norm_sqr(&self) -> f32 {
        self.re * self.re + self.im * self.im
    }
}

struct Matrix<const R: usize, const C: usize> {
    data: [[f32; C]; R],
}
impl<const R: usize, const C: usize> Matrix<R, C> {
    const SIZE: usize = R * C;
    fn zeros() -> Self {
        Matrix { data: [[0.0; C]; R] }
    }
    fn trace(&self) -> f32 {
        let mut t = 0.0;
        for i in 0..R {
            if i < C {
                t += self.data[i][i];
            }
        }
        t
    }
}

struct Stack<T, const N: usize> {
    items: [T; N],
    len: usize,
}
impl<T: Copy + Default, const N: usize> Stack<T, N> {
    fn new() -> Self {
        Stack { items: [T::default(); N], len: 0 }
    }
    fn push(&mut self, v: T) -> bool {
        if self.len < N {
            self.items[self.len] = v;
            self.len += 1;
            true
        } else {
            false
        }
    }
    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            None
        } else {
            self.len -= 1;
            Some(self.items[self.len])
        }
    }
}

#[kernel]
pub fn generic_more(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let c = Complex::new(xs[i], 0.5);
        let mut z: Complex<f32> = Complex::default();
        let mut n = 0u32;
        while n < 50 && z.norm_sqr() < 4.0 {
            z = z * z + c;
            n += 1;
        }
        let mut m = Matrix::<3, 3>::zeros();
        m.data[1][1] = xs[i];
        let mut st: Stack<f32, 4> = Stack::new();
        st.push(1.0);
        st.push(2.0);
        let top = st.pop().unwrap();
        out[i] = n as f32
            + m.trace()
            + Matrix::<2, 3>::SIZE as f32
            + top
            + st.pop().unwrap_or(0.0)
            + st.pop().unwrap_or(9.0);
    }
}

pub trait Shape {
    type Unit;
    fn area(&self) -> f32;
    fn name_id(&self) -> u32 {
        0
    }
}
pub trait Describe {
    fn describe(&self) -> f32;
}
impl<T: Shape> Describe for T {
    fn describe(&self) -> f32 {
        self.area() * 2.0 + self.name_id() as f32
    }
}
#[derive(Clone, Copy, Default, Debug, PartialEq, PartialOrd)]
struct Sq(f32);
impl Shape for Sq {
    type Unit = f32;
    fn area(&self) -> f32 {
        self.0 * self.0
    }
    fn name_id(&self) -> u32 {
        7
    }
}

trait Mix<Rhs = Self> {
    type Output;
    fn mix(self, o: Rhs) -> Self::Output;
}
impl Mix for f32 {
    type Output = f32;
    fn mix(self, o: f32) -> f32 {
        0.5 * (self + o)
    }
}
impl Mix<i32> for f32 {
    type Output = f32;
    fn mix(self, o: i32) -> f32 {
        self + o as f32
    }
}

trait Accumulate<T> {
    fn acc(&mut self, v: T);
}
#[derive(Default)]
struct Sum {
    total: f32,
    n: u32,
}
impl Accumulate<f32> for Sum {
    fn acc(&mut self, v: f32) {
        self.total += v;
        self.n += 1;
    }
}
impl Accumulate<i32> for Sum {
    fn acc(&mut self, v: i32) {
        self.total += v as f32;
        self.n += 1;
    }
}

fn largest<T: PartialOrd + Copy>(a: T, b: T, c: T) -> T {
    let mut m = a;
    if b > m {
        m = b;
    }
    if c > m {
        m = c;
    }
    m
}

fn add_all<T>(xs: &[T; 3]) -> T
where
    T: Add<Output = T> + Copy,
{
    xs[0] + xs[1] + xs[2]
}

#[kernel]
pub fn traits_more(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let s = Sq(xs[i]);
        let mut acc = Sum::default();
        acc.acc(1.5f32);
        acc.acc(2);
        let o = s.partial_cmp(&Sq(1.0));
        let ord = match o {
            Some(std::cmp::Ordering::Less) => 1.0,
            Some(std::cmp::Ordering::Equal) => 2.0,
            _ => 3.0,
        };
        let big = largest(s, Sq(0.5), Sq(-2.0));
        let m = largest(1, 5, 3);
        out[i] = s.describe()
            + 1.0f32.mix(3.0f32)
            + 2.0f32.mix(4)
            + acc.total
            + acc.n as f32
            + ord
            + big.0
            + m as f32
            + add_all(&[1.0, 2.0, xs[i]])
            + if s == Sq(1.0) { 1.0 } else { 0.0 }
            + if s >= Sq(0.0) { 10.0 } else { 0.0 };
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Hit {
    t: f32,
    id: u32,
}

fn intersect(x: f32, r: f32) -> Option<Hit> {
    let d = r * r - x * x;
    if d < 0.0 {
        return None;
    }
    Some(Hit { t: d.sqrt(), id: 1 })
}

fn closest(a: Option<Hit>, b: Option<Hit>) -> Option<Hit> {
    match (a, b) {
        (Some(x), Some(y)) => {
            if x.t < y.t {
                Some(x)
            } else {
                Some(y)
            }
        }
        (Some(x), None) | (None, Some(x)) => Some(x),
        (None, None) => None,
    }
}

fn first_positive(v: &[f32; 4]) -> Option<usize> {
    v.iter().position(|&x| x > 0.0)
}

fn checked(x: i32) -> Option<i32> {
    let a = x.checked_mul(2)?;
    a.checked_add(1)
}

fn safe_div<T>(a: T, b: T) -> Option<T>
where
    T: std::ops::Div<Output = T> + PartialEq + Default + Copy,
{
    if b == T::default() { None } else { Some(a / b) }
}

#[kernel]
pub fn options_more(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let x = xs[i];
        let h = closest(intersect(x, 2.0), intersect(x * 0.5, 1.0));
        let mut r = h.map(|h| h.t).unwrap_or(-1.0);
        r += h.map_or(0.0, |h| h.id as f32);
        r += h.and_then(|h| if h.t > 1.0 { Some(h.t) } else { None }).unwrap_or_default();
        r += h.filter(|h| h.t > 0.5).is_some() as i32 as f32;
        r += intersect(x, 1.0).unwrap_or_else(|| Hit { t: 9.0, id: 0 }).t;
        if let Some(Hit { t, id: 1 }) = h {
            r += t;
        }
        r += safe_div(x, 0.0).unwrap_or(7.0) + safe_div(x, 2.0).unwrap_or(7.0);
        let o: Option<f32> = if x > 0.0 { Some(x) } else { None };
        r += if o.is_none() { 1.0 } else { 0.0 };
        r += o.or(Some(3.0)).unwrap();
        r += o.is_some_and(|v| v > 1.0) as u32 as f32;
        let p = if let Some(v) = o { v } else { 0.0 };
        let Some(q) = o.or(Some(0.25)) else {
            return;
        };
        out[i] = r + p + q;
    }
}
