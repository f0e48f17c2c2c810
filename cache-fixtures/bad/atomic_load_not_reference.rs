#[kernel]
pub fn k(ready: &mut [u32], out: &mut [u32]) {
    out[0] = atomic_load(ready[0]);
}
