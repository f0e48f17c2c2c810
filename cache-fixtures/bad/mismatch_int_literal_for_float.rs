#[kernel]
pub fn k(out: &mut [f32]) {
    let x: f32 = 1;
    out[0] = x;
}
