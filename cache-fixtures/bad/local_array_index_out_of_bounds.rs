#[kernel]
pub fn k(out: &mut [f32]) {
    let t = [1.0, 2.0, 3.0];
    out[0] = t[3];
}
