// Traits as Rust has them: declarations with required and provided methods, associated
// functions and constants, `impl Trait for` structs, unit structs, enums and primitive types,
// bounds on generic functions and `where` clauses, calls by method syntax, by `Trait::f(x)`
// and by `T::f()`, supertraits.

trait Shape {
    const SIDES: u32;
    fn area(&self) -> f32;
    fn name_len(&self) -> u32 {
        Self::SIDES * 2
    }
    fn scaled_area(&self, k: f32) -> f32 {
        self.area() * k * k
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
    const SIDES: u32 = 4;
    fn area(&self) -> f32 {
        self.side * self.side
    }
}

impl Shape for Circle {
    const SIDES: u32 = 0;
    fn area(&self) -> f32 {
        3.0 * self.r * self.r
    }
    fn scaled_area(&self, k: f32) -> f32 {
        self.area() * k
    }
}

fn total<S: Shape, T>(a: S, b: T) -> f32
where
    T: Shape,
{
    a.area() + b.scaled_area(2.0) + Shape::area(&a) + (S::SIDES + b.name_len()) as f32
}

trait Activation {
    fn apply(&self, x: f32) -> f32;
}

struct Relu;

struct Leaky {
    slope: f32,
}

impl Activation for Relu {
    fn apply(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { 0.0 }
    }
}

impl Activation for Leaky {
    fn apply(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { self.slope * x }
    }
}

fn layer<A: Activation>(act: &A, x: f32, w: f32) -> f32 {
    act.apply(x * w + 0.5)
}

trait Zero {
    fn zero() -> Self;
}

impl Zero for f32 {
    fn zero() -> f32 {
        0.0
    }
}

impl Zero for i32 {
    fn zero() -> i32 {
        0
    }
}

trait Double: Copy {
    fn double(self) -> Self;
}

impl Double for f32 {
    fn double(self) -> f32 {
        self * 2.0
    }
}

impl Double for i32 {
    fn double(self) -> i32 {
        self + self
    }
}

fn sum_doubled<T: Zero + Double + std::ops::Add<Output = T>>(a: T, b: T) -> T {
    let mut acc = T::zero();
    acc = acc + a.double();
    acc + Double::double(b)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Relu,
    Leaky,
}

impl Activation for Mode {
    fn apply(&self, x: f32) -> f32 {
        match self {
            Mode::Relu => Relu.apply(x),
            Mode::Leaky => Leaky { slope: 0.25 }.apply(x),
        }
    }
}

#[kernel]
pub fn shapes(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let s = Square { side: x[i] };
        let c = Circle { r: x[i] * 0.5 };
        out[i] = total(s, c) + total(c, s);
    }
}

#[kernel]
pub fn activations(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let mode = if i % 3 == 0 { Mode::Relu } else { Mode::Leaky };
        out[i] = layer(&Relu, x[i], 2.0) + layer(&Leaky { slope: 0.1 }, x[i], -1.5) + mode.apply(x[i]);
    }
}

#[kernel]
pub fn zeros_and_doubles(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let f = sum_doubled(x[i] as f32 * 0.5, 1.25f32);
        out[i] = sum_doubled(x[i], 3) + f as i32 + <i32 as Zero>::zero();
    }
}
