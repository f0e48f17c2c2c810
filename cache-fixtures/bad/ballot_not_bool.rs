#[kernel]
pub fn k(x: &mut [u32]) {
    let i = global_id_x();
    x[i] = ballot_sync(0xffff_ffff, x[i]);
}
