// One device function called on two arguments of different layouts in the same kernel (each
// call must index with its own argument's strides), and atomics on elements of 2-d and 0-d
// arrays of any layout.
fn weighted(a: &Array<f32, 2>) -> f32 {
    let mut s = 0.0;
    for i in 0..a.shape(0) {
        for j in 0..a.shape(1) {
            s += a[[i, j]] * (i * 10 + j) as f32;
        }
    }
    s
}

#[kernel]
pub fn weighted_two_layouts(a: &Array<f32, 2>, b: &Array<f32, 2>, out: &mut [f32]) {
    if global_id_x() == 0 {
        out[0] = weighted(a);
        out[1] = weighted(b);
    }
}

#[kernel]
pub fn atomic_counts_2d(idx: &[usize], a: &mut Array<u32, 2>, last: &mut Array<i32, 0>) {
    let i = global_id_x();
    if i < idx.len() {
        let r = idx[i] % a.shape(0);
        let c = (idx[i] / 7) % a.shape(1);
        atomic_add(&mut a[[r, c]], 1);
        atomic_max(&mut last[[]], i as i32);
    }
}
