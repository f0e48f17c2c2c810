trait Shape {
    fn area(&self) -> f32;
}

#[derive(Clone, Copy)]
struct Circle {
    r: f32,
}

fn measure<S: Shape>(s: S) -> f32 {
    s.area()
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = measure(Circle { r: 1.0 });
}
