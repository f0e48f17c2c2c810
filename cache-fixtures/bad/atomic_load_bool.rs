#[kernel]
pub fn k(flags: &mut [bool], out: &mut [u32]) {
    if atomic_load(&flags[0]) {
        out[0] = 1;
    }
}
