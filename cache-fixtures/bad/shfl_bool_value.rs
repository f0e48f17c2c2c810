#[kernel]
pub fn k(x: &mut [u32]) {
    let i = global_id_x();
    let b = shfl_sync(0xffff_ffff, x[i] > 0, 0);
    x[i] = b as u32;
}
