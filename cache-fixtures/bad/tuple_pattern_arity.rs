#[kernel]
pub fn k(out: &mut [f32]) {
    let (a, b, c) = (1.0f32, 2.0f32);
    out[0] = a;
}
