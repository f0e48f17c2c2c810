#[kernel]
pub fn k(out: &mut [f32]) {
    let total = 0.0;
    out[0] = totl;
}
