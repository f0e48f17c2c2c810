#[kernel]
pub fn k(x: &[f32], y: &[f32]) {
    cp_async::<16>(&mut x[0], &y[0]);
}
