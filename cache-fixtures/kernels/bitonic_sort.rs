// Bitonic sort of each block's 64 keys in shared memory (ascending), with XOR partners.
const N: usize = 64;

#[kernel]
pub fn bitonic_sort_blocks(keys: &mut [u32]) {
    let s = shared_array::<u32, N>();
    let t = thread_idx_x() as usize;
    let base = block_idx_x() as usize * N;
    s[t] = if base + t < keys.len() { keys[base + t] } else { u32::MAX };
    sync_threads();
    let mut k = 2;
    while k <= N {
        let mut j = k >> 1;
        while j > 0 {
            let p = t ^ j;
            if p > t {
                let ascending = (t & k) == 0;
                let a = s[t];
                let b = s[p];
                if (a > b) == ascending {
                    s[t] = b;
                    s[p] = a;
                }
            }
            sync_threads();
            j >>= 1;
        }
        k <<= 1;
    }
    if base + t < keys.len() {
        keys[base + t] = s[t];
    }
}
