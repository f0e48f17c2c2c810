//! Histograms of small integers: 256 bins of `u8` values counted in shared memory and merged
//! with atomics, 16 buckets of `i8` values counted in `u16` counters, and the running maximum
//! of an `i16` signal.

const BINS: usize = 256;

#[kernel]
pub fn histogram_u8(data: &[u8], hist: &mut [u32]) {
    let local = shared_array::<u32, BINS>();
    let t = thread_idx_x() as usize;
    let mut b = t;
    while b < BINS {
        local[b] = 0;
        b += block_dim_x() as usize;
    }
    sync_threads();
    let mut i = global_id_x();
    while i < data.len() {
        atomic_add(&mut local[data[i] as usize], 1);
        i += (grid_dim_x() * block_dim_x()) as usize;
    }
    sync_threads();
    let mut b = t;
    while b < BINS {
        if local[b] != 0 {
            atomic_add(&mut hist[b], local[b]);
        }
        b += block_dim_x() as usize;
    }
}

#[kernel]
pub fn buckets_i8(data: &[i8], hist: &mut [u16]) {
    let i = global_id_x();
    if i < data.len() {
        let bucket = ((data[i] as i16 + 128) >> 4) as usize;
        atomic_add(&mut hist[bucket], 1u16);
    }
}

#[kernel]
pub fn peak_i16(signal: &[i16], peak: &mut [i16], lowest: &mut [i16]) {
    let i = global_id_x();
    if i < signal.len() {
        atomic_max(&mut peak[0], signal[i]);
        atomic_min(&mut lowest[0], signal[i]);
    }
}
