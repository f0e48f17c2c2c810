#[kernel]
pub fn k(x: &mut [u32]) {
    let i = global_id_x();
    x[i] = shfl_down_sync(0, x[i], 1);
}
