#[kernel]
pub fn k(x: &mut [i64]) {
    let i = global_id_x();
    x[i] = shfl_xor_sync(0xffff_ffff, x[i], 1, 12);
}
