#[kernel]
pub fn k(counts: &mut [i32]) {
    atomic_inc(&mut counts[0], 10);
}
