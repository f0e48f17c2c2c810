#[kernel]
pub fn scale<T: Real>(x: &mut [T], by: T) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = x[i] * by;
    }
}
