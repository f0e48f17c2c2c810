//! Dot products with a wider accumulator: elements of type `T`, products summed in `A` in
//! shared memory, one partial sum per block (`dot::<i8, i32>` for quantised vectors,
//! `dot::<f16, f32>` for mixed precision, `dot::<f32, f64>`).

const BLOCK: usize = 64;

#[kernel]
pub fn dot<T: Num, A: Num>(x: &[T], y: &[T], partial: &mut [A]) {
    let tile = shared_array::<A, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { (x[i] as A) * (y[i] as A) } else { A::ZERO };
    sync_threads();
    let mut s = BLOCK / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        partial[block_idx_x() as usize] = tile[0];
    }
}
