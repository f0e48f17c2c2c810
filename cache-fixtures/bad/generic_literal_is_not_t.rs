#[kernel]
pub fn bump<T: Float>(x: &mut [T]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = x[i] + 1.0;
    }
}
