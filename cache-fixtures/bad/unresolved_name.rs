#[kernel]
pub fn k(out: &mut [f32]) {
    let i = global_id_x();
    out[i] = scale * 2.0;
}
