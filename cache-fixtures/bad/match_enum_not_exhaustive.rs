#[derive(Clone, Copy)]
enum Mode {
    Add,
    Mul,
    Max,
}

fn apply(m: Mode, a: f32, b: f32) -> f32 {
    match m {
        Mode::Add => a + b,
    }
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = apply(Mode::Mul, 1.0, 2.0);
}
