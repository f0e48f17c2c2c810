// References and iterators as Rust code uses them: `&T` and `&mut T` parameters, `let r = &mut
// place`, `IndexMut`, `match` on `&mut self` binding places, `for` over `iter()`, `iter_mut()`,
// `enumerate()`, `zip()` and reversed ranges, and iterator chains consumed where written.

use std::ops::{Add, AddAssign, Index, IndexMut, Mul, MulAssign, Neg, Sub};

#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3 { x: 0.0, y: 0.0, z: 0.0 };
    pub fn new(x: f32, y: f32, z: f32) -> Self {
        Self { x, y, z }
    }
    pub fn dot(self, o: Self) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    pub fn length(&self) -> f32 {
        self.dot(*self).sqrt()
    }
    pub fn normalize(self) -> Self {
        self * (1.0 / self.length())
    }
    pub fn cross(&self, o: &Vec3) -> Vec3 {
        Vec3::new(self.y * o.z - self.z * o.y, self.z * o.x - self.x * o.z, self.x * o.y - self.y * o.x)
    }
}

impl Add for Vec3 {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl Sub for Vec3 {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl Mul<f32> for Vec3 {
    type Output = Self;
    fn mul(self, k: f32) -> Self {
        Vec3::new(self.x * k, self.y * k, self.z * k)
    }
}
impl Neg for Vec3 {
    type Output = Self;
    fn neg(self) -> Self {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}
impl AddAssign for Vec3 {
    fn add_assign(&mut self, o: Self) {
        self.x += o.x;
        self.y += o.y;
        self.z += o.z;
    }
}
impl MulAssign<f32> for Vec3 {
    fn mul_assign(&mut self, k: f32) {
        self.x *= k;
        self.y *= k;
        self.z *= k;
    }
}
impl Index<usize> for Vec3 {
    type Output = f32;
    fn index(&self, i: usize) -> &f32 {
        match i {
            0 => &self.x,
            1 => &self.y,
            _ => &self.z,
        }
    }
}
impl IndexMut<usize> for Vec3 {
    fn index_mut(&mut self, i: usize) -> &mut f32 {
        match i {
            0 => &mut self.x,
            1 => &mut self.y,
            _ => &mut self.z,
        }
    }
}

fn len(v: &Vec3) -> f32 {
    v.length()
}
fn scale(v: &mut Vec3, k: f32) {
    *v *= k;
}

#[kernel]
pub fn vec3_refs(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let a = Vec3::new(xs[i], 1.0, 2.0);
        let b = Vec3 { x: 0.5, ..Vec3::ZERO };
        let mut c = a.cross(&b) + -a - b * 2.0;
        c += Vec3::default();
        scale(&mut c, 0.5);
        c[1] = 3.0;
        c[2] += 1.0;
        let n = c.normalize();
        out[i] = len(&c) + n[0] + c[1] + if a == b { 1.0 } else { 0.0 };
    }
}

#[derive(Clone, Copy)]
struct P {
    a: f32,
    b: [f32; 3],
}
fn bump(v: &mut f32, k: f32) {
    *v += k;
}
fn opt_inc(o: &mut Option<f32>) {
    if let Some(x) = o {
        *x += 1.0;
    }
}
#[kernel]
pub fn places(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut x = xs[i];
        let r = &mut x;
        *r += 2.0;
        bump(r, 1.0);
        let mut p = P { a: 1.0, b: [1.0, 2.0, 3.0] };
        let mut j = 1;
        let e = &mut p.b[j];
        j += 1;
        *e *= 10.0;
        let pa = &mut p.a;
        *pa = *pa + x;
        let mut o = Some(x);
        opt_inc(&mut o);
        if let Some(v) = &mut o {
            *v *= 2.0;
        }
        let mut arr = [1.0f32, 2.0, 3.0];

        let w = &mut out[i];
        *w = x + p.a + p.b[1] + o.unwrap() + arr[0] + j as f32;
    }
}

#[kernel]
pub fn for_loops(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let mut arr = [1.0f32, 2.0, 3.0, xs[i]];
        for v in arr.iter_mut() {
            *v += 1.0;
        }
        for v in &mut arr {
            *v *= 2.0;
        }
        let mut s = 0.0;
        for x in arr.iter() {
            s += *x;
        }
        for &x in &arr {
            s += x;
        }
        for (j, x) in arr.iter().enumerate() {
            s += j as f32 * x;
        }
        for (j, x) in arr.iter_mut().enumerate() {
            *x += j as f32;
        }
        let w = [0.5f32, 0.25, 0.125];
        for (a, b) in arr.iter().zip(w.iter()) {
            s += a * b;
        }
        for j in (0..4).rev() {
            s = s * 0.5 + arr[j];
        }
        for j in (1..=3).rev() {
            s -= j as f32;
        }
        let mut c = 0.0;
        for x in xs {
            c += x;
        }
        for (j, x) in xs.iter().enumerate() {
            if j < 3 {
                c += *x;
            }
        }
        out[i] = s + c;
    }
}

#[kernel]
pub fn chains(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let a = [xs[i], 1.0, -2.0, 3.5];
        let s: f32 = a.iter().sum();
        let sq: f32 = a.iter().map(|x| x * x).sum();
        let n = a.iter().filter(|&&x| x > 0.0).count();
        let m = a.iter().fold(f32::MIN, |m, &x| m.max(x));
        let m2 = a.iter().copied().fold(f32::MAX, f32::min);
        let any = a.iter().any(|x| *x > 3.0);
        let all = a.iter().all(|x| x.abs() < 10.0);
        let pos = a.iter().position(|&x| x < 0.0).unwrap_or(9);
        let r: i32 = (0..10).map(|k| k * k).sum();
        let r2: u32 = (1..=4).rev().map(|k: u32| k * 2).take(3).sum();
        let e: f32 = a.iter().enumerate().map(|(j, x)| j as f32 * x).sum();
        let z: f32 = a.iter().zip(a.iter()).map(|(p, q)| p * q).sum();
        let big = (0..4).filter(|j| j % 2 == 0).max().unwrap_or(0);
        let f = a.iter().find(|&&x| x > 1.0).copied().unwrap_or(0.0);
        let mut t = 0.0;
        a.iter().for_each(|x| t += x);
        let st: usize = (0..20).step_by(5).sum();
        let sk: f32 = a.iter().skip(2).sum();
        out[i] = s
            + sq
            + n as f32
            + m
            + m2
            + any as i32 as f32
            + all as i32 as f32
            + pos as f32
            + r as f32
            + r2 as f32
            + e
            + z
            + big as f32
            + f
            + t
            + st as f32
            + sk;
    }
}

/// Array references chosen at run time: by `if` (a parameter or the output, read), by `match`,
/// by a `loop`'s `break` value.
#[kernel]
pub fn chosen_slices(xs: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = xs[(i + 7) % xs.len()];
        let a: &[f32] = if i % 2 == 0 { xs } else { out };
        let b = match i % 3 {
            0 => xs,
            1 => a,
            _ => xs,
        };
        let mut k = 0;
        let c = loop {
            k += 1;
            if k > i % 4 {
                break if k % 2 == 0 { b } else { a };
            }
        };
        let v = a[i] + 2.0 * b[i] + 4.0 * c[i] + c.len() as f32;
        out[i] = v;
    }
}
