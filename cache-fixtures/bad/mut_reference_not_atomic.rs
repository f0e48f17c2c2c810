#[kernel]
pub fn k(out: &mut [f32]) {
    let x = 1.0f32;
    let r = &mut x;
    *r += 1.0;
    out[0] = x;
}
