#[kernel]
pub fn k(out: &mut [f32]) {
    let pair = (1.0, 2.0);
    out[0] = 1.0;
}
