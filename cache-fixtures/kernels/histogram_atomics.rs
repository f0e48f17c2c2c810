// Histograms with contended atomics: many threads hit few bins.
#[kernel]
pub fn histogram_u32(values: &[u32], bins: &mut [u32]) {
    let i = global_id_x();
    if i < values.len() {
        let b = (values[i] as usize) % bins.len();
        atomic_add(&mut bins[b], 1);
    }
}

// Weighted histogram in i64 and f64 at once; negative values go to bin 0.
#[kernel]
pub fn histogram_weighted(values: &[i32], weights: &[f64], counts: &mut [i64], sums: &mut [f64]) {
    let i = global_id_x();
    if i < values.len() {
        let v = values[i];
        let b = if v < 0 { 0 } else { (v as usize % (counts.len() - 1)) + 1 };
        atomic_add(&mut counts[b], 1i64);
        atomic_add(&mut sums[b], weights[i]);
    }
}

// Block-private histogram in shared memory, merged with one atomic per bin and block.
#[kernel]
pub fn histogram_shared(values: &[u32], bins: &mut [u64]) {
    let local = shared_array::<u64, 16>();
    let t = thread_idx_x() as usize;
    if t < 16 {
        local[t] = 0;
    }
    sync_threads();
    let i = global_id_x();
    if i < values.len() {
        atomic_add(&mut local[(values[i] & 15) as usize], 1);
    }
    sync_threads();
    if t < 16 && local[t] != 0 {
        atomic_add(&mut bins[t], local[t]);
    }
}
