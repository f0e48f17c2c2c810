#[kernel]
pub fn k(out: &mut [f32]) {
    let i = thread_idx_x();
    out[i] = 1.0;
}
