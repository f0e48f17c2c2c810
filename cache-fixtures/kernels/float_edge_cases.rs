// Float methods at special values: NaN, infinities, signed zeros, halves, and the largest
// values below one half (`round` must not round them up).
#[kernel]
pub fn float_edges(x: &[f32], out: &mut Array<f32, 2>) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        out[[i, 0]] = v.min(1.0);
        out[[i, 1]] = v.max(1.0);
        out[[i, 2]] = v.round();
        out[[i, 3]] = v.abs();
        out[[i, 4]] = v.hypot(3.0);
        out[[i, 5]] = v.floor();
        out[[i, 6]] = v.sqrt();
        out[[i, 7]] = -v;
        out[[i, 8]] = v.ceil();
        out[[i, 9]] = v.trunc();
    }
}

#[kernel]
pub fn float_edges_f64(x: &[f64], out: &mut Array<f64, 2>) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        out[[i, 0]] = v.min(1.0);
        out[[i, 1]] = v.max(1.0);
        out[[i, 2]] = v.round();
        out[[i, 3]] = v.abs();
        out[[i, 4]] = v.sqrt();
        out[[i, 5]] = v.floor() + v.ceil();
        out[[i, 6]] = v * 0.0;
        out[[i, 7]] = 1.0 / v;
    }
}
