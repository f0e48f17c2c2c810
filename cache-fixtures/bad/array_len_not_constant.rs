#[kernel]
pub fn k(out: &mut [f32], n: usize) {
    let s = shared_array::<f32, { n * 2 }>();
    s[0] = 1.0;
    out[0] = s[0];
}
