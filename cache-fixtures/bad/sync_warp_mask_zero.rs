const NONE: u32 = 0;

#[kernel]
pub fn k(x: &mut [u32]) {
    sync_warp(NONE);
    x[0] = 1;
}
