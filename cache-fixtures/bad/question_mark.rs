fn get(a: &[f32]) -> f32 {
    a[0]?
}

#[kernel]
pub fn k(a: &[f32], out: &mut [f32]) {
    out[0] = get(a);
}
