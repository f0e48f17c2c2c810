fn apply<F: Fn(f32) -> f32>(f: F, x: f32) -> f32 {
    f(x)
}

#[kernel]
pub fn k(out: &mut [f32]) {
    let add = |a: f32, b: f32| a + b;
    out[0] = apply(add, 1.0);
}
