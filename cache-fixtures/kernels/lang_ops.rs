// Operator traits of `core::ops` on the crate's types: `Add`, `Sub`, `Mul` (with a scalar
// right-hand side too), `Neg`, the `*Assign` forms, `Index`, and `PartialEq`/`PartialOrd`
// written and derived, on a generic struct with a generic `impl`.

use core::ops::{Add, AddAssign, Index, Mul, Neg, Sub};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct Vec2<T> {
    pub x: T,
    pub y: T,
}

impl<T: Add<Output = T> + Copy> Add for Vec2<T> {
    type Output = Vec2<T>;
    fn add(self, o: Vec2<T>) -> Vec2<T> {
        Vec2 { x: self.x + o.x, y: self.y + o.y }
    }
}

impl<T> Sub for Vec2<T>
where
    T: Sub<Output = T> + Copy,
{
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Vec2 { x: self.x - o.x, y: self.y - o.y }
    }
}

impl Mul<f32> for Vec2<f32> {
    type Output = Vec2<f32>;
    fn mul(self, k: f32) -> Vec2<f32> {
        Vec2 { x: self.x * k, y: self.y * k }
    }
}

impl Mul<Vec2<f32>> for f32 {
    type Output = Vec2<f32>;
    fn mul(self, v: Vec2<f32>) -> Vec2<f32> {
        v * self
    }
}

impl<T: Neg<Output = T>> Neg for Vec2<T> {
    type Output = Vec2<T>;
    fn neg(self) -> Vec2<T> {
        Vec2 { x: -self.x, y: -self.y }
    }
}

impl<T: AddAssign> AddAssign for Vec2<T> {
    fn add_assign(&mut self, o: Self) {
        self.x += o.x;
        self.y += o.y;
    }
}

impl<T: Copy + Mul<Output = T> + Add<Output = T>> Vec2<T> {
    pub fn new(x: T, y: T) -> Self {
        Vec2 { x, y }
    }
    pub fn dot(&self, o: &Vec2<T>) -> T {
        self.x * o.x + self.y * o.y
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Complex {
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

/// A magnitude that compares by its absolute value (`PartialEq` and `PartialOrd` written).
#[derive(Clone, Copy)]
struct Mag(f32);

impl PartialEq for Mag {
    fn eq(&self, other: &Mag) -> bool {
        self.0.abs() == other.0.abs()
    }
}

impl PartialOrd for Mag {
    fn partial_cmp(&self, other: &Mag) -> Option<Ordering> {
        self.0.abs().partial_cmp(&other.0.abs())
    }
}

struct Window {
    v: [f32; 4],
}

impl Index<usize> for Window {
    type Output = f32;
    fn index(&self, i: usize) -> &f32 {
        &self.v[i % 4]
    }
}

fn sum_all<T: Add<Output = T> + Copy + Default>(xs: [T; 3]) -> T {
    let mut s = T::default();
    for x in xs {
        s = s + x;
    }
    s
}

#[kernel]
pub fn vectors(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let a = Vec2::new(x[i], 1.5);
        let b = Vec2 { x: 0.25, y: x[i] };
        let mut c = a + b * 2.0 - -a;
        c += Vec2::new(1.0, -1.0);
        let d = 0.5 * c;
        let bigger = if a > b { 1.0 } else { 0.0 };
        let same = if a == a && a != b { 10.0 } else { 0.0 };
        out[i] = d.dot(&c) + bigger + same + sum_all([a, b, c]).x + Vec2::<f32>::default().y;
    }
}

#[kernel]
pub fn ints(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let a: Vec2<i32> = Vec2::new(x[i], 3);
        let b = Vec2 { x: 2, y: x[i] };
        let s = a + b - Vec2 { x: 1, y: 1 };
        let mut t = -s;
        t += a;
        out[i] = t.dot(&b) + sum_all([1, x[i], 2]) + if a < b { 100 } else { 0 };
    }
}

#[kernel]
pub fn mandelbrot(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let c = Complex { re: x[i] * 0.5, im: 0.25 };
        let mut z = Complex { re: 0.0, im: 0.0 };
        let mut n = 0;
        while n < 64 && z.norm2() <= 4.0 {
            z = z * z + c;
            n += 1;
        }
        out[i] = n as f32;
    }
}

#[kernel]
pub fn magnitudes(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let a = Mag(x[i]);
        let b = Mag(-x[(i + 1) % x.len()]);
        let w = Window { v: [x[i], 1.0, 2.0, 3.0] };
        let mut r = w[i] + w[5];
        if a < b {
            r += 100.0;
        }
        if a <= b {
            r += 200.0;
        }
        if a == b {
            r += 400.0;
        }
        if a >= Mag(1.0) {
            r += 800.0;
        }
        out[i] = r;
    }
}
