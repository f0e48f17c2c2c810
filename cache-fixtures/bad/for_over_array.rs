#[kernel]
pub fn k(x: &[f32], out: &mut [f32]) {
    let mut s = 0.0;
    for (i, v) in x.iter() {
        s += v * i as f32;
    }
    out[0] = s;
}
