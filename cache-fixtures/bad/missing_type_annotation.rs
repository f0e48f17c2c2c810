#[kernel]
pub fn k(out: &mut [f32]) {
    let x;
    out[0] = 1.0;
}
