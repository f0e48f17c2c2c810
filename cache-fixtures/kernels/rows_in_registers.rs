//! A row held in registers, the speed suite's softmax shape made small: each thread keeps
//! ITEMS elements of its block's row in a fixed-size array, read and written by loops over
//! constants that the GPU code unrolls whole. On rows shorter than BLOCK * ITEMS a guard keeps
//! every access in bounds and the checked copies of those loops run (in checked code they work
//! on their own copy of the array); a block past the last row faults at its first read.

const BLOCK: usize = 32;
const ITEMS: usize = 8;

#[kernel]
pub fn scale_rows(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let row = block_idx_x() as usize;
    let t = thread_idx_x() as usize;
    let cols = x.shape(1);
    let mut v = [0.0f32; ITEMS];
    for k in 0..ITEMS {
        let j = t + k * BLOCK;
        if j < cols {
            v[k] = x[[row, j]];
        }
    }
    // The largest magnitude among this thread's elements.
    let mut m = 0.0f32;
    for k in 0..ITEMS {
        m = m.max(v[k].abs());
    }
    for k in 0..ITEMS {
        let j = t + k * BLOCK;
        if j < cols {
            y[[row, j]] = v[k] / (1.0 + m) + k as f32;
        }
    }
}
