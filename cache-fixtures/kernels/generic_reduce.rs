//! Generic reductions: a block sum in shared memory of the element type (`shared_array::<T,
//! N>`), a block maximum starting from `T::MIN`, and a mean of squares over any float type.

const BLOCK: usize = 128;

/// One sum per block, reduced as a tree in shared memory.
#[kernel]
pub fn block_sum<T: Num>(x: &[T], sums: &mut [T]) {
    let tile = shared_array::<T, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { T::ZERO };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] = tile[t] + tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        sums[block_idx_x() as usize] = tile[0];
    }
}

/// One maximum per block; threads past the end contribute `T::MIN`.
#[kernel]
pub fn block_max<T: Num>(x: &[T], maxima: &mut [T]) {
    let tile = shared_array::<T, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { T::MIN };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] = tile[t].max(tile[t + stride]);
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        maxima[block_idx_x() as usize] = tile[0];
    }
}

/// Each thread sums the squares of a strided slice of `x` (a grid-stride loop), then scales.
#[kernel]
pub fn mean_square<T: Float>(x: &[T], partial: &mut [T]) {
    let i = global_id_x();
    let threads = (grid_dim_x() * block_dim_x()) as usize;
    if i < partial.len() {
        let mut acc = T::ZERO;
        let mut k = i;
        while k < x.len() {
            acc += x[k] * x[k];
            k += threads;
        }
        partial[i] = acc / (x.len() as T);
    }
}
