// Histogram of byte-sized values with atomics.
#[kernel]
pub fn histogram(values: &[u32], bins: &mut [u32]) {
    let i = global_id_x();
    if i < values.len() {
        let b = (values[i] as usize) % bins.len();
        atomic_add(&mut bins[b], 1);
    }
}
