#[kernel]
pub fn k(x: &mut [f64]) {
    let i = global_id_x();
    x[i] = shfl_up_sync(0xffff_ffff, x[i], 8, 8);
}
