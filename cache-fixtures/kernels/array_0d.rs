// 0-d arrays: a[[]] reads and writes the single element.
#[kernel]
pub fn scale_by_0d(factor: &Array<f32, 0>, x: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] *= factor[[]];
    }
}

#[kernel]
pub fn count_into_0d(x: &[i32], threshold: &Array<i32, 0>, count: &mut Array<u64, 0>) {
    let i = global_id_x();
    if i < x.len() && x[i] > threshold[[]] {
        atomic_add(&mut count[[]], 1);
    }
}

#[kernel]
pub fn write_0d(value: f64, out: &mut Array<f64, 0>, flag: &mut Array<bool, 0>, n: &mut Array<usize, 0>) {
    if global_id_x() == 0 {
        out[[]] = value * 2.0;
        flag[[]] = value > 0.0;
        n[[]] = out.len();
    }
}
