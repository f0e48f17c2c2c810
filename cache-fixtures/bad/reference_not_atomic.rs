#[kernel]
pub fn k(out: &mut [f32]) {
    let first = &out[0];
    out[1] = 2.0;
}
