#[kernel]
pub fn k(out: &mut [f32]) {
    let tile = shared_array::<f32, 256>();
    let w = ldmatrix_x2_trans(&tile[0]);
    out[0] = w[0];
}
