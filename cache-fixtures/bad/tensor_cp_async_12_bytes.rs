#[kernel]
pub fn k(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<f32, 256>();
    cp_async::<12>(&mut tile[0], &x[0]);
    out[0] = tile[0];
}
