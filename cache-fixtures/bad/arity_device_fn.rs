fn add(a: f32, b: f32) -> f32 {
    a + b
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = add(1.0);
}
