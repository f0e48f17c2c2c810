//! Generic BLAS-1 over element types: axpy over any float type, scaling and an elementwise sum
//! over any number type. A launch picks the instance from its argument types (`axpy` with
//! `f64` arrays runs `axpy::<f64>`).

#[kernel]
pub fn axpy<T: Float>(a: T, x: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

#[kernel]
pub fn scale<T: Num>(x: &mut [T], by: T) {
    let i = global_id_x();
    if i < x.len() {
        x[i] *= by;
    }
}

#[kernel]
pub fn add_into<T: Num>(a: &[T], b: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] + b[i];
    }
}
