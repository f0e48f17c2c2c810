#[kernel]
pub fn k(x: &[f32], out: &mut [f32]) {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    out[0] = s;
}
