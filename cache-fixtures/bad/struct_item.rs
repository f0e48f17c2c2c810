struct Point {
    x: f32,
    y: f32,
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
