#[kernel]
pub fn k(x: &mut [f32]) {
    let i = global_id_x();
    x[i] = shfl_sync(0xffff_ffff, x[i], 32);
}
