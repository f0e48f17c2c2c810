#[kernel]
pub fn k(out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = 1.0;
}
