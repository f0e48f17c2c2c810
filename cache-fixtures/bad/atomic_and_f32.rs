#[kernel]
pub fn k(x: &mut [f32]) {
    atomic_and(&mut x[0], 1.0);
}
