#[kernel]
pub fn k(input: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    input[i] = out[i];
}
