#[kernel]
pub fn nudge<T: Num>(x: &mut [T]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = x[i] + T::EPSILON;
    }
}
