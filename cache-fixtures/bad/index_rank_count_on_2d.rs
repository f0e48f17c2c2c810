#[kernel]
pub fn k(a: &Array<f32, 2>, out: &mut [f32]) {
    let i = global_id_x();
    out[i] = a[[i]];
}
