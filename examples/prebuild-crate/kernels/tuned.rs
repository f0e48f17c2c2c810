// A kernel tuned over the elements each thread takes and the block size (`#[tune]`): the build
// step builds both instances (`tuned::axpy_tuned_1`, `tuned::axpy_tuned_2`) and records the
// tuning results it finds in the cache; `tuned::axpy_tuned` (no grid) launches the recorded
// choice for the device and the length's bucket, or tunes among the prebuilt candidates once
// per process where none was recorded.
#[kernel]
#[tune(ITEMS = [1, 2], BLOCK = [64, 128], block = BLOCK, grid = y.len().div_ceil(BLOCK * ITEMS),
       key = y.len().next_power_of_two())]
pub fn axpy_tuned<const ITEMS: usize>(a: f32, x: &[f32], y: &mut [f32]) {
    let first = global_id_x() * ITEMS;
    for k in 0..ITEMS {
        let i = first + k;
        if i < y.len() {
            y[i] = a * x[i] + y[i];
        }
    }
}
