#[kernel]
pub fn k(out: &mut [f32]) {
    let first = &mut out[0];
}
