// Uses globals bound at build time: GAIN (a host scalar) and TAPS (a host array).
fn tap(x: &[f32], i: usize, k: usize) -> f32 {
    let j = i + k;
    if j >= 1 && j - 1 < x.len() { x[j - 1] * TAPS[k] } else { 0.0 }
}

#[kernel]
pub fn smooth(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = GAIN * (tap(x, i, 0) + tap(x, i, 1) + tap(x, i, 2));
    }
}

#[kernel]
pub fn histogram(values: &[u32], bins: &mut [u32]) {
    let i = global_id_x();
    if i < values.len() {
        atomic_add(&mut bins[(values[i] as usize) % bins.len()], 1);
    }
}
