fn wait_for(flags: &[u32], i: usize) {
    while atomic_load(&flags[i]) == 0 {}
}

#[kernel]
pub fn k(flags: &mut [u32]) {
    wait_for(flags, 0);
}
