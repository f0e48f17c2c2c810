fn half(x: f32) -> f64 {
    x * 0.5
}

#[kernel]
pub fn k(out: &mut [f64]) {
    out[0] = half(1.0);
}
